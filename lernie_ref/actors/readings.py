"""Readings of one agent's state from disk: its tip and marks, its transcript's warrant,
its condition, the result it may owe, its revival count (R-SCAN-4, R-SCAN-6, R-SCAN-9,
R-SCAN-10, R-STEP-3).

The scan's sweep (:mod:`lernie_ref.actors.sweep`) reads an agent through these while it
holds the agent's lock; the hop (:mod:`lernie_ref.actors.hop`) reads its own agent's
unsent reply and marks; ``lernie status`` and ``prompt --wait`` (:mod:`lernie_ref.operator`)
read without a lock, for display. Nothing here writes.

Each reading is made once per hold and serves every decision of it (R-SCAN-6: only the
holder moves the agent's refs and transcript): :class:`Refs` reads the tip and marks
once, from the pass's snapshot when it is confirmed under the lock, else from git's own
files or git; a :class:`~lernie_ref.substrate.transcript.Transcript` (``listed``) lists
the transcript once, when first read.
"""

from __future__ import annotations

from collections.abc import Callable

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.debt import READING, DebtReading
from lernie_ref.core.entry import Entry as _Entry
from lernie_ref.core.entry import entry_blocks, text_of
from lernie_ref.core.errors import ContainmentError, GitOpError, LernieError, ScanError
from lernie_ref.core.frontmatter import terminal_ref_of
from lernie_ref.core.ids import AgentId, parent_of
from lernie_ref.core.sweep import (
    REVIVALS_FILE,
    Condition,
    UnsentReply,
    at_rest_mark,
    condition_of,
    owed_launch,
    reply_may_be_unsent,
    reply_owed_to,
    revivals_in,
)
from lernie_ref.core.vocab import MARK_REF_PREFIX, MESSAGES_DIR, STEPS_DIR, Epitaph, MarkKind
from lernie_ref.core.warrant import Warrant, unanswered_tail, warrant_of
from lernie_ref.substrate import guarded
from lernie_ref.substrate.deposit import pending
from lernie_ref.substrate.lock import ExecutorLock
from lernie_ref.substrate.refsnap import AgentOids, AgentRefs, ObjectFacts
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

__all__ = [
    "Refs",
    "assess",
    "mark_value",
    "may_owe_a_result",
    "result_on_disk",
    "revivals_at",
    "stray_terminal",
    "tip_of",
    "transcript_due",
    "unsent_reply",
    "work_due",
]

# ------------------------------------------------------------------ refs and marks


def mark_value(ws: Workspace, kind: str, agent: AgentId) -> str | None:
    """The commit ``refs/lernie/<kind>/<agent>`` names (``rev-parse --verify --quiet
    <mark>^{commit}``), or ``None`` when there is no such mark (or it names no commit):
    the one mark reader (the sweep's :class:`Refs` falls back to it, the hop and
    ``status`` call it).

    Read from the ref files and the loose object's type when they answer plainly
    (:meth:`~lernie_ref.substrate.reffiles.RefFiles.commit_of`), else asked of git."""
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


def transcript_due(ws: Workspace, agent: AgentId, listed: Transcript | None = None) -> Warrant:
    """R-STEP-3 over the agent's worktree transcript (strays included: they were delivered).

    ``listed``: the agent's transcript as the caller's hold already listed it."""
    if listed is None:
        listed = Transcript(ws.worktree(agent))
    return warrant_of(history_of(load(listed.worktree, listed)))


def tip_of(ws: Workspace, agent: AgentId) -> str:
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
        agent: AgentId,
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


# ----------------------------------------------------------------- the condition


