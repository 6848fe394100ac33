"""Probe-and-launch (R-PROBE): after a deposit, make sure a driver runs.

A free executor lock means nobody drives the agent, so the writer releases the probe
at once and launches a driver (launching is not driving, R-PROBE-3). A busy lock
means the holder drains at its next step boundary. Every launch the protocol makes
goes through here or the exit protocol's self-launch (funded launches, I-8).
"""

from __future__ import annotations

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.actor import Passed, run
from lernie_ref.core.errors import LaunchError, LockError, ProbeError
from lernie_ref.core.names import Point
from lernie_ref.substrate.deposit import inbox_dir
from lernie_ref.substrate.lock import try_acquire

if TYPE_CHECKING:
    from typing import ClassVar

    from lernie_ref.core.actor import Actor
    from lernie_ref.core.ids import AgentId
    from lernie_ref.substrate.deposit import P
    from lernie_ref.substrate.launcher import Launcher


class ProbeOutcome:
    """What a probe found: :attr:`LAUNCHED` (the lock was free) or :attr:`BUSY`.

    Two singletons compared with ``is``, written by hand instead of an ``Enum``.
    """

    __slots__ = ("value",)
    LAUNCHED: ClassVar[ProbeOutcome]
    BUSY: ClassVar[ProbeOutcome]

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"<ProbeOutcome.{self.value.upper()}: {self.value!r}>"


ProbeOutcome.LAUNCHED = ProbeOutcome("launched")
ProbeOutcome.BUSY = ProbeOutcome("busy")


def probe_actor(ws: P, agent_id: AgentId, launcher: Launcher) -> Actor[ProbeOutcome]:
    """R-PROBE-1: try-acquire; free → release *then* launch (LAUNCHED); held → BUSY.

    Points: ``Point.PROBE_BUSY``; or ``Point.PROBE_ACQUIRED``, ``Point.PROBE_RELEASED``,
    ``Point.PROBE_LAUNCHED``.
    Always: none (busy and free share no point).

    Errors: :class:`~lernie_ref.core.errors.LockError`,
    :class:`~lernie_ref.core.errors.LaunchError`.
    """
    lock = try_acquire(inbox_dir(ws, agent_id))
    if lock is None:
        yield Passed(Point.PROBE_BUSY, agent_id)
        return ProbeOutcome.BUSY
    try:
        yield Passed(Point.PROBE_ACQUIRED, agent_id)
    finally:
        lock.release()
    yield Passed(Point.PROBE_RELEASED, agent_id)
    launcher.launch(ws, agent_id)
    yield Passed(Point.PROBE_LAUNCHED, agent_id)
    return ProbeOutcome.LAUNCHED


def probe_and_launch(ws: P, agent_id: AgentId, launcher: Launcher) -> ProbeOutcome:
    """R-PROBE-1: :func:`probe_actor` run straight through."""
    return run(probe_actor(ws, agent_id, launcher))


def writer_probe_actor(ws: P, agent_id: AgentId, launcher: Launcher) -> Actor[ProbeOutcome]:
    """R-PROBE-2: a writer's probe; lock and launch failures read ``probe executor lock: {io}``.

    Points: those of :func:`probe_actor`: ``Point.PROBE_BUSY``, ``Point.PROBE_ACQUIRED``,
    ``Point.PROBE_RELEASED``, ``Point.PROBE_LAUNCHED``.
    Always: none.
    """
    try:
        return (yield from probe_actor(ws, agent_id, launcher))
    except LockError as exc:
        raise ProbeError(exc.detail) from None
    except LaunchError as exc:
        raise ProbeError(exc.detail) from None
