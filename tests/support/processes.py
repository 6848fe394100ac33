"""Real processes as the tests see them, read with the checkers' ``/proc`` reader
(:mod:`lernie_stateful.procfs`), and a lock-holding process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from lernie_stateful.procfs import command_lines, processes_naming

from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import poll

__all__ = ["command_lines", "driver_pids", "gone", "processes_naming", "reap", "spawn_holder"]


def driver_pids(ws: Workspace, agent: str) -> list[int]:
    """Pids of ``advance`` processes for exactly ``agent`` in ``ws``."""
    root = str(ws.root).encode()
    return [
        pid
        for pid, argv in command_lines()
        if b"advance" in argv and argv[-1:] == [agent.encode()] and root in argv
    ]


HOLDER_CODE = (
    "import fcntl, os, signal, sys, time\n"
    "if sys.argv[2] == 'ignore': signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
    "if sys.argv[3] == 'lock': fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
    "signal.signal(signal.SIGUSR1, lambda *_: fcntl.flock(fd, fcntl.LOCK_UN))\n"
    "print('ready', flush=True)\n"
    "while True: time.sleep(600)\n"
)


def spawn_holder(
    inbox: Path,
    *,
    lock: bool = True,
    ignore_term: bool = False,
    own_session: bool = True,
    extra_argv: tuple[str, ...] = (),
) -> subprocess.Popen[str]:
    """A real process that opens ``inbox`` (and, with ``lock``, holds its flock) until killed.

    SIGUSR1 makes it release the lock (and live on); ``extra_argv`` lands on its
    command line (``("advance", ws, agent)`` makes it look like a driver).
    """
    inbox.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            HOLDER_CODE,
            str(inbox),
            "ignore" if ignore_term else "term",
            "lock" if lock else "open",
            *extra_argv,
        ],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=own_session,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def reap(proc: subprocess.Popen[str]) -> None:
    """Kill a process a test started (if it still runs), wait for it, close its stdout."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def gone(pid: int) -> bool:
    """The process no longer runs (a zombie awaiting its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def sigkill_driver(ws: Workspace, agent: str) -> int:
    """SIGKILL the one running driver of ``agent`` and wait until it is gone; its pid."""
    (driver,) = driver_pids(ws, agent)
    os.kill(driver, signal.SIGKILL)
    poll(lambda: gone(driver), "the driver to die")
    return driver
