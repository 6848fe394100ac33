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
"""

from __future__ import annotations

import os
from collections.abc import Callable

from lernie_ref.actors.probe import ProbeOutcome, probe_actor
from lernie_ref.actors.release import notice
from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.actor import Actor, Passed, run
from lernie_ref.core.clock import Clock
from lernie_ref.core.entry import Entry as _Entry
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
from lernie_ref.core.sweep import (
    REVIVALS_FILE,
    REVIVE_LIMIT,
    Condition,
    ScanReport,
    UnsentReply,
    at_rest_mark,
    condition_of,
    guard_allows,
    obituary_owed,
    owed_launch,
    reply_may_be_unsent,
    reply_owed_to,
    revivals_in,
    revivals_record,
)
from lernie_ref.core.vocab import (
    INBOX_DIR,
    MARK_REF_PREFIX,
    MESSAGES_DIR,
    STEPS_DIR,
    Epitaph,
    MarkKind,
    Point,
)
from lernie_ref.core.warrant import Warrant, unanswered_tail, warrant_of
from lernie_ref.substrate import gitlocks, guarded
from lernie_ref.substrate.deposit import (
    deposit_result_actor,
    pending,
    writer_dead,
    writer_pid,
)
from lernie_ref.substrate.launcher import Launcher
from lernie_ref.substrate.lock import ExecutorLock, InboxAt, try_acquire_present
from lernie_ref.substrate.refsnap import (
    AgentOids,
    AgentRefs,
    ObjectFacts,
    RefFiles,
    RefOids,
    RefSnapshot,
    confirm,
)
from lernie_ref.substrate.transcript import (
    Transcript,
    commit_subject,
    entry_name,
    history_of,
    is_terminal_response,
    load,
    read_bytes,
    read_entries,
    read_text,
    recipient,
)
from lernie_ref.substrate.workspace import Workspace

if TYPE_CHECKING:
    from pathlib import Path

    Entry = _Entry[Path]

__all__ = [  # the pure decisions live in lernie_ref.core.sweep; re-exported here for callers
    "REVIVALS_FILE",
    "REVIVE_LIMIT",
    "Condition",
    "Refs",
    "ScanReport",
    "UnsentReply",
    "condition_of",
    "mark_value",
    "obituary_owed",
    "read_condition",
    "revivals_at",
    "scan",
    "scan_actor",
    "stray_terminal",
    "transcript_due",
    "unsent_reply",
    "work_due",
]

# --------------------------------------------------------------------- readers


def mark_value(ws: Workspace, kind: str, agent: str) -> str | None:
    """The commit ``refs/lernie/<kind>/<agent>`` names (``rev-parse --verify --quiet
    <mark>^{commit}``), or ``None`` when there is no such mark (or it names no commit).

    Read from the ref files and the loose object's type when they answer plainly
    (:meth:`~lernie_ref.substrate.refsnap.RefFiles.commit_of`), else asked of git."""
    if is_agent_id(agent):
        known, value = ws.ref_files.commit_of(f"{MARK_REF_PREFIX}{kind}/{agent}")
        if known:
            return value
    result = ws.git.run(
        ws.repo_git,
        ["rev-parse", "--verify", "--quiet", f"{MARK_REF_PREFIX}{kind}/{agent}^{{commit}}"],
        check=False,
    )
    if result.returncode != 0 or not result.stdout:
        return None
    return result.stdout


def transcript_due(ws: Workspace, agent: str, listed: Transcript | None = None) -> Warrant:
    """R-STEP-3 over the agent's worktree transcript (strays included: they were delivered).

    ``listed``: the agent's transcript as this hold already listed it (see :class:`Hold`)."""
    if listed is None:
        listed = Transcript(ws.worktree(agent))
    return warrant_of(history_of(load(listed.worktree, listed)))


def tip_of(ws: Workspace, agent: str) -> str:
    try:
        return ws.branch_tip(agent)
    except LernieError as exc:
        raise GitOpError("rev-parse branch tip", exc) from None


