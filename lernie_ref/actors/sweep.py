"""``lernie scan``: one pass that sweeps silent deaths, then flushes stranded inboxes (R-SCAN-*).

Theory of operation. Normal operation needs no scan: every deposit is followed by
a probe, every voluntary release by the release rule. What an uncatchable death
(SIGKILL, OOM, power loss) or an error exit strands is healed by the next touch,
and ``lernie scan`` is the operator's explicit touch. It is never run by a driver
or a writer.

*Sweep* (R-SCAN-1, R-SCAN-4..6). For each registered agent, in registry order: take its
executor lock (busy → it is driven: skip it); with the lock held, read from disk
whether it **died mid-work**: its own inbox holds no pending deposit (mail under a
free lock is the flush's business, not a death), no budget-exhausted mark sits at
its branch tip, and the transcript's warrant (R-STEP-3) says a model call is due
or a ``tool_use`` is unpaired. Nothing else is a death: a child that has not
taken a step yet (goal still pending, or nothing delivered), a child whose latest
terminal event was a final response — whoever it went to — and a child at rest
are alive as far as the sweep can tell. A dead child whose returned mark is not
its branch tip gets a ``died`` obituary in its parent's inbox, written on its
behalf (sender: the child; ``terminal_ref``: its tip), which moves the mark to the
tip: the same death is never reported twice, and a stop's ``stopped`` obituary
(which also moved the mark to the tip) counts as already reported. A parent with
no ref makes the agent a root: roots are named in the report, never deposited for.
An agent at rest whose committed final response never reached its recipient (it
died between the commit and the deposit) gets that reply deposited on its behalf,
once (R-SCAN-9).

Holding the lock while reading makes the verdict a snapshot no executor can move
under it. A writer whose probe read "busy" during that hold, and a launched driver
that found the lock held and stepped aside, are both covered by the flush, which
lists every inbox after all holds are released: the flush is the sweep's release
rule.

*Flush* (R-SCAN-2). Every inbox directory with a pending deposit, a registered
agent and a free lock gets a driver launched through the ordinary probe. The
scanner moves no file and commits nothing. A directory naming no agent is debris:
counted, never launched for, never touched.
"""

from __future__ import annotations

import enum
import json
import os
from dataclasses import dataclass, field

from lernie_ref.actors.drain import STRAY_SUBJECT
from lernie_ref.actors.probe import ProbeOutcome, probe_actor
from lernie_ref.actors.release import notice
from lernie_ref.core.actor import Actor, Passed, run
from lernie_ref.core.clock import Clock
from lernie_ref.core.entry import entry_blocks, text_of
from lernie_ref.core.errors import (
    ContainmentError,
    GitOpError,
    LaunchError,
    LernieError,
    LockError,
    ScanError,
    io_text,
)
from lernie_ref.core.frontmatter import terminal_ref_of
from lernie_ref.core.ids import is_agent_id, parent_of, require_agent_id
from lernie_ref.core.vocab import (
    MARK_REF_PREFIX,
    MESSAGES_DIR,
    STEPS_DIR,
    Epitaph,
    MarkKind,
    Point,
)
from lernie_ref.core.warrant import Warrant, unanswered_tail, warrant_of
from lernie_ref.reply import recipient
from lernie_ref.reply_debt import is_terminal_response, read_bytes, read_entries, read_text
from lernie_ref.substrate import gitlocks, guarded
from lernie_ref.substrate.deposit import deposit_result_actor, pending
from lernie_ref.substrate.launcher import Launcher
from lernie_ref.substrate.lock import try_acquire
from lernie_ref.substrate.transcript import commit_subject, history_of, load
from lernie_ref.substrate.workspace import Workspace


class Condition(enum.Enum):
    """What the sweep reads for one agent (R-SCAN-4)."""

    DRIVEN = "driven"
    """An executor holds the lock."""
    MAIL = "mail"
    """Pending deposits under a free lock: a launch picks the work up (the flush's case)."""
    DIED_MID_WORK = "died-mid-work"
    """No executor, no mail, and the transcript owes a model call or a tool result."""
    AT_REST = "at-rest"
    """Nothing due: never started, finished a step loop, or stopped by its budget."""


