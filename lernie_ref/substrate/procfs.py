"""The one reader of Linux's process table, ``/proc``: the processes, one process's state,
group, command line, environment, working directory and descriptors, and the kernel's
table of file locks (the project runs on Linux only).

Who reads it: a stop finds the executors that hold the targeted locks and signals them
(:mod:`lernie_ref.operator.stop`, R-STOP-2); ``lernie status`` and ``prompt --wait`` read
which locks are held without taking one (R-STATUS-1); the clearing of stale git lock
files looks for a live ``git`` that may still own them (R-WS-8, R-WS-9); a killed tool
call's leftovers are found by the marks in their environment (R-TOOL-7).

A process may exit, and its pid be reused, between any two reads: every per-process
reader answers ``None`` (or nothing) for a process that is gone or not ours to read, and
each caller decides what that means for it. Only :func:`pids` raises (``OSError``) when
``/proc`` itself cannot be listed. This module imports nothing but ``os`` and the plain
records of the core, so the light paths can use it (R-CLI-5).
"""

from __future__ import annotations

import os

from lernie_ref.core.record import record

PROC = "/proc"


def pids() -> list[int]:
    """Every process's pid (this process's included), in listing order; ``OSError`` when
    ``/proc`` cannot be listed."""
    return [int(name) for name in os.listdir(PROC) if name.isdigit()]


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:  # gone, or another user's
        return None


@record(frozen=True)
class ProcStat:
    """The fields of ``/proc/<pid>/stat`` the readers use."""

    comm: bytes
    """The command name (between the first ``(`` and the last ``)``: it may hold both)."""
    state: str
    """One letter: ``R``, ``S``, ``Z`` (a zombie), ``X`` (dead), …; ``''`` if unreadable."""
    pgid: int | None
    """The process group (field 5); ``None`` when the line does not parse."""

    @property
    def alive(self) -> bool:
        """Not a zombie awaiting its parent's reap, not dead."""
        return self.state not in ("Z", "X")


def parse_stat(data: bytes) -> ProcStat:
    """A ``/proc/<pid>/stat`` line parsed (see :class:`ProcStat`)."""
    comm_end = data.rfind(b")")
    comm = data[data.find(b"(") + 1 : comm_end]
    tail = data[comm_end + 1 :].split()
    state = tail[0][:1].decode("ascii", "replace") if tail else ""
    pgid = int(tail[2]) if len(tail) > 2 and tail[2].isdigit() else None
    return ProcStat(comm, state, pgid)


def pgid_of_stat(stat_text: str) -> int | None:
    """Field 5 of ``/proc/<pid>/stat`` (read after the last ``)``: the comm may hold spaces)."""
    return parse_stat(stat_text.encode("utf-8", "surrogateescape")).pgid


def stat(pid: int) -> ProcStat | None:
    """The process's ``stat``; ``None`` when it is gone or cannot be read."""
    data = _read(f"{PROC}/{pid}/stat")
    return None if data is None else parse_stat(data)


def cmdline(pid: int) -> list[bytes] | None:
    """The process's arguments (``/proc/<pid>/cmdline`` split at NUL; the last item is the
    empty text after the final NUL); ``None`` when it cannot be read."""
    data = _read(f"{PROC}/{pid}/cmdline")
    return None if data is None else data.split(b"\0")


def environ(pid: int) -> list[bytes] | None:
    """The process's environment as ``NAME=value`` items; ``None`` when it cannot be read."""
    data = _read(f"{PROC}/{pid}/environ")
    return None if data is None else data.split(b"\0")


def cwd(pid: int) -> str | None:
    """The process's working directory; ``None`` when it cannot be read."""
    try:
        return os.readlink(f"{PROC}/{pid}/cwd")
    except OSError:
        return None


def fd_targets(pid: int) -> list[tuple[str, str]]:
    """``(fd, what it opens)`` for each descriptor of the process that can be read; none
    for a process that is gone or not ours. Any other failure to list (``OSError``) is
    raised: the caller cannot tell who holds what."""
    fd_dir = f"{PROC}/{pid}/fd"
    try:
        fds = os.listdir(fd_dir)
    except (FileNotFoundError, PermissionError, ProcessLookupError, NotADirectoryError):
        return []
    out: list[tuple[str, str]] = []
    for fd in fds:
        try:
            out.append((fd, os.readlink(f"{fd_dir}/{fd}")))
        except OSError:
            continue
    return out


def fd_lock_lines(pid: int, fd: str) -> list[str] | None:
    """The ``lock:`` lines of ``/proc/<pid>/fdinfo/<fd>``: the locks held through that very
    descriptor; ``None`` when it cannot be read."""
    data = _read(f"{PROC}/{pid}/fdinfo/{fd}")
    if data is None:
        return None
    return [line for line in data.decode("utf-8", "replace").splitlines()
            if line.startswith("lock:")]


@record(frozen=True)
class LockLine:
    """One ``/proc/locks``-style line: ``1: FLOCK  ADVISORY  WRITE 5314 fe:00:2170981 0 EOF``."""

    kind: str
    mode: str
    pid: int
    dev_major: int
    dev_minor: int
    inode: int

    def is_exclusive_flock_on(self, st: os.stat_result) -> bool:
        """An exclusive ``flock`` on the file ``st`` describes."""
        return (
            self.kind == "FLOCK"
            and self.mode == "WRITE"
            and self.inode == st.st_ino
            and (self.dev_major, self.dev_minor) == (os.major(st.st_dev), os.minor(st.st_dev))
        )


def parse_lock_line(text: str) -> LockLine | None:
    """Parse a lock line (with or without the ``lock:`` prefix); ``None`` for waiters and junk."""
    fields = text.split()
    if fields and fields[0] == "lock:":
        fields = fields[1:]
    if len(fields) < 6 or "->" in fields:
        return None
    kind, mode, pid_text, where = fields[1], fields[3], fields[4], fields[5]
    parts = where.split(":")
    if len(parts) != 3:
        return None
    try:
        major, minor, inode = int(parts[0], 16), int(parts[1], 16), int(parts[2])
        return LockLine(kind, mode, int(pid_text), major, minor, inode)
    except ValueError:
        return None


class FlockHolders:
    """The exclusive ``flock`` holders of a lock table, by the file they lock: the table is
    walked once, and each file is then one lookup (``lernie status`` asks for every agent's
    inbox, and the table holds every lock of the machine)."""

    __slots__ = ("_by_file",)

    def __init__(self, table: list[LockLine]) -> None:
        by_file: dict[tuple[int, int, int], list[int]] = {}
        for line in table:
            if line.kind == "FLOCK" and line.mode == "WRITE":
                key = (line.dev_major, line.dev_minor, line.inode)
                by_file.setdefault(key, []).append(line.pid)
        self._by_file = by_file

    def on(self, st: os.stat_result) -> list[int]:
        """The pids of the table's lines that are an exclusive ``flock`` on the file ``st``
        describes (:meth:`LockLine.is_exclusive_flock_on`), in table order."""
        return list(self._by_file.get((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino), ()))


def lock_table() -> list[LockLine] | None:
    """Every lock line of ``/proc/locks`` (one read); ``None`` when it cannot be read."""
    data = _read(f"{PROC}/locks")
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    return [line for line in map(parse_lock_line, text.splitlines()) if line is not None]
