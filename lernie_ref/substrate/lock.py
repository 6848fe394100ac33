"""The executor lock and the exec baton (R-LOCK-1, R-LOCK-2, R-LOCK-3, R-LOCK-4).

The lock is a non-blocking exclusive ``flock`` on a fresh read-only descriptor
of the agent's inbox directory. The lease belongs to the open file description,
so release is an explicit ``LOCK_UN`` before ``close``: a forked child that still
holds a copy of the descriptor (between its fork and its exec) must not keep the
lease alive (bl-7318). Across the ``execve`` of a successor hop the descriptor is
handed on through ``LERNIE_LOCK_FD`` and adopted after a device+inode check.

This module is the only one that calls ``flock``: the baton (hand-off and the
``execve`` of the successor) is a method of :class:`ExecutorLock`, and a probe
elsewhere takes the lock through :func:`try_acquire`.
"""

from __future__ import annotations

import errno
import fcntl
import os

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.errors import (
    AdoptError,
    ContainmentError,
    ExecError,
    LockError,
    debug_quote,
    io_text,
)
from lernie_ref.core.names import LOCK_FD_ENV
from lernie_ref.substrate import guarded

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from types import TracebackType
    from typing import NoReturn

    from lernie_ref.core.ids import AgentId

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


class ExecutorLock:
    """A held lease. :meth:`release` is ``LOCK_UN`` then ``close``; idempotent."""

    def __init__(self, fd: int, path: str | Path) -> None:
        self._fd: int | None = fd
        self._number = fd
        self.path = path
        self.handed_off = False

    @property
    def fd(self) -> int:
        return self._number

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """R-LOCK-2: unlock the description (every copy loses the lease), then close ours.

        A no-op once released, or once the lease was handed to a successor (R-LOCK-3).
        """
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def hand_off(self, env: Mapping[str, str]) -> dict[str, str]:
        """R-LOCK-3: make the lease's fd survive ``execve`` and name it in the successor's env.

        Returns a copy of ``env`` with ``LERNIE_LOCK_FD`` set. From here on the lock is
        handed off: :meth:`release` is a no-op, so the lease stays held until the
        successor adopts it (R-LOCK-4) or the process exits.
        """
        if self._fd is None:
            raise LockError(self.path, "the lease was already released; nothing to hand on")
        os.set_inheritable(self._fd, True)
        self._fd = None
        self.handed_off = True
        out = dict(env)
        out[LOCK_FD_ENV] = str(self._number)
        return out

    def exec_successor(
        self, executable: str, argv: Sequence[str], env: Mapping[str, str]
    ) -> NoReturn:
        """R-LOCK-3: hand the lease on and replace this process with the successor hop.

        The lock is never free between the two hops (I-2). If the hand-off or the
        ``execve`` fails, the lease is released here (unlock, then close) and
        :class:`ExecError` is raised: nobody else would ever release it.
        """
        try:
            successor = self.hand_off(env)
            os.execve(executable, list(argv), successor)
        except OSError as exc:
            self._fd = None
            try:
                fcntl.flock(self._number, fcntl.LOCK_UN)
                os.close(self._number)
            except OSError:
                pass
            raise ExecError(f"exec successor: {io_text(exc)}") from None

    def __enter__(self) -> ExecutorLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"ExecutorLock(fd={self._number}, path={str(self.path)!r}, held={self.held})"


class InboxAt:
    """``<ws>/inbox/<id>`` to be opened from a descriptor of ``<ws>/inbox`` that the caller
    opened through the guarded walk (R-WS-7) and holds: one ``openat(dir_fd, <id>,
    O_DIRECTORY|O_NOFOLLOW)``, the walk's own last step, instead of the walk from the root
    (the sweep probes every agent's lock). ``name`` is an :data:`AgentId`, so one path
    component already (R-ID-9: not checked again). Anything but a directory there takes the
    full walk, so every outcome and error is the walk's."""

    __slots__ = ("dir_fd", "name", "path")

    def __init__(self, dir_fd: int, name: AgentId, path: str | Path) -> None:
        self.dir_fd = dir_fd
        self.name = name
        self.path = path

    def __fspath__(self) -> str:
        return os.fspath(self.path)