class Refs:
    """One agent's tip, marks and tip subject for this pass.

    From the pass's ref snapshot when :func:`~lernie_ref.substrate.refsnap.confirm` showed
    them unchanged under the agent's lock; otherwise each is asked of git when first needed,
    as the sweep always did. Read once per hold: only the holder moves them (R-SCAN-6), and
    the sweep reads them before its own deposit moves the returned mark.

    With ``oids`` (a call of :meth:`RefOids.confirm` under the lock, made when a decision
    first asks for a ref: a hold that needs none reads none) a mark's commit and the tip's
    subject come from the loose objects where they answer plainly (R-WS-5), else from
    ``facts`` (read once per pass, when first needed), and from git for an object id the
    facts do not cover.
    """

    def __init__(
        self,
        ws: Workspace,
        agent: str,
        confirmed: AgentRefs | None = None,
        *,
        oids: Callable[[], AgentOids | None] | None = None,
        facts: ObjectFacts | None = None,
    ) -> None:
        self._ws = ws
        self._agent = agent
        self._confirmed = confirmed
        self._confirm = oids
        self._oids: AgentOids | None = None
        self._facts = facts

    def _confirmed_oids(self) -> AgentOids | None:
        if self._confirm is not None:
            self._oids, self._confirm = self._confirm(), None
        return self._oids

    def tip(self) -> str:
        if self._confirmed is not None:
            return self._confirmed.tip
        oids = self._confirmed_oids()
        if oids is not None:
            return oids.tip
        return tip_of(self._ws, self._agent)

    def mark(self, kind: MarkKind) -> str | None:
        known = self._confirmed
        if known is None:
            oids = self._confirmed_oids()
            if oids is not None:
                oid = oids.mark(kind)
                if oid is None:  # no such ref: what rev-parse answers too
                    return None
                loose, value = self._ws.ref_files.peeled(oid)  # a loose object's type
                if loose:
                    return value
                if self._facts is not None:
                    plain, value = self._facts.commit(oid)
                    if plain:
                        return value
            return mark_value(self._ws, kind, self._agent)
        if kind is MarkKind.RETURNED:
            return known.returned
        if kind is MarkKind.BUDGET_EXHAUSTED:
            return known.budget
        return known.stopped

    def subject(self, tip: str) -> str:
        """The subject of commit ``tip`` (``git log -1 --format=%s``)."""
        if self._confirmed is not None and self._confirmed.tip == tip:
            return self._confirmed.subject
        subject = self._ws.ref_files.subject(tip)  # a loose commit's plain one-line subject
        if subject is not None:
            return subject
        oids = self._confirmed_oids()
        if oids is not None and oids.tip == tip and self._facts is not None:
            info = self._facts.info(tip)
            if info is not None:
                return info.subject
        return self._ws.git.run(self._ws.repo_git, ["log", "-1", "--format=%s", tip]).stdout


def read_condition(
    ws: Workspace, agent: str, refs: Refs | None = None, listed: Transcript | None = None
) -> tuple[Condition, str]:
    """Read one undriven agent's condition and its branch tip (the caller holds the lock)."""
    refs = refs or Refs(ws, agent)
    tip = refs.tip()
    return assess(ws, agent, refs, listed), tip


