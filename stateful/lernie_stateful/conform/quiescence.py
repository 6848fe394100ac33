"""Quiescence seen from outside, for any implementation: no process names the workspace and
no inbox directory is locked (read from ``/proc``, :mod:`lernie_stateful.procfs`).

The kit's one wait. The scenarios, the outcome programs and the flood wait with it on the
implementation they score (its layout names from its adapter); the test suite waits with
it on the reference. It asks nothing of the implementation: the reference's own wait
(``lernie prompt --wait``, R-CLI-4) judges one agent tree from the reference's own records,
which the kit must not import.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from lernie_stateful import procfs
from lernie_stateful.audit.layout import Layout

QUIESCENCE_TIMEOUT = 60.0
POLL_S = 0.05


class Failed(Exception):
    """One difference between what the implementation did and what the scenario expects."""


def locked_inboxes(inbox_root: Path) -> list[str]:
    """The inbox directories under ``inbox_root`` some process holds an ``flock`` on."""
    try:
        names = os.listdir(inbox_root)
    except OSError:
        return []
    table = procfs.flock_table()
    if table is None:
        return []
    return [name for name in names if procfs.flock_holders(inbox_root / name, table)]


def wait_quiescent(ws: Path, layout: Layout | None = None,
                   timeout: float = QUIESCENCE_TIMEOUT) -> None:
    """Twice in a row, a poll apart: no process names the workspace, no inbox lock is held
    (:class:`Failed` after ``timeout`` seconds). Two polls, because a driver just spawned can
    still be inside ``execve``, where its command line reads empty."""
    inbox_root = ws / (layout or Layout()).inbox
    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < 2:
        busy = procfs.processes_naming(str(ws)) or locked_inboxes(inbox_root)
        quiet = 0 if busy else quiet + 1
        if busy and time.monotonic() > deadline:
            raise Failed(f"no quiescence after {timeout:.0f}s (still busy: "
                         f"{', '.join(_shown(b, ws) for b in busy)})")
        time.sleep(POLL_S)


def _shown(busy: int | str, ws: Path) -> str:
    """A busy process as its pid and command line, the workspace's path shown as ``<ws>``
    (an inbox lock as the inbox's name)."""
    if isinstance(busy, str):
        return f"inbox {busy} locked"
    words = procfs.command_line(busy)
    if words is None:
        return str(busy)
    line = " ".join(words).replace(str(ws), "<ws>")
    return f"{busy} `{line if len(line) <= 120 else line[:120] + '…'}`"


def kill_naming(ws: Path) -> None:
    """SIGKILL every process naming ``ws`` (a failed case's drivers)."""
    for pid in procfs.processes_naming(str(ws)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
