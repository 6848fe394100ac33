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

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lernie_ref.core.entry import entry_blocks, has_tool_use
from lernie_ref.core.errors import EntryError, TranscriptError, io_text
from lernie_ref.core.frontmatter import own_result_ref, parse_entry_name, terminal_ref_of
from lernie_ref.core.vocab import MESSAGES_DIR, TOOL_ORIGIN


@dataclass(frozen=True)
class Entry:
    """One transcript entry (R-TR-1): ``delivered`` for ``.md``, else the agent's own ``.json``."""

    seq: int
    origin: str
    delivered: bool
    path: Path


def read_entries(worktree: Path) -> list[Entry]:
    """R-DEBT-1: every legible entry of ``<worktree>/messages/``, newest first.

    A missing directory is an empty transcript; a ``messages`` that is not a
    directory, or cannot be listed, raises :class:`TranscriptError`.
    """
    directory = Path(worktree) / MESSAGES_DIR
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise TranscriptError(f"read transcript {directory}: {io_text(exc)}") from None
    out: list[Entry] = []
    for name in names:
        parsed = parse_entry_name(name)
        if parsed is not None:
            seq, origin, delivered = parsed
            out.append(Entry(seq, origin, delivered, directory / name))
    out.sort(key=lambda e: (e.seq, e.origin, e.delivered), reverse=True)
    return out


def read_bytes(entry: Entry) -> bytes:
    try:
        return entry.path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"read transcript entry {entry.path}: {io_text(exc)}") from None


def read_text(entry: Entry) -> str:
    """The entry's text; unreadable or non-UTF-8 → :class:`TranscriptError`."""
    data = read_bytes(entry)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TranscriptError(f"transcript entry {entry.path} is not UTF-8 text") from None


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
