"""``lernie scan``: one pass that sweeps silent deaths, then flushes stranded inboxes (R-SCAN-*).

Theory of operation. Normal operation needs no scan: every deposit is followed by
a probe, every voluntary release by the release rule. What an uncatchable death
(SIGKILL, OOM, power loss) or an error exit strands is healed by the next touch,
and ``lernie scan`` is the operator's explicit touch. It is never run by a driver
or a writer.

*Sweep* (R-SCAN-1, R-SCAN-4, R-SCAN-5, R-SCAN-6). For each registered agent, in
registry order: take its executor lock (busy → it is driven: skip it); with the lock held, read
from disk
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

This module is the scan actor alone. What it reads of an agent (its refs and marks, its
condition, the result it may owe, its revival count) is
:mod:`lernie_ref.actors.readings`, which the hop and ``lernie status`` read through too;
the returned-mark repair it shares with the hop is :mod:`lernie_ref.actors.mark_repair`.
"""

from __future__ import annotations

import os
from itertools import compress
from operator import attrgetter, methodcaller

from lernie_ref.actors.probe import ProbeOutcome, probe_actor
from lernie_ref.actors.readings import (
    Refs,
    assess,
    may_owe_a_result,
    result_on_disk,
    revivals_at,
    stray_terminal,
    unsent_reply,
    work_due,
)
from lernie_ref.actors.release import notice
from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.actor import Actor, Passed, run
from lernie_ref.core.clock import Clock
from lernie_ref.core.debt import DebtReading
from lernie_ref.core.debt import reading as debt_reading
from lernie_ref.core.errors import (
    ContainmentError,
    GitOpError,
    LaunchError,
    LernieError,
    LockError,
    ScanError,
    io_text,
)
from lernie_ref.core.ids import AgentId, as_agent_id, parent_of, require_agent_id
from lernie_ref.core.parts import installed
from lernie_ref.core.record import record
from lernie_ref.core.sweep import (
    REVIVALS_FILE,
    REVIVE_LIMIT,
    Condition,
    ScanReport,
    condition_of,
    guard_allows,
    obituary_owed,
    revivals_record,
)
from lernie_ref.core.vocab import INBOX_DIR, STEPS_DIR, Epitaph, MarkKind, Point
from lernie_ref.core.warrant import unanswered_tail
from lernie_ref.substrate import gitlocks, guarded
from lernie_ref.substrate.deposit import deposit_result_actor, pending, writer_dead, writer_pid
from lernie_ref.substrate.launcher import Launcher
from lernie_ref.substrate.lock import ExecutorLock, InboxAt, try_acquire_present
from lernie_ref.substrate.reffiles import RefFiles
from lernie_ref.substrate.refsnap import AgentOids, ObjectFacts, RefOids
from lernie_ref.substrate.transcript import Transcript, history_of, load
from lernie_ref.substrate.workspace import Workspace

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = [  # the pure decisions live in lernie_ref.core.sweep; re-exported here for callers
    "REVIVE_LIMIT",
    "Condition",
    "ScanReport",
    "condition_of",
    "scan",
    "scan_actor",
]

_MAY_OWE = (Condition.AT_REST, Condition.MAIL)
"""Conditions under which R-SCAN-9 (and R-SCAN-11) look for a result owed: an agent at rest,
pending mail or not (R-SCAN-4: mail is not a death, so the agent is at rest)."""

# --------------------------------------------------------------------- revival


def _record_revival(ws: Workspace, agent: AgentId, tip: str, count: int) -> None:
    """Write ``<tip> <count>`` by rename (the caller holds the agent's lock), through the
    guarded walk: ``steps/<id>/`` and the file are never reached through a link (R-WS-7)."""
    temp = f".{REVIVALS_FILE}.tmp"
    try:
        with guarded.walk(ws.root, (STEPS_DIR, agent), create=True) as steps:
            steps.replace(temp, revivals_record(tip, count).encode())
            steps.rename(temp, steps, REVIVALS_FILE)
    except OSError as exc:
        raise ScanError(f"record revival of {agent}: {io_text(exc)}") from None


def kill_marked(ws_root: str | Path, agent: str) -> list[int]:
    """R-TOOL-7: kill the processes carrying ``agent``'s tool marks
    (:func:`lernie_ref.substrate.shell.kill_marked`, loaded off the scan's light path,
    R-CLI-5); the pids killed."""
    from lernie_ref.substrate import shell

    return shell.kill_marked(ws_root, agent)


