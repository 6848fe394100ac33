"""Quiescence of an agent tree, for ``lernie prompt --wait`` (R-CLI-4).

A tree (a root and every agent whose id descends from it) is *settled* when, at
one observation:

- no agent of the tree has its executor lock held (read from ``/proc/locks``, so
  the observer never takes a lock a launched driver is about to take; where that
  file does not show flocks, a writer-style probe with the release rule instead);
- no inbox of the tree holds a deposit that warrants a launch (R-REL-2; a parked
  ``stopped``/``budget-exhausted`` obituary does not).

A transcript with a model call due and no driver (a stop or an exhausted budget
before the call, or a crash) is quiescent: nothing will move it until a touch.

Two settled observations in a row, a poll interval apart, count as quiescent:
that rides over a launch that is in flight (its deposit is still pending) and
the final-response self-launch (nothing pending, and it stops at pin 1). The
observer writes nothing but a scratch directory under ``steps/`` (removed again)
and, in the probing fallback only, launches what its own probe may have deferred.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lernie_ref.core.actor import run
from lernie_ref.core.errors import LockError, WaitTimeout
from lernie_ref.core.frontmatter import deposit_warrants_launch
from lernie_ref.substrate.deposit import pending
from lernie_ref.substrate.launcher import Launcher
from lernie_ref.substrate.transcript import load
from lernie_ref.substrate.workspace import Workspace

PROC_LOCKS = Path("/proc/locks")
POLL_S = 0.05




@dataclass(frozen=True)
class TreeState:
    running: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)

    @property
    def settled(self) -> bool:
        return not (self.running or self.pending)

    def describe(self) -> str:
        parts = []
        if self.running:
            parts.append("still running: " + ", ".join(self.running))
        if self.pending:
            parts.append("mail waiting for a driver: " + ", ".join(self.pending))
        return "; ".join(parts) or "settled"


def tree_of(ws: Workspace, root: str) -> list[str]:
    """The root and its descendants (ids extending ``<root>-``), sorted."""
    return [a for a in ws.agent_ids() if a == root or a.startswith(root + "-")]


def held_flocks(path: Path = PROC_LOCKS) -> set[tuple[int, int, int]] | None:
    """``(major, minor, inode)`` of every file with an ``flock`` held; ``None`` if unreadable."""
    try:
        text = path.read_text()
    except OSError:
        return None
    out: set[tuple[int, int, int]] = set()
    for line in text.splitlines():
        fields = line.split()
        if "FLOCK" not in fields:
            continue
        for item in fields:
            parts = item.split(":")
            if len(parts) == 3 and all(parts):
                try:
                    out.add((int(parts[0], 16), int(parts[1], 16), int(parts[2])))
                except ValueError:
                    continue
                break
    return out


def proc_locks_usable(ws: Workspace) -> bool:
    """Does ``/proc/locks`` show this process's own ``flock``? (Checked on a scratch
    directory under ``steps/``, never on an inbox, so no driver is disturbed.)"""
    from lernie_ref.substrate.lock import try_acquire

    scratch = ws.steps_root / f".wait-{os.getpid()}"
    try:
        probe = try_acquire(scratch)
    except LockError:
        return False
    if probe is None:
        return False
    try:
        st = os.fstat(probe.fd)
        held = held_flocks()
        return held is not None and (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) in held
    except OSError:
        return False
    finally:
        probe.release()
        with contextlib.suppress(OSError):
            scratch.rmdir()


def lock_held(
    ws: Workspace, agent: str, held: set[tuple[int, int, int]] | None, launcher: Launcher
) -> bool:
    """Is the agent's executor lock held?

    With ``held`` (from ``/proc/locks``) this only reads. Without it, it probes like a
    writer: a free lock is released at once, and because the probe may have made a
    driver that was just launched find the lock busy and leave, it then completes that
    launch the way the release rule does (R-REL-1, with an empty seen-set).
    """
    inbox = ws.inbox_dir(agent)
    try:
        st = os.stat(inbox)
    except FileNotFoundError:
        return False
    if held is not None:
        return (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) in held
    from lernie_ref.actors.release import release_actor
    from lernie_ref.substrate.lock import try_acquire

    lock = try_acquire(inbox)
    if lock is None:
        return True
    run(release_actor(ws.root, agent, lock, frozenset(), launcher))
    return False


def _warranted(inbox: Path) -> bool:
    for item in pending(inbox):
        try:
            body: str | None = item.path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError):
            body = None
        if deposit_warrants_launch(body):
            return True
    return False


def observe(
    ws: Workspace, root: str, held: set[tuple[int, int, int]] | None, launcher: Launcher
) -> TreeState:
    """One observation of the tree of ``root`` (``held``: see :func:`lock_held`)."""
    running: list[str] = []
    waiting: list[str] = []
    for agent in tree_of(ws, root):
        if lock_held(ws, agent, held, launcher):
            running.append(agent)
            continue
        elif _warranted(ws.inbox_dir(agent)):
            waiting.append(agent)
    return TreeState(running, waiting)


def wait_quiescent(
    ws: Workspace,
    root: str,
    timeout_s: float,
    launcher: Launcher,
    *,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> None:
    """Return once the tree of ``root`` is quiescent; :class:`WaitTimeout` after ``timeout_s``."""
    deadline = monotonic() + timeout_s
    calm = 0
    readable = proc_locks_usable(ws)
    while True:
        state = observe(ws, root, held_flocks() if readable else None, launcher)
        calm = calm + 1 if state.settled else 0
        if calm >= 2:
            return
        if monotonic() >= deadline:
            logs = [
                str(ws.driver_log(a))
                for a in tree_of(ws, root)
                if ws.driver_log(a).is_file() and ws.driver_log(a).stat().st_size
            ]
            hint = f" (driver logs: {', '.join(logs)})" if logs else ""
            raise WaitTimeout(
                f"timed out after {timeout_s:g}s waiting for the agents of {root} to settle: "
                + state.describe()
                + hint
            )
        sleep(POLL_S)


def final_response(ws: Workspace, agent: str) -> str | None:
    """The text of the agent's newest terminal response (``None``: none yet, or silent)."""
    from lernie_ref.core.entry import text_of, tool_use_ids

    for entry in reversed(load(ws.worktree(agent))):
        if entry.role == "assistant":
            blocks = entry.blocks()
            if not tool_use_ids(blocks):
                return text_of(blocks)
    return None
