"""The reply debt: a prompt is answered once (R-DEBT-1..4; litany bl-82d8).

Two agents that answer each other's answers never stop. The brake is derived
from the agent's own transcript, never stored: the window a terminal response
answers is everything since the *previous* terminal response, and a reply is
owed iff something in that window asked this agent for something — a plain
message from somebody else, or an own child's result. A foreign reply (a result
from an agent this one did not dispatch) and a self-note ask nothing. An agent
that has never answered always owes.

Evidence that cannot be read is an error, never "owes nothing".
"""

from __future__ import annotations

__all__ = ["Entry", "owes_a_reply", "read_bytes", "read_entries", "read_text"]

from collections.abc import Sequence

from lernie_ref.core.entry import entry_blocks, has_tool_use
from lernie_ref.core.errors import EntryError, TranscriptError
from lernie_ref.core.frontmatter import own_result_ref, terminal_ref_of
from lernie_ref.core.vocab import TOOL_ORIGIN
from lernie_ref.substrate.transcript import Entry, read_bytes, read_entries, read_text


def is_terminal_response(entry: Entry) -> bool:
    """R-DEBT-2: a non-``tool`` model entry whose blocks declare no ``tool_use``."""
    if entry.delivered or entry.origin == TOOL_ORIGIN:
        return False
    try:
        blocks = entry_blocks(read_bytes(entry))
    except EntryError as exc:
        raise TranscriptError(f"transcript entry {entry.path}: {exc}") from None
    return not has_tool_use(blocks)


def previous_terminal_seq(entries: Sequence[Entry]) -> int | None:
    """R-DEBT-2: the sequence of the terminal response before this event's own (the newest)."""
    seen_own = False
    for entry in entries:
        if not is_terminal_response(entry):
            continue
        if seen_own:
            return entry.seq
        seen_own = True
    return None


def asks_something(entry: Entry, agent_id: str) -> bool:
    """R-DEBT-3: a delivered entry asks iff it is not a self-note and is a plain message or an
    own child's result."""
    if entry.origin == agent_id:
        return False
    body = read_text(entry)
    if terminal_ref_of(body) is None:
        return True
    return own_result_ref(agent_id, entry.origin, body) is not None


def owes_a_reply(entries: Sequence[Entry], agent_id: str) -> bool:
    """R-DEBT-4: never answered → owes; else owes iff something in the window asks."""
    previous = previous_terminal_seq(entries)
    if previous is None:
        return True
    for entry in entries:
        if entry.seq <= previous:
            break
        if entry.delivered and asks_something(entry, agent_id):
            return True
    return False
