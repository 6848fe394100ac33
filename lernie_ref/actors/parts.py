"""The replaceable collaborators of a hop: one typed, frozen parts object (R-STEP-10).

A hop's actors call a handful of rule-bearing collaborators (stray recovery, delivery,
the crashed tool window, the release of the lock, the post-release re-read and launch
rule, the terminal marks, the exit protocol's recipient and its probe) through
:class:`HopParts` rather than through module names, so a checker can build a hop with
one collaborator replaced without touching the code: the parts travel in
:class:`lernie_ref.actors.hop.HopDeps` like the clock and the launcher. Production uses
:data:`PRODUCTION`; nothing here reads a flag or the environment.

The process default (:func:`installed_parts`, kept by :mod:`lernie_ref.core.parts` like
every parts object's) is read once when a ``HopDeps`` is built, never per call;
:mod:`lernie_ref.testing` is its only writer, for test builds (a checker's, or the real
CLI started in another process with a bug installed at start-up).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lernie_ref.actors.drain import deliver_actor, recover_strays
from lernie_ref.actors.probe import ProbeOutcome, probe_actor
from lernie_ref.actors.release import owed_launch
from lernie_ref.core.actor import Actor
from lernie_ref.core.debt import DebtReading
from lernie_ref.core.entry import Block
from lernie_ref.core.ids import AgentId
from lernie_ref.core.parts import installed
from lernie_ref.core.vocab import Role
from lernie_ref.core.warrant import unanswered_tail
from lernie_ref.substrate.deposit import Pending, pending
from lernie_ref.substrate.gitrun import GitRunner
from lernie_ref.substrate.launcher import Launcher
from lernie_ref.substrate.lock import ExecutorLock
from lernie_ref.substrate.transcript import recipient
from lernie_ref.substrate.workspace import Workspace


@dataclass(frozen=True)
class HopParts:
    """The collaborators a hop's actors call through; each defaults to production's."""

    recover_strays: Callable[[Path, AgentId, GitRunner], bool] = recover_strays
    """R-DRAIN-2: commit what a crashed delivery left under ``messages/``."""
    deliver_actor: Callable[[Path, AgentId, Pending, GitRunner], Actor[str]] = deliver_actor
    """R-DRAIN-4: move one deposit into the transcript and commit it."""
    unanswered_tail: Callable[[Sequence[tuple[Role, Sequence[Block]]]], list[str]] = (
        unanswered_tail
    )
    """R-STEP-2: the ids of the open tool window."""
    reread: Callable[[Path], list[Pending]] = pending
    """R-REL-1: the post-release inbox listing."""
    owed_launch: Callable[[Sequence[Pending], frozenset[tuple[str, int]]], bool] = owed_launch
    """R-REL-1: whether that listing owes a launch."""
    release_lock: Callable[[ExecutorLock], None] = ExecutorLock.release
    """R-LOCK-2: the release's ``LOCK_UN`` (and close) of the executor lock."""
    terminal_mark: Callable[[Workspace, str, AgentId, str], None] = Workspace.set_mark
    """R-TERM-4, R-TERM-6: the mark a budget-exhausted or stopped exit leaves."""
    recipient: Callable[[Path, str, str, DebtReading], AgentId | None] = recipient
    """R-ADDR-1, R-ADDR-3: where the exit protocol deposits a terminal event's result
    (given the hop's debt reading)."""
    recipient_probe: Callable[[Path, AgentId, Launcher], Actor[ProbeOutcome]] = probe_actor
    """R-TERM-2 (4): the exit protocol's probe of the recipient."""


PRODUCTION = HopParts()


def installed_parts() -> HopParts:
    """The parts a ``HopDeps`` built without explicit parts gets (production's unless a
    test build installed others through :mod:`lernie_ref.testing`)."""
    return installed(HopParts, PRODUCTION)
