"""An aimed kill: SIGKILL an agent's lock holders the moment a deposit leaves its inbox.

A delivery that moves the deposit with one ``rename`` has nothing to lose at that moment:
the entry is already in the transcript directory. A delivery that copies (read, unlink,
write) has a window between the unlink and the end of the write in which a death loses or
tears the message. The kit cannot see inside another implementation, but it can see the
deposit's name go: the watcher follows the inbox directory with inotify (Linux, through
``ctypes``), learns the deposit names that arrive after it is armed, and when one of them
leaves (deleted or moved away) it reads the holders of the inbox's lock from
``/proc/locks`` and kills them at once. Temporary names (a leading dot) are ignored.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import select
import signal
import struct
import threading
from collections.abc import Callable
from pathlib import Path

IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
_EVENT = struct.Struct("iIII")
_DEPOSIT = re.compile(r"^[^.].*-\d+\.md$")


class WatchError(Exception):
    """The inbox cannot be watched (no inotify, or no such directory)."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


class DeliveryKill:
    """Armed on ``inbox``; calls ``holders()`` and SIGKILLs each pid when a deposit that
    arrived after arming leaves. Fires once. ``stop()`` disarms and joins the thread."""

    def __init__(self, inbox: Path, holders: Callable[[], list[int]]) -> None:
        libc = _libc()
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            raise WatchError(f"inotify_init1: {os.strerror(ctypes.get_errno())}")
        mask = IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM
        if libc.inotify_add_watch(fd, os.fsencode(inbox), mask) < 0:
            err = ctypes.get_errno()
            os.close(fd)
            raise WatchError(f"watch {inbox}: {os.strerror(err)}")
        self._fd = fd
        self._holders = holders
        self._quit_r, self._quit_w = os.pipe()
        self.killed: list[int] = []
        self.deposit = ""
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        arrived: set[str] = set()
        buf = b""
        while True:
            ready, _, _ = select.select([self._fd, self._quit_r], [], [])
            if self._quit_r in ready:
                return
            with contextlib.suppress(BlockingIOError):
                buf += os.read(self._fd, 65536)
            while len(buf) >= _EVENT.size:
                _wd, mask, _cookie, size = _EVENT.unpack_from(buf)
                end = _EVENT.size + size
                if len(buf) < end:
                    break
                name = buf[_EVENT.size:end].rstrip(b"\0").decode("utf-8", "replace")
                buf = buf[end:]
                if not _DEPOSIT.match(name):
                    continue
                if mask & (IN_CREATE | IN_MOVED_TO):
                    arrived.add(name)
                elif mask & (IN_DELETE | IN_MOVED_FROM) and name in arrived:
                    self._fire(name)
                    return

    def _fire(self, name: str) -> None:
        self.deposit = name
        for pid in self._holders():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                self.killed.append(pid)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._quit_w, b"x")
        self._thread.join()
        for fd in (self._fd, self._quit_r, self._quit_w):
            with contextlib.suppress(OSError):
                os.close(fd)
