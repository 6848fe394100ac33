"""The hop: one run of ``lernie advance <ws> <id>`` as an actor (R-STEP-1, R-STEP-2, R-STEP-3,
R-STEP-4, R-STEP-5).

Theory of operation. A hop takes the agent's lease (adopting a baton, or a
fresh try-acquire; busy means another executor drives, so it leaves at once),
settles a tool window a crash left open (R-STEP-2), sends a final response's reply
that a crash kept from leaving (R-DRAIN-8), drains the inbox (R-DRAIN), and reads
the warrant from the transcript (R-STEP-3):

- Unpaired → declined, exit 1.
- NothingDue → release with the release rule, exit 0 (pin 1).
- ModelCallDue → one step (R-STEP-4): stop check, budget check, model call,
  stop check, commit the assistant entry. No ``tool_use`` → terminal
  ``final-response``. Otherwise run each tool (a stop between tools settles the
  rest as interrupted), commit each result, stop check, and return
  ``TOOLS_RAN`` with the lease still held: the caller ``execve``\\ s the successor
  hop with it (R-LOCK-3), so the lock is never free between hops (I-2).

Any error raised while the lease is held releases it by ``LOCK_UN`` and
propagates: no release rule, no launch (R-STEP-5). The stop flag is read through
``stop_requested`` (the CLI edge sets it from SIGTERM). Points: ``hop.busy`` or
``hop.acquired``; ``hop.settled``; the drain's; ``hop.warrant``; ``hop.model-returned``;
the entry writer's; ``hop.assistant-committed``; per tool ``hop.tool-ran`` and the
entry writer's; then the terminal tail's or ``hop.tools-ran``.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lernie_ref.actors.drain import drain_actor
from lernie_ref.actors.exit_protocol import conclude_actor, terminal_ref
from lernie_ref.actors.mark_repair import landed_result, repair_returned_mark
from lernie_ref.actors.parts import HopParts, installed_parts
from lernie_ref.actors.probe import probe_actor
from lernie_ref.actors.readings import mark_value, parking_reported, unsent_reply
from lernie_ref.actors.release import notice, release_actor
from lernie_ref.actors.tools import ToolContext, ToolParts, run_tool, tool_parts
from lernie_ref.adapters.protocol import ModelAdapter, ModelRequest
from lernie_ref.core.actor import Actor, Passed
from lernie_ref.core.clock import Clock
from lernie_ref.core.debt import DebtReading
from lernie_ref.core.debt import reading as debt_reading
from lernie_ref.core.entry import Block, Entry, text_of, tool_result_block, tool_use_ids
from lernie_ref.core.errors import (
    AdoptError,
    DepositError,
    GitOpError,
    LernieError,
    TranscriptError,
    UnpairedToolUse,
)
from lernie_ref.core.ids import AgentId
from lernie_ref.core.tooldefs import tool_specs
from lernie_ref.core.vocab import STAGING_FILE, Epitaph, MarkKind, Point
from lernie_ref.core.warrant import Warrant, warrant_of
from lernie_ref.substrate import gitlocks, transcript
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.deposit import deposit_result_actor
from lernie_ref.substrate.launcher import Launcher
from lernie_ref.substrate.lock import ExecutorLock, take_lease
from lernie_ref.substrate.transcript import read_entries, with_body
from lernie_ref.substrate.workspace import Workspace

DIED_TEXT = (
    "died: the executor ended before this tool call returned (crash settlement, bl-4187); "
    "whatever the call did is unknown"
)
INTERRUPTED_TEXT = "interrupted: the agent was stopped (SIGTERM) before this tool call ran"






class Outcome(enum.Enum):
    ALREADY_DRIVEN = "already-driven"
    NOTHING_TO_DO = "nothing-to-do"
    TOOLS_RAN = "tools-ran"
    TERMINAL = "terminal"


@dataclass
class HopResult:
    outcome: Outcome
    lock: ExecutorLock | None = None
    """``TOOLS_RAN`` only: the lease, still held, to hand to the successor."""
    epitaph: Epitaph | None = None
    recipient: AgentId | None = None


@dataclass(frozen=True)
class HopDeps:
    """What a hop needs injected: the model, the launcher, the clock (R-STEP-6, R-LAUNCH-1)."""

    model: ModelAdapter
    launcher: Launcher
    clock: Clock
    config: Config
    stop_requested: Callable[[], bool]
    env: Mapping[str, str] | None = None
    """The environment tool processes start from (``None``: this process's)."""
    parts: HopParts = field(default_factory=installed_parts)
    """The collaborators the hop's actors call through (R-STEP-10; production's by default)."""
    debt: DebtReading = field(default_factory=debt_reading)
    """The reply-debt reading of the exit protocol, the lost-reply check and the mark
    repair (R-STEP-10)."""
    tools: ToolParts = field(default_factory=tool_parts)
    """The work tools' collaborators (R-STEP-10)."""


def _release_actor(
    ws: Workspace, agent_id: AgentId, lock: ExecutorLock, seen: frozenset[tuple[str, int]],
    deps: HopDeps,
) -> Actor[None]:
    """R-REL-1 through the hop's parts."""
    yield from release_actor(
        ws.root, agent_id, lock, seen, deps.launcher,
        unlock=deps.parts.release_lock, reread=deps.parts.reread, owed=deps.parts.owed_launch,
    )


def model_steps(entries: Sequence[Entry[object]]) -> int:
    """R-TERM-4's budget measure: the number of model entries in the transcript."""
    return sum(1 for e in entries if e.role == "assistant")


def hop_actor(
    ws: Workspace, agent_id: AgentId, env: Mapping[str, str], deps: HopDeps
) -> Actor[HopResult]:
    """R-STEP-1 to R-STEP-5 after the guards: take the lease, then settle, drain, warrant,
    step.

    ``env`` is read for ``LERNIE_LOCK_FD`` only (adopt when present, R-LOCK-4).

    Points: ``Point.HOP_BUSY``; or ``Point.HOP_ACQUIRED``, ``Point.HOP_SETTLED`` (after the
    settling entries' ``Point.TRANSCRIPT_RENAMED``, ``Point.TRANSCRIPT_COMMITTED``), the
    drain's ``Point.DRAIN_LISTED``, ``Point.DRAIN_REMATERIALIZED``,
    ``Point.DRAIN_STRAY_COMMITTED``, ``Point.DRAIN_RENAMED``, ``Point.DRAIN_COMMITTED``,
    ``Point.HOP_WARRANT``, ``Point.HOP_BUDGET_EXHAUSTED``, ``Point.HOP_MODEL_RETURNED``,
    ``Point.HOP_ASSISTANT_COMMITTED``, ``Point.HOP_TOOL_RAN``, ``Point.HOP_TOOLS_RAN``, and
    the exit protocol's ``Point.TERMINAL_STOPPED_MARKED``, ``Point.TERMINAL_RECIPIENT``,
    ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``, ``Point.DEPOSIT_COLLIDED``,
    ``Point.DEPOSIT_PUBLISHED``, ``Point.DEPOSIT_MARKED``, ``Point.RELEASE_RELEASED``,
    ``Point.RELEASE_REREAD``, ``Point.TERMINAL_SELF_LAUNCHED``, ``Point.PROBE_BUSY``,
    ``Point.PROBE_ACQUIRED``, ``Point.PROBE_RELEASED``, ``Point.PROBE_LAUNCHED``.
    Always: none (a busy hop passes its busy point alone).
    """
    try:
        lock = take_lease(env, ws.inbox_dir(agent_id))
    except AdoptError as exc:
        raise AdoptError.lease(agent_id, str(exc)) from None
    if lock is None:
        yield Passed(Point.HOP_BUSY, agent_id)
        return HopResult(Outcome.ALREADY_DRIVEN)
    yield Passed(Point.HOP_ACQUIRED, agent_id)
    try:
        return (yield from _drive(ws, agent_id, lock, deps))
    except BaseException:
        lock.release()
        raise


def _settle_actor(
    ws: Workspace, agent_id: AgentId, ids: Sequence[str], text: str, deps: HopDeps
) -> Actor[None]:
    if text == DIED_TEXT:
        # R-TOOL-7: the dead executor's tool processes die before their calls are settled
        killed = deps.tools.kill_leftovers(ws.root, agent_id)
        if killed:
            notice(
                f"killed {len(killed)} leftover tool process(es) of [{agent_id}] whose "
                "executor died mid-call (R-TOOL-7)"
            )
    worktree = ws.worktree(agent_id)
    staging = ws.steps_dir(agent_id) / STAGING_FILE
    for call_id in ids:
        block = tool_result_block(call_id, text, is_error=True)
        yield from transcript.tool_entry_actor(worktree, agent_id, block, staging, ws.git)


def _drive(ws: Workspace, agent_id: AgentId, lock: ExecutorLock, deps: HopDeps) -> Actor[HopResult]:
    worktree = ws.worktree(agent_id)
    removed = gitlocks.clear_stale_locks(ws.root, worktree, agent_id)
    if removed:  # R-WS-8: before the holder's first git call
        notice(gitlocks.describe(ws.root, removed, agent_id))
    stray = resent = False
    present = ws.worktree_present(agent_id)
    if present:
        _repair_returned_mark(ws, agent_id, deps.debt)
        # R-DRAIN-2 before R-STEP-2: a model entry renamed but never committed is committed
        # alone first, so the settlement's tool commit never carries it (R-TR-3).
        stray = deps.parts.recover_strays(worktree, agent_id, ws.git)
        if stray:
            yield Passed(Point.DRAIN_STRAY_COMMITTED, agent_id)
        history = transcript.history_of(transcript.load(worktree))
        open_ids = deps.parts.unanswered_tail(history)
        if open_ids:
            notice(
                f"settling a crashed tool window on [{agent_id}] — {len(open_ids)} unanswered "
                "invocation(s) recorded as died (R-STEP-2, bl-4187)"
            )
            yield from _settle_actor(ws, agent_id, open_ids, DIED_TEXT, deps)
            yield Passed(Point.HOP_SETTLED, agent_id, str(len(open_ids)))
        # R-DRAIN-8: a final response whose reply never left goes out before the drain
        # delivers anything after it (then R-SCAN-9 could no longer see it).
        resent = yield from _send_lost_reply(ws, agent_id, deps)
    # the strays were recovered above, and everything written since is committed
    delivery = yield from drain_actor(
        ws, agent_id, lock, ws.git, strays_recovered=present,
        recover=deps.parts.recover_strays, deliver=deps.parts.deliver_actor,
    )
    if not delivery.worktree_present:
        yield from _release_actor(ws, agent_id, lock, delivery.seen, deps)
        return HopResult(Outcome.NOTHING_TO_DO)
    due = warrant_of(transcript.history_of(transcript.load(worktree)))
    yield Passed(Point.HOP_WARRANT, agent_id, due.value)
    if due is Warrant.UNPAIRED:
        raise UnpairedToolUse(agent_id)
    if due is Warrant.NOTHING_DUE:
        recovered = (stray or delivery.stray_recovered) and not resent
        newest = transcript.load(worktree)[-1:] if recovered else []
        if newest and newest[0].role == "assistant" and not tool_use_ids(newest[0].blocks()):
            # R-DRAIN-8: the stray just recovered is a terminal response whose driver died
            # before its exit protocol and whose reply (if any) was not sent above: finish
            # that protocol now (nothing was deposited for it yet).
            response = text_of(newest[0].blocks())
            return (
                yield from _conclude(
                    ws, agent_id, Epitaph.FINAL_RESPONSE, lock, delivery.seen, deps,
                    response=response,
                )
            )
        yield from _release_actor(ws, agent_id, lock, delivery.seen, deps)
        return HopResult(Outcome.NOTHING_TO_DO)
    return (yield from _step(ws, agent_id, lock, delivery.seen, deps))


def _repair_returned_mark(ws: Workspace, agent_id: AgentId, reading: DebtReading) -> None:
    """R-SCAN-11 at the hop, before its first commit moves the tip: a result carrying the
    tip that already reached its recipient gets its returned mark, which a kill between
    the result's publish and its mark left behind."""
    try:
        tip = ws.branch_tip(agent_id)
        returned = mark_value(ws, MarkKind.RETURNED, agent_id)
    except LernieError as exc:
        raise GitOpError("returned mark repair", exc) from None
    if returned == tip:
        return
    try:
        to = landed_result(ws, agent_id, tip, ws.worktree_present, reading=reading)
    except (TranscriptError, OSError):
        # unreadable (this transcript, or the recipient's inbox or transcript): the hop's
        # own reading or its deposit reports the failure where it belongs (R-STEP-5)
        return
    if to is not None:
        repair_returned_mark(ws, agent_id, tip, to)


def _send_lost_reply(ws: Workspace, agent_id: AgentId, deps: HopDeps) -> Actor[bool]:
    """R-DRAIN-8: deposit the reply of a final response whose driver died between the entry
    reaching the branch and the deposit (R-SCAN-9's conditions), and probe its recipient.

    Runs under the lease, after the stray recovery and before the inbox is listed: once a
    delivery follows the response, no sweep can tell that its reply never left.
    ``True`` when a reply was deposited."""
    try:
        entries = read_entries(ws.worktree(agent_id))
        if not entries or not deps.debt.is_terminal_response(with_body(entries[0])):
            return False
        tip = ws.branch_tip(agent_id)
        lost = unsent_reply(
            ws, agent_id, tip, lambda: frozenset(ws.agent_ids()), reading=deps.debt
        )
    except LernieError as exc:
        raise GitOpError("lost-reply check", exc) from None
    if lost is None:
        return False
    try:
        yield from deposit_result_actor(
            ws.root, lost.recipient, agent_id, Epitaph.FINAL_RESPONSE, tip, lost.response,
            deps.clock, ws.git,
        )
    except DepositError as exc:
        raise DepositError.result(exc) from None
    notice(
        f"{agent_id}: its final response never reached {lost.recipient}; "
        "deposited it before the drain (R-DRAIN-8)"
    )
    try:
        yield from probe_actor(ws.root, lost.recipient, deps.launcher)
    except LernieError as exc:
        notice(f"revival launch for {lost.recipient}: {exc} (accepted crash class, R-TERM-5)")
    return True


def _conclude(
    ws: Workspace,
    agent_id: AgentId,
    epitaph: Epitaph,
    lock: ExecutorLock,
    seen: frozenset[tuple[str, int]],
    deps: HopDeps,
    response: str | None = None,
    repeated: bool = False,
) -> Actor[HopResult]:
    to = yield from conclude_actor(
        ws,
        agent_id,
        epitaph,
        lock,
        seen,
        response=response,
        launcher=deps.launcher,
        clock=deps.clock,
        parts=deps.parts,
        reading=deps.debt,
        repeated=repeated,
    )
    return HopResult(Outcome.TERMINAL, epitaph=epitaph, recipient=to)


def _step(
    ws: Workspace,
    agent_id: AgentId,
    lock: ExecutorLock,
    seen: frozenset[tuple[str, int]],
    deps: HopDeps,
) -> Actor[HopResult]:
    """R-STEP-4: one model call and what it commits."""
    worktree = ws.worktree(agent_id)
    staging = ws.steps_dir(agent_id) / STAGING_FILE
    if deps.stop_requested():
        return (yield from _conclude(ws, agent_id, Epitaph.STOPPED, lock, seen, deps))
    entries = transcript.load(worktree)
    used = model_steps(entries)
    if used >= deps.config.step_budget:
        try:
            tip = terminal_ref(ws, agent_id)
            repeated = parking_reported(ws, agent_id, tip)  # R-TERM-7, before the mark moves
            deps.parts.terminal_mark(ws, MarkKind.BUDGET_EXHAUSTED, agent_id, tip)
        except LernieError as exc:
            raise GitOpError("budget-exhausted update-ref", exc) from None
        notice(
            f"budget steps exhausted ({used}/{deps.config.step_budget}) on {agent_id}; "
            "stopping (R-TERM-4)"
        )
        yield Passed(Point.HOP_BUDGET_EXHAUSTED, agent_id)
        return (
            yield from _conclude(
                ws, agent_id, Epitaph.BUDGET_EXHAUSTED, lock, seen, deps, repeated=repeated
            )
        )
    tools = deps.config.tools_for(agent_id, lambda: ws.agent_name(agent_id))
    request = ModelRequest(
        agent_id, entries, transcript.wire_messages(entries),
        tools=tool_specs(tools), worktree=Path(worktree),
    )
    reply = deps.model.call(request, deps.stop_requested)
    yield Passed(Point.HOP_MODEL_RETURNED, agent_id)
    if deps.stop_requested():
        return (yield from _conclude(ws, agent_id, Epitaph.STOPPED, lock, seen, deps))
    yield from transcript.model_entry_actor(
        worktree, agent_id, deps.model.model_id, reply.blocks, reply.usage, staging, ws.git
    )
    yield Passed(Point.HOP_ASSISTANT_COMMITTED, agent_id)
    calls = _tool_calls(reply.blocks)
    if not calls:
        response = text_of(reply.blocks)
        return (
            yield from _conclude(
                ws, agent_id, Epitaph.FINAL_RESPONSE, lock, seen, deps, response=response
            )
        )
    for index, call in enumerate(calls):
        if deps.stop_requested():
            rest = [str(c["id"]) for c in calls[index:]]
            yield from _settle_actor(ws, agent_id, rest, INTERRUPTED_TEXT, deps)
            return (yield from _conclude(ws, agent_id, Epitaph.STOPPED, lock, seen, deps))
        context = ToolContext(
            ws, agent_id, deps.launcher, deps.clock, deps.config, deps.stop_requested,
            os.environ if deps.env is None else deps.env, tools, deps.tools,
        )
        result = run_tool(call, context)
        yield Passed(Point.HOP_TOOL_RAN, agent_id, str(call["id"]))
        yield from transcript.tool_entry_actor(worktree, agent_id, result, staging, ws.git)
    if deps.stop_requested():
        return (yield from _conclude(ws, agent_id, Epitaph.STOPPED, lock, seen, deps))
    yield Passed(Point.HOP_TOOLS_RAN, agent_id)
    return HopResult(Outcome.TOOLS_RAN, lock=lock)


def _tool_calls(blocks: Sequence[Block]) -> list[Block]:
    wanted = set(tool_use_ids(blocks))
    return [b for b in blocks if b.get("type") == "tool_use" and b.get("id") in wanted]
