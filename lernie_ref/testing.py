"""A public test kit for lernie_ref and for other implementations' test suites.

- :class:`Stepper` drives one protocol actor point by point (points are
  :class:`~lernie_ref.core.vocab.Point` members);
- :class:`RecordingLauncher` starts nothing and records each launch;
- :class:`FixedClock` is a clock that moves only when told;
- :class:`Inline` is the one in-process hop runner: it runs the production hop actor in
  this process, a hop that ran tools is succeeded by the next hop adopting the very same
  lease through ``LERNIE_LOCK_FD`` (the baton without the ``execve``), launches are
  queued and run only by :meth:`Inline.settle`, and a chain can be made to die right
  after a chosen point (:meth:`Inline.crash_at`, :meth:`Inline.run_chain`);
  :func:`drive` is one such chain with a fresh runner;
- :func:`parts_installed` is the seam for the real code with a replaced collaborator
  (R-STEP-10): it installs a parts object (:class:`HopParts`, :class:`WriterParts`,
  :class:`SweepParts`, :class:`ToolParts`, :class:`DebtReading`) as the process default
  of its kind, which every actor whose dependencies are built meanwhile takes (how a
  checker builds a deliberately broken ``lernie``, e.g. for a seeded bug, without
  touching the code); a parts object can also be passed explicitly (``HopDeps(parts=...)``,
  ``scan_actor(..., parts=...)``, a writer verb's ``parts=``, ``ToolContext(parts=...)``);
- :func:`poll` is the one polling helper: it waits, generously, for a condition another
  process makes true (a wait for a state, never a timing claim).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from lernie_ref.actors.hop import HopDeps, HopResult, Outcome, hop_actor
from lernie_ref.actors.parts import HopParts
from lernie_ref.actors.sweep import SweepParts
from lernie_ref.actors.tools import ToolParts
from lernie_ref.actors.writer import WriterParts
from lernie_ref.adapters.protocol import ModelAdapter
from lernie_ref.adapters.scripted import ScriptedModel
from lernie_ref.core import parts as _parts
from lernie_ref.core.actor import Passed
from lernie_ref.core.clock import Clock, FixedClock, SystemClock
from lernie_ref.core.debt import DebtReading
from lernie_ref.core.ids import require_agent_id
from lernie_ref.core.stepper import Stepper
from lernie_ref.core.vocab import Point
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.launcher import RecordingLauncher
from lernie_ref.substrate.workspace import Workspace

__all__ = [
    "DebtReading",
    "FixedClock",
    "HopParts",
    "Inline",
    "Point",
    "RecordingLauncher",
    "Stepper",
    "SweepParts",
    "ToolParts",
    "WriterParts",
    "drive",
    "parts_installed",
    "poll",
]

Parts = HopParts | WriterParts | SweepParts | ToolParts | DebtReading
"""The parts objects a test may install (R-STEP-10)."""


@contextlib.contextmanager
def parts_installed(parts: Parts) -> Iterator[Parts]:
    """Inside the block, ``parts`` is this process's default of its kind (R-STEP-10):
    every actor whose dependencies are built without explicit parts meanwhile (a
    ``HopDeps``, a sweep's pass, a writer verb, a tool context; the hops, scans and
    writers the CLI runs, and so its detached drivers, when they enter the same block at
    start-up) calls the replaced collaborators."""
    _parts.install(parts)
    try:
        yield parts
    finally:
        _parts.uninstall(parts)


class Inline:
    """Hops of ``ws`` run in this process with injected model, config and clock.

    ``launcher`` defaults to a fresh :class:`RecordingLauncher` (``self.launcher``);
    setting ``self.stop`` is a SIGTERM as the hop sees it (R-TERM-1); ``self.hops``
    lists the agent of every hop that ran to its end, successors included.
    """

    def __init__(
        self,
        ws: Workspace,
        *,
        model: ModelAdapter | None = None,
        config: Config | None = None,
        clock: Clock | None = None,
        launcher: RecordingLauncher | None = None,
    ) -> None:
        self.ws = ws
        self.launcher = launcher if launcher is not None else RecordingLauncher()
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
        result = self.run_chain(agent)
        assert result is not None
        return result

    def run_chain(
        self, agent: str, die: Callable[[Passed], bool] | None = None
    ) -> HopResult | None:
        """A hop and its successors, each adopting its predecessor's lease (R-LOCK-3).

        With ``die``, the chain dies right after the first point for which it holds: the
        generator is closed, so the lease goes (as at process death) and nothing else is
        written; ``None`` is returned then.
        """
        aid = require_agent_id(agent)  # the harness is an edge (R-ID-9)
        env: dict[str, str] = {}
        while True:
            actor = hop_actor(self.ws, aid, env, self.deps)
            stepper = Stepper(actor)
            while (passed := stepper.step()) is not None:
                if die is not None and die(passed):
                    actor.close()
                    return None
            self.hops.append(agent)
            result = stepper.result
            if result.outcome is not Outcome.TOOLS_RAN:
                return result
            assert result.lock is not None
            env = result.lock.hand_off({})

    def successors(self, agent: str, result: HopResult) -> HopResult:
        """Run the exec'd successor hops of a hop that ran tools, adopting its lease."""
        while result.outcome is Outcome.TOOLS_RAN:
            assert result.lock is not None
            env = result.lock.hand_off({})
            stepper = Stepper(hop_actor(self.ws, require_agent_id(agent), env, self.deps))
            result = stepper.finish()
            self.hops.append(agent)
        return result

    def crash_at(
        self, agent: str, point: str, *, hops_before: int = 0, detail: str | None = None
    ) -> None:
        """Drive ``agent`` and die right after ``point`` in the hop that follows
        ``hops_before`` hops of its chain; ``point`` is one of :class:`Point`'s names and
        ``detail`` narrows it."""
        if point not in Point.ALL:
            raise ValueError(f"{point!r} is not a protocol point (Point.ALL)")
        acquired = 0

        def die(passed: Passed) -> bool:
            nonlocal acquired
            if passed.name == Point.HOP_ACQUIRED:
                acquired += 1
            return (
                acquired == hops_before + 1
                and passed.name == point
                and (detail is None or passed.detail == detail)
            )

        if self.run_chain(agent, die) is not None:
            raise AssertionError(f"the hop chain of {agent} ended before {point!r}")

    def settle(self, max_hops: int = 200) -> bool:
        """Run queued launches until none is left (True) or ``max_hops`` hops ran (False)."""
        while self.launcher.launches:
            if len(self.hops) >= max_hops:
                return False
            _, agent = self.launcher.launches.pop(0)
            self.hop(agent)
        return True


def drive(
    ws: Workspace,
    agent: str,
    launcher: RecordingLauncher | None = None,
    *,
    stop: bool = False,
    budget: int = 100,
) -> HopResult:
    """One hop chain of ``agent`` with a fresh :class:`Inline` (launches are recorded in
    ``launcher``, never run); ``stop`` is a stop requested before it starts."""
    inline = Inline(ws, config=Config(step_budget=budget), launcher=launcher)
    inline.stop = stop
    return inline.hop(agent)


def poll(predicate: Callable[[], bool], what: str = "condition", timeout: float = 120.0) -> None:
    """Wait (generously) for ``predicate``; fails only when it never holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
