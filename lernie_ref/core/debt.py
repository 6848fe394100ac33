"""The reply debt and reply addressing: decisions over entries in memory (bl-82d8, bl-a96a).

The reply debt (I-12: a reply is owed once). Two agents that answer each other's
answers never stop. The brake is derived from the agent's own transcript, never
stored: the window a terminal response answers is everything since the *previous*
terminal response, and a reply is owed iff something in that window asked this
agent for something — a plain message from somebody else, or an own child's
result. A foreign reply (a result from an agent this one did not dispatch) and a
self-note ask nothing. An agent that has never answered always owes.

Reply addressing (I-11: one address per terminal event). An obituary reports to
the dispatcher; a reply answers the last prompter, if a reply is owed at all.

The two decisions every reader of the debt shares (the hop's exit protocol and its
lost-reply check, the sweep, ``status``, the reply faces) go through one
:class:`DebtReading` (R-STEP-10): the terminal-response test (R-DEBT-2) and the debt
(R-DEBT-4), with production's as the defaults; each reader is given the reading with
its dependencies (:func:`reading` is the process default, read once when they are built).

Every function here takes the transcript as entries newest first (the order
R-DEBT-1 fixes) and reads an entry's bytes only when the rule looks at them, in
the order it looks: a lazily supplied body means a decision over a long
transcript reads a handful of files. Evidence that cannot be read is an error
(:class:`~lernie_ref.core.errors.TranscriptError`), never "owes nothing". Nothing
here touches a file: the I/O layer lists ``messages/`` and hands the entries in.
"""

from __future__ import annotations

__all__ = [
    "READING",
    "DebtReading",
    "asks_something",
    "is_terminal_response",
    "last_prompter",
    "owes_a_reply",
    "previous_terminal_seq",
    "reading",
    "recipient",
]

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.entry import has_tool_use
from lernie_ref.core.frontmatter import own_result_ref, terminal_ref_of
from lernie_ref.core.ids import parent_of
from lernie_ref.core.parts import installed
from lernie_ref.core.record import record
from lernie_ref.core.vocab import TOOL_ORIGIN, USER_SENDER, Epitaph

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from lernie_ref.core.entry import Entry

    Entries = Iterable[Entry[object]]
    """A transcript, newest first. :func:`recipient` iterates it twice, so pass a
    collection (or a re-iterable reader), not a one-shot iterator."""
    Terminal = Callable[[Entry[object]], bool]


def is_terminal_response(entry: Entry[object]) -> bool:
    """R-DEBT-2: a non-``tool`` model entry whose blocks declare no ``tool_use``.

    Only such a model entry is read; unreadable bytes raise (R-DEBT-1).
    """
    if entry.delivered or entry.origin == TOOL_ORIGIN:
        return False
    return not has_tool_use(entry.model_blocks())


def previous_terminal_seq(
    entries: Entries, terminal: Terminal = is_terminal_response
) -> int | None:
    """R-DEBT-2: the sequence of the terminal response before this event's own (the newest)."""
    seen_own = False
    for entry in entries:
        if not terminal(entry):
            continue
        if seen_own:
            return entry.seq
        seen_own = True
    return None


def asks_something(entry: Entry[object], agent_id: str) -> bool:
    """R-DEBT-3: a delivered entry asks iff it is not a self-note and is a plain message or an
    own child's result (R-DEP-10)."""
    if entry.origin == agent_id:
        return False
    body = entry.strict_text()
    if terminal_ref_of(body) is None:
        return True
    return own_result_ref(agent_id, entry.origin, body) is not None


def owes_a_reply(
    entries: Entries, agent_id: str, terminal: Terminal = is_terminal_response
) -> bool:
    """R-DEBT-4: never answered → owes; else owes iff something in the window asks.

    One pass from the newest entry to the previous terminal response (R-DEBT-2),
    reading the model entries on the way; the delivered entries passed are kept
    unread, then read newest first until one asks (R-DEBT-3). Nothing older than the
    previous terminal response is read. ``terminal`` is the reading's R-DEBT-2 test.
    """
    passed: list[Entry[object]] = []
    previous: int | None = None
    seen_own = False
    for entry in entries:
        if entry.delivered:
            passed.append(entry)
        elif terminal(entry):
            if seen_own:
                previous = entry.seq
                break
            seen_own = True
    if previous is None:
        return True
    for entry in passed:
        if entry.seq <= previous:
            break
        if asks_something(entry, agent_id):
            return True
    return False


def last_prompter(entries: Entries, agent_id: str) -> str | None:
    """R-ADDR-2: the newest delivered entry that is neither a self-note nor a result message.

    Not windowed: the search runs back past earlier terminal responses if it must.
    """
    for entry in entries:
        if not entry.delivered or entry.origin == agent_id:
            continue
        if terminal_ref_of(entry.strict_text()) is None:
            return entry.origin
    return None


def recipient(
    entries: Entries, agent_id: str, epitaph: str, debt: DebtReading | None = None
) -> str | None:
    """Where this terminal event's result goes; ``None`` = no deposit, no revival.

    R-ADDR-1: an obituary goes to ``parent_of(id)`` without reading the transcript
    (``entries`` is not iterated, so an unreadable transcript cannot stop it).
    R-ADDR-3: a final response goes nowhere unless a reply is owed (R-DEBT-4); then
    to the last prompter (R-ADDR-2), nowhere if that is ``user``, and to
    ``parent_of(id)`` when there is no prompter. The debt is ``debt``'s (production's
    :data:`READING` when ``None``).
    """
    if str(epitaph) != Epitaph.FINAL_RESPONSE:
        return parent_of(agent_id)
    if not (debt or READING).owes_a_reply(entries, agent_id):
        return None
    prompter = last_prompter(entries, agent_id)
    if prompter == USER_SENDER:
        return None
    if prompter is not None:
        return prompter
    return parent_of(agent_id)


@record(frozen=True)
class DebtReading:
    """The reply-debt reading every reader of the debt shares (R-STEP-10): ``terminal``
    (R-DEBT-2) and ``owes`` (R-DEBT-4, given the reading's ``terminal``), production's by
    default."""

    terminal: Terminal = is_terminal_response
    owes: Callable[[Entries, str, Terminal], bool] = owes_a_reply

    def is_terminal_response(self, entry: Entry[object]) -> bool:
        """R-DEBT-2 as this reading has it."""
        return self.terminal(entry)

    def owes_a_reply(self, entries: Entries, agent_id: str) -> bool:
        """R-DEBT-4 as this reading has it."""
        return self.owes(entries, agent_id, self.terminal)

    def recipient(self, entries: Entries, agent_id: str, epitaph: str) -> str | None:
        """R-ADDR-1, R-ADDR-3 over this reading's debt (:func:`recipient`)."""
        return recipient(entries, agent_id, epitaph, self)


READING = DebtReading()
"""Production's reading."""


def reading() -> DebtReading:
    """The process default reading: :data:`READING` unless a test build installed another
    (``lernie_ref.testing.parts_installed``). Read once when a reader's dependencies are
    built."""
    return installed(DebtReading, READING)
