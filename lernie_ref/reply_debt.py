"""The reply debt, as the seed names it: ``Entry``, ``read_entries``, ``owes_a_reply``.

A thin face over the two layers that do the work: the decision is the pure
:func:`lernie_ref.core.debt.owes_a_reply` (R-DEBT-4: it owes iff something in the
window since the previous terminal response asks, or it never answered), the
reading is :func:`lernie_ref.substrate.transcript.read_entries` (R-DEBT-1). An
entry built by hand from a path, with no bytes, is read from that path here.
"""

from __future__ import annotations

__all__ = [
    "Entry",
    "is_terminal_response",
    "owes_a_reply",
    "read_bytes",
    "read_entries",
    "read_text",
]

from collections.abc import Iterable
from pathlib import Path

from lernie_ref.core import debt
from lernie_ref.core.entry import Entry as _Entry
from lernie_ref.substrate import transcript as _transcript
from lernie_ref.substrate.transcript import read_bytes, read_entries, read_text, with_body

Entry = _Entry[Path]
"""One transcript entry read from disk: ``Entry(seq, origin, delivered, path)``."""


def is_terminal_response(entry: Entry, reading: debt.DebtReading | None = None) -> bool:
    """R-DEBT-2: a non-``tool`` model entry whose blocks declare no ``tool_use``.

    As ``reading`` has it (R-STEP-10; ``None``: the process default, read for this call,
    the face's one use of its dependencies), as below."""
    return _transcript.is_terminal_response(
        entry, debt.reading() if reading is None else reading
    )


def owes_a_reply(
    entries: Iterable[Entry], agent_id: str, reading: debt.DebtReading | None = None
) -> bool:
    """R-DEBT-4 over entries newest first (as :func:`read_entries` returns them)."""
    chosen = debt.reading() if reading is None else reading
    return chosen.owes_a_reply((with_body(e) for e in entries), agent_id)