def _kill_tool_leftovers(
    ws: Workspace, agent: AgentId, listed: Transcript | None, parts: SweepParts
) -> None:
    """R-TOOL-7 under the sweep's hold: a dead executor's open tool window may have left
    its tool's processes running; they die now, before the revived hop settles the calls
    as ``died``."""
    if not unanswered_tail(history_of(load(ws.worktree(agent), listed))):
        return
    killed = parts.kill_leftovers(ws.root, agent)
    if killed:
        notice(
            f"killed {len(killed)} leftover tool process(es) of [{agent}] whose executor "
            "died mid-call (R-TOOL-7)"
        )


def _revive(ws: Workspace, agent: AgentId, tip: str, report: ScanReport) -> bool:
    """R-SCAN-10: record one more revival at ``tip`` unless the crash-loop guard gave up.

    I-20: every agent the sweep finds dead with work due gets its launch here, the guard
    excepted."""
    count = revivals_at(ws, agent, tip)
    if not guard_allows(count):
        report.given_up.append(agent)
        return False
    _record_revival(ws, agent, tip, count + 1)
    return True


# --------------------------------------------------------------------- the pass


@record(frozen=True)
class SweepParts:
    """The sweep's replaceable collaborators (R-STEP-10), production's by default:
    ``acquire``, its non-blocking try of an agent's executor lock (R-SCAN-6: whether the
    inbox is there, and the lock if it was free), and ``kill_leftovers``, the kill of a
    dead executor's tool processes before its revival (R-TOOL-7)."""

    acquire: Callable[[str | Path | InboxAt], tuple[bool, ExecutorLock | None]] = (
        try_acquire_present
    )
    kill_leftovers: Callable[[str | Path, str], list[int]] = kill_marked


SWEEP_PARTS = SweepParts()
"""Production's sweep parts."""


def sweep_parts() -> SweepParts:
    """The process default sweep parts (production's unless a test build installed others
    through ``lernie_ref.testing.parts_installed``); read once per pass."""
    return installed(SweepParts, SWEEP_PARTS)


class _Pass:
    """What one pass reads once and every agent's sweep shares: the workspace and its
    injected parts, the registry, the report, every agent's refs as names and object ids
    (one ``for-each-ref``; each agent's confirmed under its lock through ``files``), what
    the objects are (``facts``, read when first needed), the pass's descriptor of
    ``<ws>/inbox`` (``None``: each probe walks from the root) and its look at the
    worktrees' git lock files."""

    __slots__ = (
        "agents", "clock", "debt", "facts", "files", "inbox_fd", "launcher", "look", "oids",
        "parts", "registry", "report", "ws",
    )

    def __init__(
        self,
        ws: Workspace,
        launcher: Launcher,
        clock: Clock,
        oids: RefOids,
        inbox_fd: int | None,
        look: gitlocks.LockLook,
        parts: SweepParts,
        debt: DebtReading,
    ) -> None:
        self.ws = ws
        self.parts = parts
        self.debt = debt
        self.launcher = launcher
        self.clock = clock
        self.oids = oids
        # A ref whose name is not one path component (``agents/x/y``) names no agent.
        self.agents = oids.agent_ids()
        self.registry = frozenset(self.agents)
        self.files: RefFiles = ws.ref_files
        self.facts = ObjectFacts(ws.git, ws.repo_git)
        self.inbox_fd = inbox_fd
        self.look = look
        self.report = ScanReport()