def assess(
    ws: Workspace,
    agent: str,
    refs: Refs,
    listed: Transcript | None = None,
    held: ExecutorLock | None = None,
) -> Condition:
    """R-SCAN-4: one undriven agent's condition (the caller holds the lock, ``held`` when
    it is at hand: the inbox is listed through its descriptor). The refs are read only
    when they can change the answer: with no mail and something due."""
    mail = len(pending(ws.inbox_text(agent), None if held is None else held.fd))
    due, budget_at_tip = Warrant.NOTHING_DUE, False
    if not mail:  # with mail pending the transcript does not matter (R-SCAN-4)
        try:
            due = transcript_due(ws, agent, listed)
        except LernieError as exc:
            raise ScanError(f"read transcript of {agent}: {exc}") from None
        if due is not Warrant.NOTHING_DUE:  # nothing due is at rest whatever the marks say
            # A stop is at rest too (R-SCAN-4, D-19).
            budget_at_tip = at_rest_mark(
                refs.tip(), refs.mark(MarkKind.BUDGET_EXHAUSTED), refs.mark(MarkKind.STOPPED)
            )
    return condition_of(driven=False, pending_count=mail, due=due, budget_at_tip=budget_at_tip)


_MAY_OWE = (Condition.AT_REST, Condition.MAIL)
"""Conditions under which R-SCAN-9 (and R-SCAN-11) look for a result owed: an agent at rest,
pending mail or not (R-SCAN-4: mail is not a death, so the agent is at rest)."""


def may_owe_a_result(agent: str, registry: frozenset[str], listed: Transcript) -> bool:
    """Whether R-SCAN-9, R-SCAN-10's stray or R-SCAN-11 can apply to an agent at rest
    (R-SCAN-4: with or without pending mail, which is no death).

    Each needs a recipient: R-SCAN-11 looks for a result in the registered parent's mail or
    in the newest terminal response's recipient's; R-SCAN-9 and the stray need the newest
    entry to be a terminal response. With no registered parent and a newest entry that is
    not a terminal response (or none), none applies, and the sweep reads no ref for the
    agent. ``True`` when the entry cannot be judged: the full checks then say why.
    """
    if parent_of(agent) in registry:
        return True
    try:
        entries = listed.everything()
        return bool(entries) and is_terminal_response(entries[0])
    except LernieError:
        return True


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


def _commits_entry(ws: Workspace, tip: str, subject: str, newest: Entry, agent: str) -> bool:
    """The tip is the newest entry's own commit (R-TR-3) or the stray recovery that
    committed it (R-DRAIN-2): a stray recovery's commit counts only when the entry is
    among the files it added. An earlier recovery at the tip, with the newest entry renamed
    after it and never committed, is not that entry's commit (the entry is a stray)."""
    from lernie_ref.actors.drain import STRAY_SUBJECT  # the drain's own text, loaded when needed

    if subject == commit_subject(newest.seq, newest.origin, agent):
        return True
    if subject != STRAY_SUBJECT.format(agent=agent):
        return False
    try:
        added = ws.git.run(
            ws.repo_git, ["diff-tree", "--no-commit-id", "--name-only", "-r", tip]
        ).stdout.splitlines()
    except LernieError as exc:
        raise GitOpError("stray recovery diff-tree", exc) from None
    return f"{MESSAGES_DIR}/{newest.name}" in added


def unsent_reply(
    ws: Workspace,
    agent: str,
    tip: str,
    registry: frozenset[str] | Callable[[], frozenset[str]],
    refs: Refs | None = None,
    listed: Transcript | None = None,
) -> UnsentReply | None:
    """R-SCAN-9: the final response at ``agent``'s tip that never reached its recipient, if any.

    All must hold: the returned mark is not at the tip; the newest transcript entry is
    a terminal response and the tip is its own commit (R-TR-3; an uncommitted entry is
    left to the next hop's stray recovery); a reply is owed to a registered agent
    (R-ADDR-3, R-DEBT-4); and no result from ``agent`` carrying the tip is pending for,
    or delivered to, that agent (a deposit whose mark was lost is not sent twice).

    ``registry``: the registered agents, or how to read them (read only when a recipient
    is named: most calls end before that).
    """
    refs = refs or Refs(ws, agent)
    returned = refs.mark(MarkKind.RETURNED)
    if returned == tip:
        return None
    worktree = ws.worktree(agent)
    entries = read_entries(worktree) if listed is None else listed.everything()
    if not entries or not is_terminal_response(entries[0]):
        return None
    newest = entries[0]
    own_commit = _commits_entry(ws, tip, refs.subject(tip), newest, agent)
    if not reply_may_be_unsent(returned, tip, True, own_commit):
        return None
    to = recipient(worktree, agent, Epitaph.FINAL_RESPONSE)
    if to is None:
        return None
    if callable(registry):
        registry = registry()
    registered = to in registry
    on_disk = registered and _result_on_disk(ws, to, agent, tip)
    if not reply_owed_to(to, registry, on_disk):
        return None
    return UnsentReply(to, text_of(entry_blocks(read_bytes(newest))))


