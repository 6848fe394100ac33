"""The warrant: what a hop owes, read from the transcript alone (R-STEP-2, R-STEP-3).

A driver never asks who launched it or why; the transcript says whether a model
call is due. Three answers (R-STEP-3):

- **Unpaired**: some ``tool_use`` id has no ``tool_result`` anywhere. A tool's side
  effects cannot be replayed, so the hop declines loudly (exit 1), even when
  delivered mail sits after the orphan (bl-15f0).
- **ModelCallDue**: the last wire message is on the user or tool side.
- **NothingDue**: the last wire message is the model's, or there is none. The hop
  releases (with the release rule) and exits 0: pin 1, which ends the
  self-launch recursion of a ``final-response`` (R-TERM-3).

Crash settlement (R-STEP-2, bl-4187) runs before the warrant: a model entry whose
``tool_use`` ids were never answered, followed by nothing but tool results, is a
tool window a crash (or a stop) left open; each unanswered id gets an error
result so the warrant reads it as paired. The functions here are pure over
(role, blocks) values; ``warrant(worktree)`` is the thin reader.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from lernie_ref.core.entry import Block, tool_result_ids, tool_use_ids
from lernie_ref.core.vocab import Role


class Warrant(enum.Enum):
    NOTHING_DUE = "nothing-due"
    MODEL_CALL_DUE = "model-call-due"
    UNPAIRED = "unpaired"


def warrant_of(history: Sequence[tuple[Role, Sequence[Block]]]) -> Warrant:
    """R-STEP-3 over a wire history ``[(role, blocks), …]`` (merged or not: same answer).

    Contract (R-STEP-3: an unanswered ``tool_use`` id anywhere is Unpaired; otherwise the side
    of the last message decides):

    post: (__return__ == Warrant.UNPAIRED) == bool({i for _, b in history for i in tool_use_ids(b)} - {i for _, b in history for i in tool_result_ids(b)})
    post: __return__ != Warrant.MODEL_CALL_DUE or history[-1][0] in ("user", "tool")
    post: __return__ != Warrant.NOTHING_DUE or not history or history[-1][0] not in ("user", "tool")
    """  # noqa: E501
    if not history:  # no message: nothing is due (an agent that never took a step)
        return Warrant.NOTHING_DUE
    asked: set[str] = set()
    answered: set[str] = set()
    for _role, blocks in history:
        asked.update(tool_use_ids(blocks))
        answered.update(tool_result_ids(blocks))
    if asked - answered:
        return Warrant.UNPAIRED
    if history and history[-1][0] in ("user", "tool"):
        return Warrant.MODEL_CALL_DUE
    return Warrant.NOTHING_DUE


def unanswered_tail(history: Sequence[tuple[Role, Sequence[Block]]]) -> list[str]:
    """R-STEP-2: the ids of the open tool window, in call order; ``[]`` when none is open.

    The window is the newest model message when everything after it is on the tool
    side; its ``tool_use`` ids that no later tool result answers are unanswered. A
    user-side message after the model message means the window is not a crash tail
    (the warrant then declines it as Unpaired instead).

    Contract (R-STEP-2: ids of the newest model message only, none answered after it, and
    nothing when a user-side message follows it):

    post: not __return__ or all(m[0] != "user" for m in history[max([n for n, m in enumerate(history) if m[0] == "assistant"], default=0) :])
    post: set(__return__) <= set(tool_use_ids(history[max([n for n, m in enumerate(history) if m[0] == "assistant"], default=0)][1])) if history else not __return__
    post: all(i not in tool_result_ids(m[1]) for m in history[max([n for n, m in enumerate(history) if m[0] == "assistant"], default=len(history)) + 1 :] for i in __return__)
    """  # noqa: E501
    last_model = None
    for index in range(len(history) - 1, -1, -1):
        role = history[index][0]
        if role == "assistant":
            last_model = index
            break
        if role == "user":
            return []
    if last_model is None:
        return []
    answered: set[str] = set()
    for _role, blocks in history[last_model + 1 :]:
        answered.update(tool_result_ids(blocks))
    return [i for i in tool_use_ids(history[last_model][1]) if i not in answered]