def condition_of(
    *, driven: bool, pending_count: int, due: Warrant, budget_at_tip: bool
) -> Condition:
    """R-SCAN-4: the sweep's reading of one agent, as a pure function of what it read."""
    if driven:
        return Condition.DRIVEN
    if pending_count:
        return Condition.MAIL
    if budget_at_tip or due is Warrant.NOTHING_DUE:
        return Condition.AT_REST
    return Condition.DIED_MID_WORK


@dataclass(frozen=True)
class UnsentReply:
    """R-SCAN-9: a final response committed at the tip whose deposit never landed."""

    recipient: str
    response: str | None


def obituary_owed(condition: Condition, parent: str | None, returned: str | None, tip: str) -> bool:
    """R-SCAN-5: a ``died`` deposit is owed iff the agent died mid-work, has a registered parent,
    and its returned mark is not already at its branch tip."""
    return condition is Condition.DIED_MID_WORK and parent is not None and returned != tip


@dataclass
class ScanReport:
    """One pass's outcome; lists are in pass order (R-SCAN-3)."""

    silent_deaths: list[str] = field(default_factory=list)
    swept: list[str] = field(default_factory=list)
    resent: list[tuple[str, str]] = field(default_factory=list)
    """(agent, recipient) of every final response the sweep deposited on its author's behalf."""
    launched: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)
    debris: list[str] = field(default_factory=list)
    driven: list[str] = field(default_factory=list)
    revived: list[str] = field(default_factory=list)
    """Dead agents with work due that the pass relaunched (R-SCAN-10); also in ``launched``."""
    given_up: list[str] = field(default_factory=list)
    """Dead agents with work due the crash-loop guard keeps down (R-SCAN-10)."""

    def line(self) -> str:
        """R-SCAN-3: upstream's report line, byte for byte."""
        named = f" ({', '.join(self.silent_deaths)})" if self.silent_deaths else ""
        return (
            f"silent deaths: {len(self.silent_deaths)}{named}; "
            f"died deposits swept: {len(self.swept)}; "
            f"drivers launched: {len(self.launched)}; "
            f"inboxes with no agent branch: {len(self.debris)}"
        )

    def as_json(self) -> dict[str, object]:
        return {
            "silent_deaths": list(self.silent_deaths),
            "swept": list(self.swept),
            "resent": [{"agent": a, "to": r} for a, r in self.resent],
            "launched": list(self.launched),
            "busy": list(self.busy),
            "debris": list(self.debris),
            "driven": list(self.driven),
            "revived": list(self.revived),
            "given_up": list(self.given_up),
        }

    def json_text(self) -> str:
        return json.dumps(self.as_json(), sort_keys=True)


# --------------------------------------------------------------------- readers


def mark_value(ws: Workspace, kind: str, agent: str) -> str | None:
    """The sha of ``refs/lernie/<kind>/<agent>``, or ``None`` when there is no such mark."""
    result = ws.git.run(
        ws.repo_git,
        ["rev-parse", "--verify", "--quiet", f"{MARK_REF_PREFIX}{kind}/{agent}^{{commit}}"],
        check=False,
    )
    if result.returncode != 0 or not result.stdout:
        return None
    return result.stdout


def transcript_due(ws: Workspace, agent: str) -> Warrant:
    """R-STEP-3 over the agent's worktree transcript (strays included: they were delivered)."""
    return warrant_of(history_of(load(ws.worktree(agent))))


def tip_of(ws: Workspace, agent: str) -> str:
    try:
        return ws.branch_tip(agent)
    except LernieError as exc:
        raise GitOpError("rev-parse branch tip", exc) from None


