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
from lernie_ref.core.errors import LernieError, LockError, WaitTimeout
from lernie_ref.core.frontmatter import deposit_warrants_launch
from lernie_ref.core.ids import AgentId
from lernie_ref.operator.driverlog import failed_on, last_log_line
from lernie_ref.substrate.deposit import pending
from lernie_ref.substrate.launcher import Launcher
from lernie_ref.substrate.procfs import lock_table
from lernie_ref.substrate.transcript import load
from lernie_ref.substrate.workspace import Workspace

POLL_S = 0.05




@dataclass(frozen=True)
class TreeState:
    running: list[AgentId] = field(default_factory=list)
    pending: list[AgentId] = field(default_factory=list)
    failed: list[AgentId] = field(default_factory=list)
    """Agents with mail whose last driver failed after that mail arrived (:func:`failed_on`):
    nothing will drain it until a touch, so they do not keep the tree busy."""

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


def tree_of(ws: Workspace, root: AgentId) -> list[AgentId]:
    """The root and its descendants (ids extending ``<root>-``), sorted."""
    return [a for a in ws.agent_ids() if a == root or a.startswith(root + "-")]


def held_flocks() -> set[tuple[int, int, int]] | None:
    """``(major, minor, inode)`` of every file with an ``flock`` held; ``None`` if unreadable."""
    table = lock_table()
    if table is None:
        return None
    return {(line.dev_major, line.dev_minor, line.inode) for line in table if line.kind == "FLOCK"}


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
    ws: Workspace, agent: AgentId, held: set[tuple[int, int, int]] | None, launcher: Launcher
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


def _warranted(inbox: Path) -> list[float]:
    """The modification times of the deposits in ``inbox`` that warrant a launch."""
    times: list[float] = []
    for item in pending(inbox):
        try:
            data = item.path.read_bytes()
            when = item.path.stat().st_mtime
        except FileNotFoundError:
            continue
        except OSError:
            data, when = b"\xff", 0.0
        try:
            body: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            body = None
        if deposit_warrants_launch(body):
            times.append(when)
    return times


def observe(
    ws: Workspace, root: AgentId, held: set[tuple[int, int, int]] | None, launcher: Launcher
) -> TreeState:
    """One observation of the tree of ``root`` (``held``: see :func:`lock_held`)."""
    running: list[AgentId] = []
    waiting: list[AgentId] = []
    failed: list[AgentId] = []
    for agent in tree_of(ws, root):
        if lock_held(ws, agent, held, launcher):
            running.append(agent)
            continue
        times = _warranted(ws.inbox_dir(agent))
        if times:
            if failed_on(ws, agent, max(times)) is not None:
                failed.append(agent)
            else:
                waiting.append(agent)
    return TreeState(running, waiting, failed)


def wait_quiescent(
    ws: Workspace,
    root: AgentId,
    timeout_s: float,
    launcher: Launcher,
    *,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
    progress: Callable[[TreeState], None] | None = None,
) -> TreeState:
    """Return the last observation once the tree of ``root`` is quiescent (agents whose
    driver failed on their mail count as quiescent: see :attr:`TreeState.failed`);
    :class:`WaitTimeout` after ``timeout_s``. ``progress`` sees every observation.

    The reference's own wait (``prompt --wait``, R-CLI-4), judged from its records; the
    checkers wait from outside (``lernie_stateful.conform.quiescence``), importing no code."""
    deadline = monotonic() + timeout_s
    calm = 0
    readable = proc_locks_usable(ws)
    while True:
        state = observe(ws, root, held_flocks() if readable else None, launcher)
        if progress is not None:
            progress(state)
        calm = calm + 1 if state.settled else 0
        if calm >= 2:
            return state
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


def final_response(ws: Workspace, agent: AgentId) -> str | None:
    """The text of the agent's newest terminal response (``None``: none yet, or silent)."""
    from lernie_ref.core.entry import text_of, tool_use_ids

    for entry in reversed(load(ws.worktree(agent))):
        if entry.role == "assistant":
            blocks = entry.blocks()
            if not tool_use_ids(blocks):
                return text_of(blocks)
    return None


