"""The terminal tail: the exit protocol of a hop that reached a terminal event (R-TERM-1, R-TERM-2,
R-TERM-3, R-TERM-4, R-TERM-5).

In this order (R-TERM-2, upstream ``conclude``):

1. Deposit the result at ``recipient(...)`` (R-ADDR) while the lock is held: a
   reply goes to the last prompter if a reply is owed (``user`` → nobody), an
   obituary to the parent. The recipient is derived here, under the lease, so a
   rival executor cannot move the tail first (bl-a96a).
2. Release the lease.
3. The release rule: re-read the inbox and complete the launch of every unseen
   deposit that warrants one (R-REL-1), whatever this event's epitaph.
4. Only after ``final-response``: launch a driver at itself (a plain launch, no
   probe; that driver finds nothing due and stops at pin 1 unless mail raced
   in), then probe-and-launch the recipient, if there is one. After ``stopped``
   or ``budget-exhausted`` nobody is launched here (pin 2, R-TERM-4): the
   obituary parks in the parent's inbox until the parent's next touch.

After step 2 the process writes nothing to its branch, worktree or inbox
(R-TERM-5, I-10); failures there are notices. Points: ``terminal.recipient``,
the deposit's points, the release's points, ``terminal.self-launched``, the
recipient probe's points.
"""

from __future__ import annotations

from pathlib import Path

from lernie_ref.actors.parts import PRODUCTION, HopParts
from lernie_ref.actors.readings import parking_reported
from lernie_ref.actors.release import notice, release_actor
from lernie_ref.core.actor import Actor, Passed
from lernie_ref.core.clock import Clock
from lernie_ref.core.debt import READING, DebtReading
from lernie_ref.core.errors import DepositError, GitOpError, LernieError
from lernie_ref.core.ids import AgentId
from lernie_ref.core.vocab import Epitaph, MarkKind, Point
from lernie_ref.substrate.deposit import deposit_result_actor
from lernie_ref.substrate.launcher import Launcher
from lernie_ref.substrate.lock import ExecutorLock
from lernie_ref.substrate.workspace import Workspace


def terminal_ref(ws: Workspace, agent_id: AgentId) -> str:
    """The full sha of the agent's branch tip (the result's ``terminal_ref``)."""
    try:
        return ws.git.run(ws.worktree(agent_id), ["rev-parse", "HEAD"]).stdout
    except LernieError as exc:
        raise GitOpError("rev-parse", exc) from None


def conclude_actor(
    ws: Workspace,
    agent_id: AgentId,
    epitaph: Epitaph,
    lock: ExecutorLock,
    seen: frozenset[tuple[str, int]],
    *,
    response: str | None,
    launcher: Launcher,
    clock: Clock,
    parts: HopParts = PRODUCTION,
    reading: DebtReading = READING,
    repeated: bool = False,
) -> Actor[AgentId | None]:
    """R-TERM-2: deposit → release → release rule → (final-response only) self and recipient.

    Returns the recipient (``None``: nothing deposited): one address per terminal event
    (I-11). The tail probes every agent it deposited into, its own inbox included beside a
    parked obituary, so no wakeup it owes is left unmade (I-21). Raises only before the
    release (the caller then releases by ``LOCK_UN`` and runs no release rule). The
    stopped mark, the recipient, the release and its rule and the recipient probe go
    through ``parts``, the debt the recipient reads is ``reading`` (R-STEP-10).

    R-TERM-7: a parking event (``stopped``, ``budget-exhausted``) that repeats one already
    reported at this tip deposits nothing; ``repeated`` says so for a ``budget-exhausted``
    event, whose mark the caller set already, and a ``stopped`` event reads it here, before
    its own mark is set.

    Points: ``Point.TERMINAL_STOPPED_MARKED``, ``Point.TERMINAL_RECIPIENT``; the result
    deposit's ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_COLLIDED``, ``Point.DEPOSIT_PUBLISHED``, ``Point.DEPOSIT_MARKED``; the
    release's ``Point.RELEASE_RELEASED``, ``Point.RELEASE_REREAD``;
    ``Point.TERMINAL_SELF_LAUNCHED``; and the probes' ``Point.PROBE_BUSY``,
    ``Point.PROBE_ACQUIRED``, ``Point.PROBE_RELEASED``, ``Point.PROBE_LAUNCHED``.
    Always: ``Point.TERMINAL_RECIPIENT``, ``Point.RELEASE_RELEASED``.
    """
    if epitaph is Epitaph.STOPPED:
        # R-TERM-6, D-19: the stop is recorded at the tip (a root has no parent to tell),
        # so the sweep and status read a stopped branch as at rest, not as a death.
        tip = terminal_ref(ws, agent_id)
        try:
            repeated = repeated or parking_reported(ws, agent_id, tip)
            parts.terminal_mark(ws, MarkKind.STOPPED, agent_id, tip)
        except LernieError as exc:
            raise GitOpError("stopped update-ref", exc) from None
        yield Passed(Point.TERMINAL_STOPPED_MARKED, agent_id)
    to = parts.recipient(ws.worktree(agent_id), agent_id, epitaph, reading)
    if repeated and to is not None and epitaph is not Epitaph.FINAL_RESPONSE:
        # R-TERM-7: the parent already has a result carrying this tip; a second obituary
        # would tell it nothing new and count as one event's result sent twice (I-11).
        notice(
            f"{agent_id}: {epitaph.value} again at {terminal_ref(ws, agent_id)[:12]}, already "
            f"reported to {to}; no second obituary (R-TERM-7)"
        )
        to = None
    yield Passed(Point.TERMINAL_RECIPIENT, agent_id, to or "")
    if to is not None:
        sha = terminal_ref(ws, agent_id)
        try:
            yield from deposit_result_actor(
                ws.root, to, agent_id, epitaph, sha, response, clock, ws.git
            )
        except DepositError as exc:
            raise DepositError.result(exc) from None
    yield from release_actor(
        ws.root, agent_id, lock, seen, launcher,
        unlock=parts.release_lock, reread=parts.reread, owed=parts.owed_launch,
    )
    if epitaph is not Epitaph.FINAL_RESPONSE:
        return to
    try:
        launcher.launch(Path(ws.root), agent_id)
    except LernieError as exc:
        notice(f"exit launch for {agent_id}: {exc} (accepted crash class, R-TERM-5)")
    yield Passed(Point.TERMINAL_SELF_LAUNCHED, agent_id)
    if to is not None:
        try:
            yield from parts.recipient_probe(ws.root, to, launcher)
        except LernieError as exc:
            notice(f"revival launch for {to}: {exc} (accepted crash class, R-TERM-5)")
    return to