def read_condition(ws: Workspace, agent: str) -> tuple[Condition, str]:
    """Read one undriven agent's condition and its branch tip (the caller holds the lock)."""
    tip = tip_of(ws, agent)
    mail = len(pending(ws.inbox_dir(agent)))
    due, budget_at_tip = Warrant.NOTHING_DUE, False
    if not mail:  # with mail pending the transcript does not matter (R-SCAN-4)
        try:
            due = transcript_due(ws, agent)
        except LernieError as exc:
            raise ScanError(f"read transcript of {agent}: {exc}") from None
        budget_at_tip = tip in (
            mark_value(ws, MarkKind.BUDGET_EXHAUSTED, agent),
            mark_value(ws, MarkKind.STOPPED, agent),  # a stop is at rest too (R-SCAN-4, D-19)
        )
    condition = condition_of(
        driven=False, pending_count=mail, due=due, budget_at_tip=budget_at_tip
    )
    return condition, tip


def _result_on_disk(ws: Workspace, to: str, sender: str, terminal_ref: str) -> bool:
    """A result from ``sender`` carrying ``terminal_ref`` is pending for or delivered to ``to``."""
    for deposit in pending(ws.inbox_dir(to)):
        if deposit.sender != sender:
            continue
        try:
            body = deposit.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return True  # unreadable: assume it is the one; never risk a second copy
        if terminal_ref_of(body) == terminal_ref:
            return True
    return any(
        entry.delivered
        and entry.origin == sender
        and terminal_ref_of(read_text(entry)) == terminal_ref
        for entry in read_entries(ws.worktree(to))
    )


def unsent_reply(
    ws: Workspace, agent: str, tip: str, registry: frozenset[str]
) -> UnsentReply | None:
    """R-SCAN-9: the final response at ``agent``'s tip that never reached its recipient, if any.

    All must hold: the returned mark is not at the tip; the newest transcript entry is
    a terminal response and the tip is its own commit (R-TR-3; an uncommitted entry is
    left to the next hop's stray recovery); a reply is owed to a registered agent
    (R-ADDR-3, R-DEBT-4); and no result from ``agent`` carrying the tip is pending for,
    or delivered to, that agent (a deposit whose mark was lost is not sent twice).
    """
    if mark_value(ws, MarkKind.RETURNED, agent) == tip:
        return None
    worktree = ws.worktree(agent)
    entries = read_entries(worktree)
    if not entries or not is_terminal_response(entries[0]):
        return None
    newest = entries[0]
    subject = ws.git.run(ws.repo_git, ["log", "-1", "--format=%s", tip]).stdout
    # The entry's own commit, or the stray recovery that committed it (R-DRAIN-2).
    if subject not in (commit_subject(newest.seq, newest.origin, agent),
                       STRAY_SUBJECT.format(agent=agent)):
        return None
    to = recipient(worktree, agent, Epitaph.FINAL_RESPONSE)
    if to is None or to not in registry or _result_on_disk(ws, to, agent, tip):
        return None
    return UnsentReply(to, text_of(entry_blocks(read_bytes(newest))))


# --------------------------------------------------------------------- revival

REVIVE_LIMIT = 3
"""R-SCAN-10: relaunches of a dead agent at one branch tip before the scan gives up on it."""
REVIVALS_FILE = "revivals"
"""R-SCAN-10: ``steps/<id>/revivals`` holds ``<tip> <count>``: the scan's relaunches at a tip."""


def work_due(ws: Workspace, agent: str) -> bool:
    """R-SCAN-10: a hop would take a step: a model call is due, or the only unpaired calls
    are a trailing open tool window (R-STEP-2 settles it, then a model call is due).

    I-19: what a crash leaves with work due is what this scan revives, so no agent stays
    dead with work due once the operator has run ``lernie scan``."""
    history = history_of(load(ws.worktree(agent)))
    due = warrant_of(history)
    if due is Warrant.MODEL_CALL_DUE:
        return True
    return due is Warrant.UNPAIRED and bool(unanswered_tail(history))