@dataclass(frozen=True)
class Casualty:
    """An agent of the tree that died or gave up, and why (the driver log's line)."""

    agent: AgentId
    cause: str
    log: Path
    guarded: bool = False
    """The crash-loop guard stopped the scan's revivals of it (R-SCAN-10)."""


def casualties(ws: Workspace, root: AgentId, state: TreeState) -> list[Casualty]:
    """R-LOG-2: the agents of a quiescent tree that died or gave up: mail whose driver
    failed (:attr:`TreeState.failed`), or work due with no driver, no pending mail and no
    stop or budget mark at the tip (died mid-work, R-SCAN-4). Read from disk."""
    from lernie_ref.actors.readings import mark_value, revivals_at, transcript_due
    from lernie_ref.core.sweep import REVIVE_LIMIT, Condition, at_rest_mark, condition_of
    from lernie_ref.core.vocab import MarkKind

    out: list[Casualty] = []
    for agent in tree_of(ws, root):
        log = ws.driver_log(agent)
        if agent in state.failed:
            try:
                tip = ws.branch_tip(agent)
            except LernieError:
                tip = ""
            line = last_log_line(ws, agent) or "its driver failed"
        else:
            if pending(ws.inbox_dir(agent)):
                continue
            try:
                due = transcript_due(ws, agent)
                tip = ws.branch_tip(agent)
                budget = mark_value(ws, MarkKind.BUDGET_EXHAUSTED.value, agent)
                stopped = mark_value(ws, MarkKind.STOPPED.value, agent)
            except LernieError:
                continue
            at_rest = at_rest_mark(tip, budget, stopped)
            condition = condition_of(driven=False, pending_count=0, due=due, budget_at_tip=at_rest)
            if condition is not Condition.DIED_MID_WORK:
                continue
            line = last_log_line(ws, agent) or (
                "its driver ended without a word in its log (killed by a signal?)"
            )
        out.append(Casualty(agent, line, log, revivals_at(ws, agent, tip) >= REVIVE_LIMIT))
    return out


class Progress:
    """What ``--wait`` shows on a terminal while it waits: who is running, how many model
    calls the tree made and the tokens they reported (R-STATUS-4), at most once a second,
    on one line that is rewritten in place."""

    def __init__(self, ws: Workspace, root: AgentId, write: Callable[[str], None]) -> None:
        self._ws = ws
        self._root = root
        self._write = write
        self._tokens: dict[str, int] = {}
        self._last = 0.0
        self._shown = False

    def _count(self) -> tuple[int, int]:
        from lernie_ref.core.frontmatter import parse_entry_name

        calls = 0
        for agent in tree_of(self._ws, self._root):
            folder = self._ws.worktree(agent) / "messages"
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                parsed = parse_entry_name(name)
                if parsed is None or parsed[2] or parsed[1] == "tool":
                    continue
                calls += 1
                key = f"{agent}/{name}"
                if key not in self._tokens:
                    self._tokens[key] = _entry_tokens(folder / name)
        return calls, sum(self._tokens.values())

    def __call__(self, state: TreeState) -> None:
        now = time.monotonic()
        if now - self._last < 1.0:
            return
        self._last = now
        calls, tokens = self._count()
        running = ", ".join(state.running) or "none"
        self._write(
            f"\r\x1b[Kwaiting for {self._root}: running {running}; model calls {calls}; "
            f"tokens {tokens}"
        )
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            self._write("\r\x1b[K")


def _entry_tokens(path: Path) -> int:
    import json

    try:
        parsed: object = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return 0
    usage = parsed.get("usage") if isinstance(parsed, dict) else None
    if not isinstance(usage, dict):
        return 0
    return sum(
        v for k, v in usage.items() if k.endswith("_tokens") and type(v) is int and v > 0
    )
