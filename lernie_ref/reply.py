"""Reply addressing: one address per terminal event (R-ADDR-1..3; bl-a96a).

An obituary (``stopped``, ``budget-exhausted``, ``died``) reports to the
dispatcher, ``parent_of(id)``. A reply (``final-response``) answers the last
prompter — if a reply is owed at all (R-DEBT): ``user`` means the answer is read
in place and nothing is deposited; with no prompter left, the dispatcher.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lernie_ref.core.frontmatter import terminal_ref_of
from lernie_ref.core.ids import parent_of
from lernie_ref.core.vocab import USER_SENDER, Epitaph
from lernie_ref.reply_debt import Entry, owes_a_reply, read_entries, read_text


def last_prompter(entries: Sequence[Entry], agent_id: str) -> str | None:
    """R-ADDR-2: the newest delivered entry that is neither a self-note nor a result message.

    ``entries`` are newest first (:func:`~lernie_ref.reply_debt.read_entries`). Not windowed.
    """
    for entry in entries:
        if not entry.delivered or entry.origin == agent_id:
            continue
        if terminal_ref_of(read_text(entry)) is None:
            return entry.origin
    return None


def recipient(worktree: Path, agent_id: str, epitaph: str) -> str | None:
    """R-ADDR-1/3: where this terminal event's result goes; ``None`` = no deposit, no revival."""
    if str(epitaph) != Epitaph.FINAL_RESPONSE:
        return parent_of(agent_id)
    entries = read_entries(worktree)
    if not owes_a_reply(entries, agent_id):
        return None
    prompter = last_prompter(entries, agent_id)
    if prompter == USER_SENDER:
        return None
    if prompter is not None:
        return prompter
    return parent_of(agent_id)