def stray_terminal(ws: Workspace, agent: str, tip: str) -> bool:
    """R-SCAN-10: the newest entry is a terminal response that is not the tip's own commit:
    its driver died between the entry's rename and its commit (an uncommitted stray)."""
    entries = read_entries(ws.worktree(agent))
    if not entries or not is_terminal_response(entries[0]):
        return False
    path = f"{tip}:{MESSAGES_DIR}/{entries[0].path.name}"
    return ws.git.run(ws.repo_git, ["cat-file", "-e", path], check=False).returncode != 0


def revivals_at(ws: Workspace, agent: str, tip: str) -> int:
    """How many times the scan relaunched ``agent`` at ``tip`` (0 after any progress).

    Read as a regular file, never through a link (R-WS-7); anything unreadable reads 0."""
    try:
        with guarded.walk(ws.root, (STEPS_DIR, require_agent_id(agent))) as steps:
            text = steps.read_bytes(REVIVALS_FILE).decode("utf-8")
    except (OSError, UnicodeDecodeError, ContainmentError):
        return 0
    parts = text.split()
    if len(parts) != 2 or parts[0] != tip or not parts[1].isdigit():
        return 0
    return int(parts[1])


def _record_revival(ws: Workspace, agent: str, tip: str, count: int) -> None:
    """Write ``<tip> <count>`` by rename (the caller holds the agent's lock), through the
    guarded walk: ``steps/<id>/`` and the file are never reached through a link (R-WS-7)."""
    temp = f".{REVIVALS_FILE}.tmp"
    try:
        with guarded.walk(ws.root, (STEPS_DIR, require_agent_id(agent)), create=True) as steps:
            steps.replace(temp, f"{tip} {count}\n".encode())
            steps.rename(temp, steps, REVIVALS_FILE)
    except OSError as exc:
        raise ScanError(f"record revival of {agent}: {io_text(exc)}") from None


# --------------------------------------------------------------------- the pass


def _sweep_one(
    ws: Workspace,
    agent: str,
    registry: frozenset[str],
    report: ScanReport,
    clock: Clock,
    launcher: Launcher,
) -> Actor[None]:
    inbox = ws.inbox_dir(agent)
    lock = None
    revive = False
    if inbox.is_dir():  # no directory: nobody can hold the lock, and none is created (R-SCAN-6)
        try:
            lock = try_acquire(inbox)
        except LockError as exc:
            raise ScanError(f"probe executor lock at {inbox}: {exc.detail}") from None
        if lock is None:
            report.driven.append(agent)
            yield Passed(Point.SCAN_DRIVEN, agent)
            return
    try:
        # No inbox directory: nothing to hold (and no executor can hold it either).
        yield Passed(Point.SCAN_HELD if lock is not None else Point.SCAN_NO_INBOX, agent)
        if lock is not None:  # R-WS-8: the sweep holds the lock, so it clears like a driver
            removed = gitlocks.clear_stale_locks(ws.root, ws.worktree(agent), agent)
            if removed:
                notice(gitlocks.describe(ws.root, removed, agent))
        condition, tip = read_condition(ws, agent)
        yield Passed(Point.SCAN_ASSESSED, agent, condition.value)
        if condition is Condition.DIED_MID_WORK:
            parent = parent_of(agent)
            if parent not in registry:
                parent = None  # R-SCAN-1: a parent with no ref makes the agent a root
            if parent is None:
                report.silent_deaths.append(agent)
            elif obituary_owed(condition, parent, mark_value(ws, MarkKind.RETURNED, agent), tip):
                report.silent_deaths.append(agent)
                yield from deposit_result_actor(
                    ws.root, parent, agent, Epitaph.DIED, tip, None, clock, ws.git
                )
                report.swept.append(agent)
                yield Passed(Point.SCAN_SWEPT, agent, parent)
            if lock is not None:
                try:
                    due = work_due(ws, agent)
                except LernieError as exc:
                    raise ScanError(f"read transcript of {agent}: {exc}") from None
                if due:
                    count = revivals_at(ws, agent, tip)
                    if count >= REVIVE_LIMIT:
                        report.given_up.append(agent)
                    else:
                        _record_revival(ws, agent, tip, count + 1)
                        revive = True
        elif condition is Condition.AT_REST:
            try:
                unsent = unsent_reply(ws, agent, tip, registry)
                stray = lock is not None and stray_terminal(ws, agent, tip)
            except LernieError as exc:
                raise ScanError(f"read transcript of {agent}: {exc}") from None
            if stray:  # R-SCAN-10: the hop recovers it and finishes its exit protocol
                count = revivals_at(ws, agent, tip)
                if count >= REVIVE_LIMIT:
                    report.given_up.append(agent)
                else:
                    _record_revival(ws, agent, tip, count + 1)
                    revive = True
            if unsent is not None:
                yield from deposit_result_actor(
                    ws.root,
                    unsent.recipient,
                    agent,
                    Epitaph.FINAL_RESPONSE,
                    tip,
                    unsent.response,
                    clock,
                    ws.git,
                )
                report.resent.append((agent, unsent.recipient))
                yield Passed(Point.SCAN_RESENT, agent, unsent.recipient)
    finally:
        if lock is not None:
            lock.release()
    if lock is not None:
        yield Passed(Point.SCAN_RELEASED, agent)
    if revive:  # R-SCAN-10: after the hold is released, so the driver can take the lock
        try:
            outcome = yield from probe_actor(ws.root, agent, launcher)
        except (LockError, LaunchError) as exc:
            raise ScanError(f"revive (probe-and-launch) {agent}: {exc.detail}") from None
        if outcome is ProbeOutcome.LAUNCHED:
            report.revived.append(agent)
            report.launched.append(agent)