# ------------------------------------------------------------------ mark repair


def landed_result(
    ws: Workspace,
    agent: str,
    tip: str,
    registered: Callable[[str], bool],
    listed: Transcript | None = None,
) -> str | None:
    """R-SCAN-11: the agent whose inbox or transcript holds a result from ``agent``
    carrying ``tip`` (its parent, for an obituary; the final response's recipient, when
    the newest entry is one), or ``None``. The caller has seen the returned mark elsewhere."""
    candidates: list[str] = []
    parent = parent_of(agent)
    if parent is not None and registered(parent):
        candidates.append(parent)
    entries = read_entries(ws.worktree(agent)) if listed is None else listed.everything()
    if entries and is_terminal_response(entries[0]):
        to = recipient(ws.worktree(agent), agent, Epitaph.FINAL_RESPONSE)
        if to is not None and to not in candidates and registered(to):
            candidates.append(to)
    return next((to for to in candidates if _result_on_disk(ws, to, agent, tip)), None)


def repair_returned_mark(ws: Workspace, agent: str, tip: str, to: str) -> None:
    """R-SCAN-11: move ``refs/lernie/returned/<agent>`` to ``tip``, whose result already
    reached ``to`` (the caller holds the agent's lock, R-WS-8), with one notice line."""
    try:
        ws.set_mark(MarkKind.RETURNED, agent, tip)
    except LernieError as exc:
        raise GitOpError("returned mark repair update-ref", exc) from None
    notice(
        f"{agent}: its result carrying {tip[:12]} already reached {to}; moved its returned "
        "mark, left behind, to that tip (R-SCAN-11)"
    )


# --------------------------------------------------------------------- revival


def work_due(ws: Workspace, agent: str, listed: Transcript | None = None) -> bool:
    """R-SCAN-10: a hop would take a step (:func:`~lernie_ref.core.sweep.owed_launch` over
    the agent's worktree transcript).

    I-19: what a crash leaves with work due is what this scan revives, so no agent stays
    dead with work due once the operator has run ``lernie scan``."""
    history = history_of(load(ws.worktree(agent), listed))
    return owed_launch(warrant_of(history), bool(unanswered_tail(history)))


def stray_terminal(
    ws: Workspace,
    agent: str,
    tip: str,
    refs: Refs | None = None,
    listed: Transcript | None = None,
) -> bool:
    """R-SCAN-10: the newest entry is a terminal response that is not in the tip's tree:
    its driver died between the entry's rename and its commit (an uncommitted stray).

    When the tip is that entry's own commit (its subject says so, and the file carries
    the entry's canonical name) the entry is in the tip's tree; otherwise git is asked.
    """
    entries = read_entries(ws.worktree(agent)) if listed is None else listed.everything()
    if not entries or not is_terminal_response(entries[0]):
        return False
    newest = entries[0]
    name = newest.path.name
    if (
        refs is not None
        and name == entry_name(newest.seq, newest.origin, newest.delivered)
        and refs.subject(tip) == commit_subject(newest.seq, newest.origin, agent)
    ):
        return False
    path = f"{tip}:{MESSAGES_DIR}/{name}"
    return ws.git.run(ws.repo_git, ["cat-file", "-e", path], check=False).returncode != 0