class _Hold:
    """One agent's hold: its lock (``None``: no inbox directory, so nothing to hold and no
    executor that could hold it either) and whether its stale git lock files were
    cleared (R-WS-8)."""

    __slots__ = ("agent", "cleared", "lock", "run")

    def __init__(self, run: _Pass, agent: AgentId, lock: ExecutorLock | None) -> None:
        self.run = run
        self.agent = agent
        self.lock = lock
        self.cleared = lock is None

    def clear_git_locks(self) -> None:
        """R-WS-8: the sweep holds the lock, so it clears like a driver, before it first
        reads the agent's refs or writes anything of it: a git of a dead holder that
        outlived it may still be moving the refs, and the lock file it holds shows it. A
        hold that does neither leaves stale ref locks to the agent's next holder, which
        clears them before its own first git call."""
        if not self.cleared:
            self.cleared = True
            ws, agent = self.run.ws, self.agent
            removed = gitlocks.clear_stale_locks(ws.root, ws.worktree(agent), agent)
            if removed:
                notice(gitlocks.describe(ws.root, removed, agent))

    def readings(self) -> tuple[Refs, Transcript]:
        """The agent's refs and transcript, each read once for every decision of the hold.

        The worktree's lock files are looked at first, before the transcript is read: a
        git of a dead holder still writing the worktree (a commit, a re-created worktree)
        is waited for first, exactly as before any git call (R-WS-8). The refs are the
        pass's, confirmed under the lock when a decision first asks for one (R-SCAN-6),
        after a look at the agent's ref lock files; the transcript is listed when first
        read."""
        run, agent = self.run, self.agent
        worktree = run.ws.worktree_text(agent)
        if not self.cleared and run.look.exists(agent):
            self.clear_git_locks()

        def confirmed() -> AgentOids | None:
            if not self.cleared and gitlocks.ref_lock_exists(run.ws.repo_git, agent):
                self.clear_git_locks()  # the worktree's were looked at already
            return run.oids.confirm(run.files, agent)

        return Refs(run.ws, agent, oids=confirmed, facts=run.facts), Transcript(worktree)


def _sweep_one(run: _Pass, agent: AgentId) -> Actor[None]:
    """One agent's sweep under its lock (R-SCAN-4, R-SCAN-5, R-SCAN-6).

    I-16: ``died`` goes out only while this pass holds the agent's lock, with no pending
    deposit and work due or an unpaired call at the tip. I-15: the obituary moves the
    returned mark to the tip (and is never repeated when it is already on disk), so a
    second pass with nothing new deposits nothing. R-SCAN-8's residuals are read as the
    SPEC says: a removed worktree is an empty transcript, a stopped root reads as a death.

    Each reading is made once per hold and serves every decision of it (R-SCAN-6: only
    the holder moves the agent's refs and transcript): the refs are confirmed once, and
    the transcript is listed once (:meth:`_Hold.readings`) for the condition, the mark
    repair, the unsent reply, the stray and the revival.
    """
    inbox = run.ws.inbox_text(agent)  # as text: most agents need no path object at all
    # From the pass's descriptor of <ws>/inbox when it holds one (R-WS-7: the walk's last
    # step); the full walk otherwise, and for anything but a directory there.
    probe = inbox if run.inbox_fd is None else InboxAt(run.inbox_fd, agent, inbox)
    try:
        # no directory: nobody can hold the lock, and none is created (R-SCAN-6)
        present, lock = run.parts.acquire(probe)
    except LockError as exc:
        raise ScanError(f"probe executor lock at {inbox}: {exc.detail}") from None
    if present and lock is None:
        run.report.driven.append(agent)
        yield Passed(Point.SCAN_DRIVEN, agent)
        return
    hold = _Hold(run, agent, lock)
    revive = False
    try:
        yield Passed(Point.SCAN_HELD if lock is not None else Point.SCAN_NO_INBOX, agent)
        # Read with the lock held: the snapshot's values count only once confirmed.
        refs, listed = hold.readings()
        condition = assess(run.ws, agent, refs, listed, lock)
        # the condition's value read as enum stores it (``.value`` is a Python property)
        yield Passed(Point.SCAN_ASSESSED, agent, condition._value_)
        if condition is Condition.DIED_MID_WORK:
            revive = yield from _died(hold, refs, listed)
        elif condition in _MAY_OWE and may_owe_a_result(agent, run.registry, listed, run.debt):
            # R-SCAN-9 also with mail pending: the hop would re-send it too (R-DRAIN-8)
            revive = yield from _at_rest(hold, condition, refs, listed)
    finally:
        if lock is not None:
            lock.release()
    if lock is not None:
        yield Passed(Point.SCAN_RELEASED, agent)
    if revive:  # R-SCAN-10: after the hold is released, so the driver can take the lock
        try:
            outcome = yield from probe_actor(run.ws.root, agent, run.launcher)
        except (LockError, LaunchError) as exc:
            raise ScanError(f"revive (probe-and-launch) {agent}: {exc.detail}") from None
        if outcome is ProbeOutcome.LAUNCHED:
            run.report.revived.append(agent)
            run.report.launched.append(agent)