def _inbox_names(ws: Workspace) -> list[str]:
    try:
        with os.scandir(ws.inbox_root) as it:
            return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ScanError(f"read inbox root {ws.inbox_root}: {io_text(exc)}") from None


def _flush(
    ws: Workspace, registry: frozenset[str], launcher: Launcher, report: ScanReport
) -> Actor[None]:
    for name in _inbox_names(ws):
        if not pending(ws.inbox_root / name):
            continue
        # An agent created after the registry was read is not debris (R-SCAN-2).
        if name not in registry and not ws.agent_exists(name):
            report.debris.append(name)
            yield Passed(Point.SCAN_DEBRIS, name)
            continue
        try:
            outcome = yield from probe_actor(ws.root, name, launcher)
        except (LockError, LaunchError) as exc:
            detail = exc.detail
            raise ScanError(f"flush (probe-and-launch) for {name}: {detail}") from None
        if outcome is ProbeOutcome.LAUNCHED:
            report.launched.append(name)
        else:
            report.busy.append(name)
        yield Passed(Point.SCAN_FLUSHED, name, outcome.value)


def scan_actor(
    ws: Workspace, launcher: Launcher, clock: Clock
) -> Actor[ScanReport]:
    """R-SCAN-1: the whole pass as an actor: sweep every agent, then flush every inbox.

    Points, per agent: ``scan.driven``, or ``scan.held`` (``scan.no-inbox``),
    ``scan.assessed`` (detail: the condition), the deposit's points and ``scan.swept``
    when an obituary is written, ``scan.released``; then per inbox: ``scan.debris``, or
    the probe's points and ``scan.flushed`` (detail: launched or busy).
    """
    try:
        # A ref whose name is not one path component (``agents/x/y``) names no agent.
        agents = [a for a in ws.agent_ids() if is_agent_id(a)]
    except LernieError as exc:
        raise GitOpError("for-each-ref agents/", exc) from None
    registry = frozenset(agents)
    report = ScanReport()
    for agent in agents:
        yield from _sweep_one(ws, agent, registry, report, clock, launcher)
    yield from _flush(ws, registry, launcher, report)
    return report


def scan(ws: Workspace, launcher: Launcher, clock: Clock) -> ScanReport:
    """R-SCAN-1: :func:`scan_actor` run straight through."""
    return run(scan_actor(ws, launcher, clock))
