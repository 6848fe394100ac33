"""R-SCAN-11: a result whose returned mark a kill left behind, found and its mark moved.

A kill between a result's publication and the move of the sender's returned mark leaves
the result delivered (or pending) and the mark behind. The agent's next holder — its hop
(R-DRAIN-8) or the scan's sweep — finds the result on disk (:func:`landed_result`) and
moves the mark to the tip it carries (:func:`repair_returned_mark`), so the result is
never sent twice.
"""

from __future__ import annotations

from collections.abc import Callable

from lernie_ref.actors.readings import result_on_disk
from lernie_ref.actors.release import notice
from lernie_ref.core.debt import READING, DebtReading
from lernie_ref.core.errors import GitOpError, LernieError
from lernie_ref.core.ids import AgentId, as_agent_id, parent_of
from lernie_ref.core.vocab import Epitaph, MarkKind
from lernie_ref.substrate.transcript import (
    Transcript,
    is_terminal_response,
    read_entries,
    recipient,
)
from lernie_ref.substrate.workspace import Workspace


def landed_result(
    ws: Workspace,
    agent: AgentId,
    tip: str,
    registered: Callable[[AgentId], bool],
    listed: Transcript | None = None,
    reading: DebtReading = READING,
) -> AgentId | None:
    """R-SCAN-11: the agent whose inbox or transcript holds a result from ``agent``
    carrying ``tip`` (its parent, for an obituary; the final response's recipient, when
    the newest entry is one), or ``None``. The caller has seen the returned mark elsewhere;
    ``reading`` is its debt reading (R-STEP-10)."""
    candidates: list[AgentId] = []
    derived = parent_of(agent)
    parent = None if derived is None else as_agent_id(derived)  # guarded where derived (R-ID-9)
    if parent is not None and registered(parent):
        candidates.append(parent)
    entries = read_entries(ws.worktree(agent)) if listed is None else listed.everything()
    if entries and is_terminal_response(entries[0], reading):
        to = recipient(ws.worktree(agent), agent, Epitaph.FINAL_RESPONSE, reading)
        if to is not None and to not in candidates and registered(to):
            candidates.append(to)
    return next((to for to in candidates if result_on_disk(ws, to, agent, tip)), None)


def repair_returned_mark(ws: Workspace, agent: AgentId, tip: str, to: str) -> None:
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