def _died(hold: _Hold, refs: Refs, listed: Transcript) -> Actor[bool]:
    """R-SCAN-1, R-SCAN-5: an agent that died mid-work. Its parent gets a ``died``
    obituary unless one is already reported (its returned mark at the tip) or on disk (a
    kill between the obituary's publish and its mark: the mark is repaired, R-SCAN-11);
    a parent with no ref makes it a root, named in the report. With work due it is to be
    revived (R-SCAN-10): the result says so, once its tool leftovers are killed."""
    run, agent, report = hold.run, hold.agent, hold.run.report
    ws = run.ws
    tip = refs.tip()
    derived = parent_of(agent)
    # R-SCAN-1: a parent with no ref makes the agent a root; a registered one is an id
    parent = require_agent_id(derived) if derived in run.registry else None
    if parent is None:
        report.silent_deaths.append(agent)
    elif not obituary_owed(Condition.DIED_MID_WORK, parent, refs.mark(MarkKind.RETURNED), tip):
        pass
    elif result_on_disk(ws, parent, agent, tip):
        # a kill between the obituary's publish and its mark (R-SCAN-11)
        if hold.lock is not None:
            from lernie_ref.actors.mark_repair import repair_returned_mark  # seldom needed

            hold.clear_git_locks()
            repair_returned_mark(ws, agent, tip, parent)
    else:
        report.silent_deaths.append(agent)
        hold.clear_git_locks()
        yield from deposit_result_actor(
            ws.root, parent, agent, Epitaph.DIED, tip, None, run.clock, ws.git
        )
        report.swept.append(agent)
        yield Passed(Point.SCAN_SWEPT, agent, parent)
    if hold.lock is None:
        return False
    try:
        due = work_due(ws, agent, listed)
        if due:
            _kill_tool_leftovers(ws, agent, listed, run.parts)
    except LernieError as exc:
        raise ScanError(f"read transcript of {agent}: {exc}") from None
    return due and _revive(ws, agent, tip, report)


def _at_rest(hold: _Hold, condition: Condition, refs: Refs, listed: Transcript) -> Actor[bool]:
    """An agent at rest (mail pending or not) that may owe a result: a returned mark a
    kill left behind is moved (R-SCAN-11), a final response that never left is re-sent
    (R-SCAN-9), and an uncommitted terminal response (a stray) makes it one to revive
    (R-SCAN-10: the hop recovers it and finishes its exit protocol)."""
    run, agent = hold.run, hold.agent
    ws = run.ws
    tip = refs.tip()
    if hold.lock is not None:  # R-SCAN-11: a result whose mark a kill left behind
        # loaded for the agents that may owe a result, not for a quiet pass
        from lernie_ref.actors.mark_repair import landed_result, repair_returned_mark

        returned = refs.mark(MarkKind.RETURNED)
        try:
            landed = None
            if returned != tip:
                landed = landed_result(
                    ws, agent, tip, run.registry.__contains__, listed, run.debt
                )
        except LernieError as exc:
            raise ScanError(f"returned mark repair of {agent}: {exc}") from None
        if landed is not None:
            hold.clear_git_locks()
            try:
                repair_returned_mark(ws, agent, tip, landed)
            except LernieError as exc:
                raise ScanError(f"returned mark repair of {agent}: {exc}") from None
    try:
        unsent = unsent_reply(ws, agent, tip, run.registry, refs, listed, run.debt)
        stray = (
            hold.lock is not None
            and condition is Condition.AT_REST  # mail: the flush launches it anyway
            and stray_terminal(ws, agent, tip, refs, listed, run.debt)
        )
    except LernieError as exc:
        raise ScanError(f"read transcript of {agent}: {exc}") from None
    revive = stray and _revive(ws, agent, tip, run.report)
    if unsent is not None:
        hold.clear_git_locks()
        yield from deposit_result_actor(
            ws.root,
            unsent.recipient,
            agent,
            Epitaph.FINAL_RESPONSE,
            tip,
            unsent.response,
            run.clock,
            ws.git,
        )
        run.report.resent.append((agent, unsent.recipient))
        yield Passed(Point.SCAN_RESENT, agent, unsent.recipient)
    return revive


