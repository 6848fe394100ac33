"""A public test kit for lernie_ref and for other implementations' test suites.

- :class:`Stepper` drives one protocol actor point by point (points are
  :class:`~lernie_ref.core.vocab.Point` members);
- :class:`RecordingLauncher` starts nothing and records each launch;
- :class:`FixedClock` is a clock that moves only when told;
- :class:`Inline` runs the production hop actor in this process: every launch is queued
  and run later, one hop at a time, and a hop that ran tools is succeeded by the next hop
  adopting the very same lease through ``LERNIE_LOCK_FD`` (the baton without the
  ``execve``), so a test can bound the number of hops and patch protocol functions;
- :func:`poll` waits, generously, for a condition another process makes true.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from lernie_ref.actors.hop import HopDeps, HopResult, Outcome, hop_actor
from lernie_ref.adapters import ModelAdapter, ScriptedModel
from lernie_ref.core.actor import Stepper, run
from lernie_ref.core.clock import Clock, FixedClock, SystemClock
from lernie_ref.core.vocab import Point
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.launcher import RecordingLauncher
from lernie_ref.substrate.workspace import Workspace

__all__ = ["FixedClock", "Inline", "Point", "RecordingLauncher", "Stepper", "poll"]


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
            env = result.lock.hand_off({})
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


def poll(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    """Wait (generously) for ``predicate``; fails only when it never holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