def revivals_at(ws: Workspace, agent: str, tip: str) -> int:
    """How many times the scan relaunched ``agent`` at ``tip`` (0 after any progress).

    Read as a regular file, never through a link (R-WS-7); anything unreadable reads 0."""
    try:
        with guarded.walk(ws.root, (STEPS_DIR, require_agent_id(agent))) as steps:
            text = steps.read_bytes(REVIVALS_FILE).decode("utf-8")
    except (OSError, UnicodeDecodeError, ContainmentError):
        return 0
    return revivals_in(text, tip)


def _record_revival(ws: Workspace, agent: str, tip: str, count: int) -> None:
    """Write ``<tip> <count>`` by rename (the caller holds the agent's lock), through the
    guarded walk: ``steps/<id>/`` and the file are never reached through a link (R-WS-7)."""
    temp = f".{REVIVALS_FILE}.tmp"
    try:
        with guarded.walk(ws.root, (STEPS_DIR, require_agent_id(agent)), create=True) as steps:
            steps.replace(temp, revivals_record(tip, count).encode())
            steps.rename(temp, steps, REVIVALS_FILE)
    except OSError as exc:
        raise ScanError(f"record revival of {agent}: {io_text(exc)}") from None


def _kill_tool_leftovers(ws: Workspace, agent: str, listed: Transcript | None) -> None:
    """R-TOOL-7 under the sweep's hold: a dead executor's open tool window may have left
    its tool's processes running; they die now, before the revived hop settles the calls
    as ``died``."""
    if not unanswered_tail(history_of(load(ws.worktree(agent), listed))):
        return
    from lernie_ref.substrate import shell  # off the scan's light path (R-CLI-5)

    killed = shell.kill_marked(ws.root, agent)
    if killed:
        notice(
            f"killed {len(killed)} leftover tool process(es) of [{agent}] whose executor "
            "died mid-call (R-TOOL-7)"
        )


def _revive(ws: Workspace, agent: str, tip: str, report: ScanReport) -> bool:
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