def _abandoned(run: _Pass) -> Actor[None]:
    """R-SCAN-12: the remains of a creation (``prompt``, ``dispatch``) killed before its
    commit point, the create-only ref update (R-PROBE-6): a worktree or worktree admin
    directory no ref names. Its creator held the new agent's lock from before the
    worktree was made until after the ref was; so with that lock free (or no inbox at
    all) and still no ref, the creator is dead and the agent will never exist. Its
    worktree, admin directory, branch lock file and inbox (the goal's deposit, a temp)
    are removed, with one notice line each; a held lock is a creation at work: left."""
    ws, registry, report = run.ws, run.registry, run.report
    for name in ws.unborn_candidates(registry):  # a registered agent is no remains
        try:
            present, lock = run.parts.acquire(ws.inbox_text(name))
        except LockError as exc:
            raise ScanError(f"probe executor lock at {ws.inbox_text(name)}: {exc.detail}") from None
        if present and lock is None:
            continue  # its creator is at work
        try:
            if ws.agent_exists(name):
                continue  # created meanwhile: an agent, not remains
            removed = ws.remove_unborn(name)
        except (OSError, LernieError) as exc:
            detail = io_text(exc) if isinstance(exc, OSError) else str(exc)
            raise ScanError(f"remove the remains of {name}: {detail}") from None
        finally:
            if lock is not None:
                lock.release()
        if removed:
            report.abandoned.append(name)
            notice(
                f"{name}: its creation was killed before its branch was made, so it never "
                f"existed and its goal was never sent; removed {', '.join(removed)} (R-SCAN-12)"
            )
            yield Passed(Point.SCAN_ABANDONED, name)


_IS_DIR = methodcaller("is_dir", follow_symlinks=False)
_NAME = attrgetter("name")


def _inbox_names(ws: Workspace) -> list[str]:
    """The inbox root's directories, sorted (each entry judged in C: a thousand agents)."""
    try:
        with os.scandir(ws.inbox_root) as it:
            entries = list(it)
        return sorted(map(_NAME, compress(entries, map(_IS_DIR, entries))))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ScanError(f"read inbox root {ws.inbox_root}: {io_text(exc)}") from None


def _remove_dead_temps(ws: Workspace, inbox: str, temps: list[str]) -> None:
    """R-DEP-6: a writer's temp file whose writer is dead (the pid its name carries has no
    process) is removed, with one notice line; a live writer's, or one whose name carries
    no pid, is left. A live writer never loses its temp: its pid is alive while it runs."""
    dead = [t for t in temps if (pid := writer_pid(t)) is not None and writer_dead(pid)]
    if not dead:
        return
    removed = []
    try:
        with guarded.walk(ws.root, (INBOX_DIR, inbox)) as where:
            for name in dead:
                try:
                    where.unlink(name)
                except FileNotFoundError:
                    continue
                removed.append(f"{INBOX_DIR}/{inbox}/{name}")
    except (OSError, ContainmentError) as exc:
        detail = io_text(exc) if isinstance(exc, OSError) else str(exc)
        raise ScanError(f"remove temp files of dead writers in {inbox}: {detail}") from None
    if removed:
        notice(f"removed the temp file(s) of dead writers {', '.join(removed)} (R-DEP-6)")


def _flush(run: _Pass) -> Actor[None]:
    ws, launcher, report = run.ws, run.launcher, run.report
    registered: dict[str, AgentId] = dict(zip(run.agents, run.agents, strict=True))
    for name in _inbox_names(ws):
        # A registered agent's directory name is the id the ref listing guarded (R-ID-9):
        # its inbox as text, no path object for an empty inbox.
        aid = registered.get(name)
        temps: list[str] = []
        mail = pending(ws.inbox_root / name if aid is None else ws.inbox_text(aid), temps=temps)
        if temps:
            _remove_dead_temps(ws, name, temps)
        if not mail:
            continue
        if aid is None:
            # Any other name is guarded here, at the listing's edge (R-ID-9): a name that is
            # no id is debris, and so is an id with no agent, unless it was created after
            # the registry was read (R-SCAN-2).
            aid = as_agent_id(name)
        if aid is None or (name not in registered and not ws.agent_exists(aid)):
            try:
                present, lock = run.parts.acquire(ws.inbox_root / name)
            except LockError:
                present, lock = True, None
            if present and lock is None:
                continue  # a creation at work holds it: its goal, not debris (R-SCAN-12)
            if lock is not None:
                lock.release()
            report.debris.append(name)
            yield Passed(Point.SCAN_DEBRIS, name)
            continue
        try:
            outcome = yield from probe_actor(ws.root, aid, launcher)
        except (LockError, LaunchError) as exc:
            detail = exc.detail
            raise ScanError(f"flush (probe-and-launch) for {name}: {detail}") from None
        if outcome is ProbeOutcome.LAUNCHED:
            report.launched.append(aid)
        else:
            report.busy.append(aid)
        yield Passed(Point.SCAN_FLUSHED, name, outcome.value)




