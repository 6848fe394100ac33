"""Reply addressing, as the seed names it: ``last_prompter``, ``recipient`` (bl-a96a).

A thin face over the pure decisions of :mod:`lernie_ref.core.debt`: an obituary
reports to the dispatcher (R-ADDR-1); a final response answers the last prompter
(R-ADDR-2) if a reply is owed at all (R-ADDR-3, R-DEBT-4). :func:`recipient`
hands the decision the agent's transcript as a lazy reader, so it lists
``messages/`` once and reads only the files the decision looks at.
"""

from __future__ import annotations

__all__ = ["last_prompter", "recipient"]

from collections.abc import Iterable
from pathlib import Path

from lernie_ref.core import debt
from lernie_ref.reply_debt import Entry
from lernie_ref.substrate import transcript
from lernie_ref.substrate.transcript import with_body


def last_prompter(entries: Iterable[Entry], agent_id: str) -> str | None:
    """R-ADDR-2 over entries newest first (:func:`~lernie_ref.reply_debt.read_entries`)."""
    return debt.last_prompter((with_body(e) for e in entries), agent_id)


def recipient(
    worktree: Path, agent_id: str, epitaph: str, reading: debt.DebtReading | None = None
) -> str | None:
    """R-ADDR-1, R-ADDR-3: where this terminal event's result goes; ``None`` = no deposit.

    The debt is ``reading``'s (R-STEP-10; ``None``: the process default, read for this
    call, the face's one use of its dependencies)."""
    return transcript.recipient(
        worktree, agent_id, epitaph, debt.reading() if reading is None else reading
    )
