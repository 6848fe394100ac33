"""The checkers' one reader of ``/proc`` (Linux): command lines and the kernel's flock table.

Read-only and lock-free: an observer that took a lock to learn whether one is held would
race the drivers it watches. The audit asks which inboxes are locked while it reads; the
conformance kit asks whether a workspace is quiet and whom to kill; the test suite's
helpers ask the same questions of the reference.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

PROC = "/proc"


def _raw_command_lines() -> Iterator[tuple[int, bytes]]:
    me = os.getpid()
    for entry in os.listdir(PROC):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"{PROC}/{entry}/cmdline", "rb") as handle:
                yield int(entry), handle.read()
        except OSError:
            continue


def command_lines() -> Iterator[tuple[int, list[bytes]]]:
    """``(pid, argv)`` of every readable process except this one."""
    for pid, raw in _raw_command_lines():
        yield pid, raw.split(b"\0")[:-1]


def command_line(pid: int) -> list[str] | None:
    """The argv of ``pid`` as text, or ``None`` when it cannot be read (gone, not ours)."""
    try:
        with open(f"{PROC}/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    return [w.decode("utf-8", "replace") for w in raw.rstrip(b"\0").split(b"\0")]


def processes_naming(needle: str) -> list[int]:
    """Pids (other than ours) whose command line contains ``needle``."""
    want = needle.encode()
    return [pid for pid, raw in _raw_command_lines() if want in raw]


def file_key(path: Path) -> str:
    """The ``MAJOR:MINOR:INODE`` by which ``/proc/locks`` names a file (``OSError`` if gone)."""
    st = os.stat(path)
    return f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"


def flock_table() -> list[tuple[int | None, str]] | None:
    """``(pid, file key)`` of every ``flock`` held now (not the waiters); ``None`` when
    ``/proc/locks`` cannot be read. A pid the kernel does not show is ``None``."""
    try:
        with open(f"{PROC}/locks", encoding="ascii") as handle:
            table = handle.read()
    except OSError:
        return None
    out: list[tuple[int | None, str]] = []
    for line in table.splitlines():
        parts = line.split()
        if len(parts) > 5 and parts[1] == "FLOCK":
            out.append((int(parts[4]) if parts[4].isdigit() else None, parts[5]))
    return out


def flock_holders(
    path: Path, table: list[tuple[int | None, str]] | None = None
) -> list[int | None]:
    """Who holds an ``flock`` on ``path`` (this process included); ``[]`` when the file or
    the lock table cannot be read. ``table``: one reading of :func:`flock_table` to reuse."""
    try:
        key = file_key(path)
    except OSError:
        return []
    held = flock_table() if table is None else table
    return [pid for pid, k in held or () if k == key]