def _sweep_one(
    ws: Workspace,
    agent: str,
    registry: frozenset[str],
    report: ScanReport,
    clock: Clock,
    launcher: Launcher,
    snapshot: RefSnapshot | RefOids | None = None,
    files: RefFiles | None = None,
    facts: ObjectFacts | None = None,
    inbox_root: int | None = None,
    look: gitlocks.LockLook | None = None,
) -> Actor[None]:
    """One agent's sweep under its lock (R-SCAN-4, R-SCAN-5, R-SCAN-6).

    I-16: ``died`` goes out only while this pass holds the agent's lock, with no pending
    deposit and work due or an unpaired call at the tip. I-15: the obituary moves the
    returned mark to the tip (and is never repeated when it is already on disk), so a
    second pass with nothing new deposits nothing. R-SCAN-8's residuals are read as the
    SPEC says: a removed worktree is an empty transcript, a stopped root reads as a death.

    Each reading is made once per hold and serves every decision of it (R-SCAN-6: only
    the holder moves the agent's refs and transcript): the refs are confirmed once, and
    the transcript is listed once (:class:`~lernie_ref.substrate.transcript.Transcript`)
    for the condition, the mark repair, the unsent reply, the stray and the revival.
    """
    inbox = ws.inbox_text(agent)  # as text: most agents need no path object at all
    lock = None
    revive = False
    # From the pass's descriptor of <ws>/inbox when it holds one (R-WS-7: the walk's last
    # step); the full walk otherwise, and for anything but a directory there.
    probe = inbox if inbox_root is None else InboxAt(inbox_root, agent, inbox)
    try:
        # no directory: nobody can hold the lock, and none is created (R-SCAN-6)
        present, lock = try_acquire_present(probe)
    except LockError as exc:
        raise ScanError(f"probe executor lock at {inbox}: {exc.detail}") from None
    if present and lock is None:
        report.driven.append(agent)
        yield Passed(Point.SCAN_DRIVEN, agent)
        return
    try:
        # No inbox directory: nothing to hold (and no executor can hold it either).
        yield Passed(Point.SCAN_HELD if lock is not None else Point.SCAN_NO_INBOX, agent)
        cleared = lock is None

        def clear_git_locks() -> None:
            """R-WS-8: the sweep holds the lock, so it clears like a driver, before it
            first reads the agent's refs or writes anything of it: a git of a dead holder
            that outlived it may still be moving the refs, and the lock file it holds
            shows it. A hold that does neither leaves stale ref locks to the agent's next
            holder, which clears them before its own first git call."""
            nonlocal cleared
            if not cleared:
                cleared = True
                removed = gitlocks.clear_stale_locks(ws.root, ws.worktree(agent), agent)
                if removed:
                    notice(gitlocks.describe(ws.root, removed, agent))

        # The worktree's lock files are looked at before the transcript is read: a git of a
        # dead holder still writing the worktree (a commit, a re-created worktree) is
        # waited for first, exactly as before any git call (R-WS-8).
        worktree = ws.worktree_text(agent)
        if not cleared and (
            look.exists(agent)
            if look is not None
            else gitlocks.worktree_lock_exists(ws.repo_git, worktree, agent)
        ):
            clear_git_locks()

        # Read with the lock held: the snapshot's values count only once confirmed (R-SCAN-6).
        if files is None or snapshot is None:
            clear_git_locks()
            refs = Refs(ws, agent)
        elif isinstance(snapshot, RefOids):
            oids = snapshot

            def confirmed() -> AgentOids | None:
                if not cleared and gitlocks.ref_lock_exists(ws.repo_git, agent):
                    clear_git_locks()  # the worktree's were looked at already
                assert files is not None
                return oids.confirm(files, agent)

            refs = Refs(ws, agent, oids=confirmed, facts=facts)
        else:
            clear_git_locks()
            refs = Refs(ws, agent, confirm(snapshot, files, agent))
        listed = Transcript(worktree)  # listed once, when first read
        condition = assess(ws, agent, refs, listed, lock)
        yield Passed(Point.SCAN_ASSESSED, agent, condition.value)
        if condition is Condition.DIED_MID_WORK:
            tip = refs.tip()
            parent = parent_of(agent)
            if parent not in registry:
                parent = None  # R-SCAN-1: a parent with no ref makes the agent a root
            if parent is None:
                report.silent_deaths.append(agent)
            elif not obituary_owed(condition, parent, refs.mark(MarkKind.RETURNED), tip):
                pass
            elif _result_on_disk(ws, parent, agent, tip):
                # a kill between the obituary's publish and its mark (R-SCAN-11)
                if lock is not None:
                    clear_git_locks()
                    repair_returned_mark(ws, agent, tip, parent)
            else:
                report.silent_deaths.append(agent)
                clear_git_locks()
                yield from deposit_result_actor(
                    ws.root, parent, agent, Epitaph.DIED, tip, None, clock, ws.git
                )
                report.swept.append(agent)
                yield Passed(Point.SCAN_SWEPT, agent, parent)
            if lock is not None:
                try:
                    due = work_due(ws, agent, listed)
                    if due:
                        _kill_tool_leftovers(ws, agent, listed)
                except LernieError as exc:
                    raise ScanError(f"read transcript of {agent}: {exc}") from None
                if due:
                    revive = _revive(ws, agent, tip, report)
        elif condition in _MAY_OWE and may_owe_a_result(agent, registry, listed):
            # R-SCAN-9 also with mail pending: the hop would re-send it too (R-DRAIN-8)
            tip = refs.tip()
            if lock is not None:  # R-SCAN-11: a result whose mark a kill left behind
                returned = refs.mark(MarkKind.RETURNED)
                try:
                    landed = None
                    if returned != tip:
                        landed = landed_result(ws, agent, tip, registry.__contains__, listed)
                except LernieError as exc:
                    raise ScanError(f"returned mark repair of {agent}: {exc}") from None
                if landed is not None:
                    clear_git_locks()
                    try:
                        repair_returned_mark(ws, agent, tip, landed)
                    except LernieError as exc:
                        raise ScanError(f"returned mark repair of {agent}: {exc}") from None
            try:
                unsent = unsent_reply(ws, agent, tip, registry, refs, listed)
                stray = (
                    lock is not None
                    and condition is Condition.AT_REST  # mail: the flush launches it anyway
                    and stray_terminal(ws, agent, tip, refs, listed)
                )
            except LernieError as exc:
                raise ScanError(f"read transcript of {agent}: {exc}") from None
            if stray:  # R-SCAN-10: the hop recovers it and finishes its exit protocol
                revive = _revive(ws, agent, tip, report)
            if unsent is not None:
                clear_git_locks()
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