def scan_actor(
    ws: Workspace,
    launcher: Launcher,
    clock: Clock,
    parts: SweepParts | None = None,
    reading: DebtReading | None = None,
) -> Actor[ScanReport]:
    """R-SCAN-1: the whole pass as an actor: sweep every agent, then flush every inbox.

    ``parts`` and ``reading`` are the sweep's collaborators and its reply-debt reading
    (R-STEP-10); ``None``: the process defaults, read once, when the pass starts.

    Per agent: ``scan.driven``, or ``scan.held`` (``scan.no-inbox``), ``scan.assessed``
    (detail: the condition), the deposit's points and ``scan.swept`` when an obituary is
    written, ``scan.resent`` when a lost reply is re-sent, ``scan.released``, and a
    revival's probe; then per inbox: ``scan.debris``, or the probe's points and
    ``scan.flushed`` (detail: launched or busy).

    Points: ``Point.SCAN_DRIVEN``, ``Point.SCAN_HELD``, ``Point.SCAN_NO_INBOX``,
    ``Point.SCAN_ASSESSED``, ``Point.SCAN_SWEPT``, ``Point.SCAN_RESENT``,
    ``Point.SCAN_RELEASED``, ``Point.SCAN_ABANDONED``, ``Point.SCAN_DEBRIS``,
    ``Point.SCAN_FLUSHED``,
    ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``, ``Point.DEPOSIT_COLLIDED``,
    ``Point.DEPOSIT_PUBLISHED``, ``Point.DEPOSIT_MARKED``, ``Point.PROBE_BUSY``,
    ``Point.PROBE_ACQUIRED``, ``Point.PROBE_RELEASED``, ``Point.PROBE_LAUNCHED``.
    Always: none (an empty workspace passes no point).
    """
    parts = sweep_parts() if parts is None else parts
    reading = debt_reading() if reading is None else reading
    try:  # R-WS-9: shared lock files a killed git left, before any git call of the pass
        shared = gitlocks.clear_shared_locks(ws.root)
    except LernieError as exc:
        raise ScanError(str(exc)) from None
    if shared:
        notice(gitlocks.describe_shared(ws.root, shared))
    try:
        # One git call for every agent's tip and marks, names and object ids only; each
        # agent's are confirmed under its lock. What the objects are (a mark's commit, the
        # tip's subject) is read once, by a second call, only if some agent needs it.
        oids = RefOids.read(ws.git, ws.repo_git)
    except LernieError as exc:
        raise GitOpError("for-each-ref agents/", exc) from None
    try:  # <ws>/inbox, held for the sweep's probes; without it each probe walks from the root
        held: guarded.Dir | None = guarded.walk(ws.root, (INBOX_DIR,))
    except (OSError, ContainmentError):
        held = None
    look = gitlocks.LockLook(ws.repo_git, ws.agents_root)
    sweep_pass = _Pass(
        ws, launcher, clock, oids, None if held is None else held.fd, look, parts, reading
    )
    try:
        for agent in sweep_pass.agents:
            yield from _sweep_one(sweep_pass, agent)
    finally:
        look.close()
        if held is not None:
            held.close()
    yield from _abandoned(sweep_pass)
    yield from _flush(sweep_pass)
    return sweep_pass.report


def scan(ws: Workspace, launcher: Launcher, clock: Clock) -> ScanReport:
    """R-SCAN-1: :func:`scan_actor` run straight through."""
    return run(scan_actor(ws, launcher, clock))