def try_acquire(inbox: str | Path | InboxAt) -> ExecutorLock | None:
    """R-LOCK-1: create ``inbox`` if needed and take the lock; ``None`` iff it is busy."""
    fd = -1
    if isinstance(inbox, InboxAt):
        try:
            fd = os.open(inbox.name, guarded.DIR_FLAGS, dir_fd=inbox.dir_fd)
        except OSError:
            fd = -1  # missing, a link, not a directory: the walk decides, as always
        inbox = inbox.path
    if fd < 0:
        try:  # <ws>/inbox/<id>: two real directories below the root (R-WS-7)
            fd = guarded.walk_tail(inbox, 2, create=True).fd
        except OSError as exc:
            raise LockError(inbox, io_text(exc)) from None
    return _flock(fd, inbox)


def try_acquire_present(inbox: str | Path | InboxAt) -> tuple[bool, ExecutorLock | None]:
    """R-LOCK-1 for a prober that creates nothing (the sweep, R-SCAN-6): ``(False, None)``
    when ``inbox`` is not a directory (nobody can hold its lock), else ``(True,`` the answer
    of :func:`try_acquire` ``)``. A directory reached by one ``openat`` from the caller's
    descriptor is locked at once; anything else there takes the check and the full walk."""
    if isinstance(inbox, InboxAt):
        try:
            fd = os.open(inbox.name, guarded.DIR_FLAGS, dir_fd=inbox.dir_fd)
        except FileNotFoundError:
            return False, None
        except OSError:
            fd = -1  # a link, not a directory: as below
        if fd >= 0:
            return True, _flock(fd, inbox.path)
        inbox = inbox.path
    if not os.path.isdir(inbox):
        return False, None
    return True, try_acquire(inbox)


def _flock(fd: int, inbox: str | Path) -> ExecutorLock | None:
    """Take the lock on ``fd`` (closed when the lock is busy or fails)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise LockError(inbox, io_text(exc)) from None
    return ExecutorLock(fd, inbox)


def _parse_i32(raw: str) -> int | None:
    digits = raw[1:] if raw[:1] in ("+", "-") else raw
    if not digits or not all("0" <= c <= "9" for c in digits):
        return None
    value = int(raw)
    return value if I32_MIN <= value <= I32_MAX else None


def adopt(raw: str, inbox: str | Path) -> ExecutorLock | None:
    """R-LOCK-4: adopt the lease whose fd number is ``raw``; ``None`` if the re-flock is busy.

    Validation failures leave the fd open (it may belong to someone else).
    """
    fd = _parse_i32(raw)
    if fd is None:
        raise AdoptError(f"{LOCK_FD_ENV}={debug_quote(raw)} is not a valid fd number")
    try:
        held = os.fstat(fd)
    except OSError as exc:
        raise AdoptError(f"fstat adopted fd {fd}: {io_text(exc)}") from None
    try:
        with guarded.walk_tail(inbox, 2) as real:
            want = os.fstat(real.fd)
    except OSError as exc:
        raise AdoptError(f"stat inbox {inbox}: {io_text(exc)}") from None
    except ContainmentError as exc:
        raise AdoptError(f"stat inbox {inbox}: {exc}") from None
    if (held.st_dev, held.st_ino) != (want.st_dev, want.st_ino):
        raise AdoptError(
            f"adopted fd {fd} is not the inbox directory {inbox} (device/inode mismatch)"
        )
    try:
        os.set_inheritable(fd, False)
    except OSError as exc:
        raise AdoptError(f"restore close-on-exec on adopted fd {fd}: {io_text(exc)}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            os.close(fd)
            return None
        raise AdoptError(f"re-assert flock on adopted fd {fd}: {io_text(exc)}") from None
    return ExecutorLock(fd, inbox)


def take_lease(env: Mapping[str, str], inbox: str | Path) -> ExecutorLock | None:
    """R-LOCK-4: adopt when ``LERNIE_LOCK_FD`` is present (even empty), else try-acquire."""
    if LOCK_FD_ENV in env:
        return adopt(env[LOCK_FD_ENV], inbox)
    return try_acquire(inbox)
