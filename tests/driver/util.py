"""Helpers for the driver tests: an in-process hop runner and transcript readers.

``Inline`` runs the production hop actor in this process with a recording
launcher: every launch is queued and run later, one hop at a time, and a hop
that ran tools is succeeded by the next hop adopting the very same lease through
``LERNIE_LOCK_FD`` (``successor_env`` + ``take_lease``), which is the baton
without the ``execve``. It lets a test monkeypatch protocol functions (the
seeded historic bugs) and bound the number of hops.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from lernie_ref.actors.hop import HopDeps, HopResult, Outcome, hop_actor
from lernie_ref.adapters import ModelAdapter, ScriptedModel
from lernie_ref.core.actor import run
from lernie_ref.core.clock import Clock, SystemClock
from lernie_ref.inbox import RecordingLauncher, pending
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.lock import successor_env, try_acquire
from lernie_ref.substrate.transcript import TranscriptEntry, load
from lernie_ref.substrate.workspace import Workspace


class Inline:
    def __init__(
        self,
        ws: Workspace,
        *,
        model: ModelAdapter | None = None,
        config: Config | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.ws = ws
        self.launcher = RecordingLauncher()
        self.stop = False
        self.hops: list[str] = []
        self.deps = HopDeps(
            model=model or ScriptedModel(),
            launcher=self.launcher,
            clock=clock or SystemClock(),
            config=config or Config(),
            stop_requested=lambda: self.stop,
        )

    def hop(self, agent: str) -> HopResult:
        """One ``lernie advance`` including its exec'd successors (after its existence guard)."""
        self.ws.require_agent(agent, "a hop drives an existing agent")
        result = run(hop_actor(self.ws, agent, {}, self.deps))
        self.hops.append(agent)
        return self.successors(agent, result)

    def successors(self, agent: str, result: HopResult) -> HopResult:
        """Run the exec'd successor hops of a hop that ran tools, adopting its lease."""
        while result.outcome is Outcome.TOOLS_RAN:
            assert result.lock is not None
            env = successor_env(result.lock, {})
            result = run(hop_actor(self.ws, agent, env, self.deps))
            self.hops.append(agent)
        return result

    def settle(self, max_hops: int = 200) -> bool:
        """Run queued launches until none is left (True) or ``max_hops`` hops ran (False)."""
        while self.launcher.launches:
            if len(self.hops) >= max_hops:
                return False
            _, agent = self.launcher.launches.pop(0)
            self.hop(agent)
        return True


def entries(ws: Workspace, agent: str) -> list[TranscriptEntry]:
    return load(ws.worktree(agent))


def names(ws: Workspace, agent: str) -> list[str]:
    return [e.name for e in entries(ws, agent)]


def inbox_names(ws: Workspace, agent: str) -> list[str]:
    return [p.name for p in pending(ws.inbox_dir(agent))]


def subjects(ws: Workspace, agent: str) -> list[str]:
    out = ws.git.run(ws.repo_git, ["log", "--format=%s", f"agents/{agent}"]).stdout
    return out.splitlines()


def lock_is_free(ws: Workspace, agent: str) -> bool:
    lock = try_acquire(ws.inbox_dir(agent))
    if lock is None:
        return False
    lock.release()
    return True


def worktree_clean(ws: Workspace, agent: str) -> bool:
    status = ws.git.run(ws.worktree(agent), ["status", "--porcelain"]).stdout
    return status.strip() == ""


def poll(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    """Wait (generously) for ``predicate``; fails only when it never holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def driver_pids(ws: Workspace, agent: str) -> list[int]:
    """Pids of ``advance`` processes for exactly ``agent`` in ``ws``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[:-1]
        except OSError:
            continue
        if b"advance" in argv and argv[-1:] == [agent.encode()] and str(ws.root).encode() in argv:
            out.append(int(entry))
    return out