def assess(
    ws: Workspace,
    agent: AgentId,
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


def parking_reported(ws: Workspace, agent: AgentId, tip: str) -> bool:
    """R-TERM-7: a ``stopped`` or ``budget-exhausted`` event at ``tip`` repeats one already
    reported: a parking mark (either kind) is at the tip and so is the returned mark (the
    parent has a result carrying this tip). Read before the event sets its own mark."""
    if mark_value(ws, MarkKind.RETURNED, agent) != tip:
        return False
    return tip in (
        mark_value(ws, MarkKind.STOPPED, agent),
        mark_value(ws, MarkKind.BUDGET_EXHAUSTED, agent),
    )


# ------------------------------------------------------------------ results owed


def may_owe_a_result(
    agent: AgentId, registry: frozenset[str], listed: Transcript, reading: DebtReading = READING
) -> bool:
    """Whether R-SCAN-9, R-SCAN-10's stray or R-SCAN-11 can apply to an agent at rest
    (R-SCAN-4: with or without pending mail, which is no death).

    Each needs a recipient: R-SCAN-11 looks for a result in the registered parent's mail or
    in the newest terminal response's recipient's; R-SCAN-9 and the stray need the newest
    entry to be a terminal response. With no registered parent and a newest entry that is
    not a terminal response (or none), none applies, and the sweep reads no ref for the
    agent. ``True`` when the entry cannot be judged: the full checks then say why.
    ``reading`` is the caller's debt reading (R-STEP-10), as in the readings below.
    """
    if parent_of(agent) in registry:
        return True
    try:
        entries = listed.everything()
        return bool(entries) and is_terminal_response(entries[0], reading)
    except LernieError:
        return True


def result_on_disk(ws: Workspace, to: AgentId, sender: str, terminal_ref: str) -> bool:
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


def _commits_entry(ws: Workspace, tip: str, subject: str, newest: Entry, agent: AgentId) -> bool:
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
    agent: AgentId,
    tip: str,
    registry: frozenset[str] | Callable[[], frozenset[str]],
    refs: Refs | None = None,
    listed: Transcript | None = None,
    reading: DebtReading = READING,
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
    if not entries or not is_terminal_response(entries[0], reading):
        return None
    newest = entries[0]
    own_commit = _commits_entry(ws, tip, refs.subject(tip), newest, agent)
    if not reply_may_be_unsent(returned, tip, True, own_commit):
        return None
    to = recipient(worktree, agent, Epitaph.FINAL_RESPONSE, reading)
    if to is None:
        return None
    if callable(registry):
        registry = registry()
    registered = to in registry
    on_disk = registered and result_on_disk(ws, to, agent, tip)
    if not reply_owed_to(to, registry, on_disk):
        return None
    return UnsentReply(to, text_of(entry_blocks(read_bytes(newest))))

# ----------------------------------------------------------------------- revival


def work_due(ws: Workspace, agent: AgentId, listed: Transcript | None = None) -> bool:
    """R-SCAN-10: a hop would take a step (:func:`~lernie_ref.core.sweep.owed_launch` over
    the agent's worktree transcript).

    I-19: what a crash leaves with work due is what this scan revives, so no agent stays
    dead with work due once the operator has run ``lernie scan``."""
    history = history_of(load(ws.worktree(agent), listed))
    return owed_launch(warrant_of(history), bool(unanswered_tail(history)))


def stray_terminal(
    ws: Workspace,
    agent: AgentId,
    tip: str,
    refs: Refs | None = None,
    listed: Transcript | None = None,
    reading: DebtReading = READING,
) -> bool:
    """R-SCAN-10: the newest entry is a terminal response that is not in the tip's tree:
    its driver died between the entry's rename and its commit (an uncommitted stray).

    When the tip is that entry's own commit (its subject says so, and the file carries
    the entry's canonical name) the entry is in the tip's tree; otherwise git is asked.
    """
    entries = read_entries(ws.worktree(agent)) if listed is None else listed.everything()
    if not entries or not is_terminal_response(entries[0], reading):
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


def revivals_at(ws: Workspace, agent: AgentId, tip: str) -> int:
    """How many times the scan relaunched ``agent`` at ``tip`` (0 after any progress).

    Read as a regular file, never through a link (R-WS-7); anything unreadable reads 0."""
    try:
        with guarded.walk(ws.root, (STEPS_DIR, agent)) as steps:
            text = steps.read_bytes(REVIVALS_FILE).decode("utf-8")
    except (OSError, UnicodeDecodeError, ContainmentError):
        return 0
    return revivals_in(text, tip)