def _abandoned(ws: Workspace, registry: frozenset[str], report: ScanReport) -> Actor[None]:
    """R-SCAN-12: the remains of a creation (``prompt``, ``dispatch``) killed before its
    commit point, the create-only ref update (R-PROBE-6): a worktree or worktree admin
    directory no ref names. Its creator held the new agent's lock from before the
    worktree was made until after the ref was; so with that lock free (or no inbox at
    all) and still no ref, the creator is dead and the agent will never exist. Its
    worktree, admin directory, branch lock file and inbox (the goal's deposit, a temp)
    are removed, with one notice line each; a held lock is a creation at work: left."""
    for name in ws.unborn_candidates():
        if name in registry:
            continue
        try:
            present, lock = try_acquire_present(ws.inbox_text(name))
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


def _inbox_names(ws: Workspace) -> list[str]:
    try:
        with os.scandir(ws.inbox_root) as it:
            return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
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


def _flush(
    ws: Workspace, registry: frozenset[str], launcher: Launcher, report: ScanReport
) -> Actor[None]:
    for name in _inbox_names(ws):
        # a registered agent's inbox as text: no path object for an empty inbox
        temps: list[str] = []
        mail = pending(ws.inbox_text(name) if name in registry else ws.inbox_root / name,
                       temps=temps)
        if temps:
            _remove_dead_temps(ws, name, temps)
        if not mail:
            continue
        # An agent created after the registry was read is not debris (R-SCAN-2).
        if name not in registry and not ws.agent_exists(name):
            try:
                present, lock = try_acquire_present(ws.inbox_root / name)
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
        snapshot = RefOids.read(ws.git, ws.repo_git)
    except LernieError as exc:
        raise GitOpError("for-each-ref agents/", exc) from None
    # A ref whose name is not one path component (``agents/x/y``) names no agent.
    agents = [a for a in snapshot.agent_ids() if is_agent_id(a)]
    registry = frozenset(agents)
    files = ws.ref_files
    facts = ObjectFacts(ws.git, ws.repo_git)
    report = ScanReport()
    try:  # <ws>/inbox, held for the sweep's probes; without it each probe walks from the root
        held: guarded.Dir | None = guarded.walk(ws.root, (INBOX_DIR,))
    except (OSError, ContainmentError):
        held = None
    look = gitlocks.LockLook(ws.repo_git, ws.agents_root)
    try:
        for agent in agents:
            yield from _sweep_one(
                ws,
                agent,
                registry,
                report,
                clock,
                launcher,
                snapshot,
                files,
                facts,
                None if held is None else held.fd,
                look,
            )
    finally:
        look.close()
        if held is not None:
            held.close()
    yield from _abandoned(ws, registry, report)
    yield from _flush(ws, registry, launcher, report)
    return report


def scan(ws: Workspace, launcher: Launcher, clock: Clock) -> ScanReport:
    """R-SCAN-1: :func:`scan_actor` run straight through."""
    return run(scan_actor(ws, launcher, clock))
