"""The sweep's decisions, as pure functions over what the sweep read (R-SCAN-4, R-SCAN-5,
R-SCAN-9, R-SCAN-10).

The sweep actor (:mod:`lernie_ref.actors.sweep`) and ``lernie status`` read refs, inboxes
and transcripts; everything they *decide* from those readings lives here: the agent's
condition, whether an obituary is owed, whether a reply went unsent, whether the agent
is owed a launch and whether the crash-loop guard lets it have one. No I/O: values in,
decisions out, so CrossHair and plain unit tests can call them directly.
"""

from __future__ import annotations

import enum

from lernie_ref.core.ids import AgentId
from lernie_ref.core.record import field, record
from lernie_ref.core.warrant import Warrant


class Condition(enum.Enum):
    """What the sweep reads for one agent (R-SCAN-4)."""

    DRIVEN = "driven"
    """An executor holds the lock."""
    MAIL = "mail"
    """Pending deposits under a free lock: a launch picks the work up (the flush's case)."""
    DIED_MID_WORK = "died-mid-work"
    """No executor, no mail, and the transcript owes a model call or a tool result."""
    AT_REST = "at-rest"
    """Nothing due: never started, finished a step loop, or stopped by its budget."""


def at_rest_mark(tip: str, budget: str | None, stopped: str | None) -> bool:
    """R-SCAN-4(b): a budget-exhausted or stopped mark sits at the branch tip (D-19)."""
    return tip in (budget, stopped)


def condition_of(
    *, driven: bool, pending_count: int, due: Warrant, budget_at_tip: bool
) -> Condition:
    """R-SCAN-4: the sweep's reading of one agent, as a pure function of what it read."""
    if driven:
        return Condition.DRIVEN
    if pending_count:
        return Condition.MAIL
    if budget_at_tip or due is Warrant.NOTHING_DUE:
        return Condition.AT_REST
    return Condition.DIED_MID_WORK


def obituary_owed(condition: Condition, parent: str | None, returned: str | None, tip: str) -> bool:
    """R-SCAN-5: a ``died`` deposit is owed iff the agent died mid-work, has a registered parent,
    and its returned mark is not already at its branch tip."""
    return condition is Condition.DIED_MID_WORK and parent is not None and returned != tip


@record(frozen=True)
class UnsentReply:
    """R-SCAN-9: a final response committed at the tip whose deposit never landed."""

    recipient: AgentId
    response: str | None


def reply_may_be_unsent(
    returned: str | None, tip: str, newest_is_terminal: bool, tip_commits_newest: bool
) -> bool:
    """R-SCAN-9, the part read from refs and the newest entry: the returned mark is not at the
    tip, the newest entry is a terminal response, and the tip is that entry's own commit (or
    the stray recovery that committed it). The recipient and the on-disk check come after."""
    return returned != tip and newest_is_terminal and tip_commits_newest


def reply_owed_to(recipient: str | None, registry: frozenset[str], on_disk: bool) -> bool:
    """R-SCAN-9: the reply goes out iff it is owed to a registered agent (R-ADDR-3, R-DEBT-4)
    and no result from the author carrying the tip is pending for, or delivered to, it."""
    return recipient is not None and recipient in registry and not on_disk


def owed_launch(due: Warrant, open_tail: bool) -> bool:
    """R-SCAN-10: *work due*: a model call is due, or the only unpaired calls are a trailing
    open tool window (``open_tail``: R-STEP-2 settles it, then a model call is due).

    I-19: what a crash leaves with work due is what the scan revives."""
    if due is Warrant.MODEL_CALL_DUE:
        return True
    return due is Warrant.UNPAIRED and open_tail


REVIVE_LIMIT = 3
"""R-SCAN-10: relaunches of a dead agent at one branch tip before the scan gives up on it."""
REVIVALS_FILE = "revivals"
"""R-SCAN-10: ``steps/<id>/revivals`` holds ``<tip> <count>``: the scan's relaunches at a tip."""


def revivals_in(text: str, tip: str) -> int:
    """R-SCAN-10: the count a ``revivals`` record holds for ``tip`` (0 for another tip or a
    record that does not parse: any progress resets the guard)."""
    parts = text.split()
    if len(parts) != 2 or parts[0] != tip or not parts[1].isdigit():
        return 0
    return int(parts[1])


def revivals_record(tip: str, count: int) -> str:
    """R-SCAN-10: the ``revivals`` record for ``count`` relaunches at ``tip``."""
    return f"{tip} {count}\n"


def guard_allows(count: int) -> bool:
    """R-SCAN-10, the crash-loop guard: another relaunch at this tip is allowed iff fewer than
    :data:`REVIVE_LIMIT` were made there already."""
    return count < REVIVE_LIMIT


@record
class ScanReport:
    """One pass's outcome; lists are in pass order (R-SCAN-3).

    ``resent``: (agent, recipient) of every final response the sweep deposited on its
    author's behalf. ``revived``: dead agents with work due that the pass relaunched
    (R-SCAN-10), also in ``launched``. ``given_up``: dead agents with work due the
    crash-loop guard keeps down (R-SCAN-10). ``abandoned``: ids whose creation (a
    ``prompt`` or ``dispatch``) was killed before its branch was made, and whose remains
    the pass removed (R-SCAN-12).
    """

    silent_deaths: list[AgentId] = field(default_factory=list)
    swept: list[AgentId] = field(default_factory=list)
    resent: list[tuple[str, str]] = field(default_factory=list)
    launched: list[AgentId] = field(default_factory=list)
    busy: list[AgentId] = field(default_factory=list)
    debris: list[str] = field(default_factory=list)
    driven: list[AgentId] = field(default_factory=list)
    revived: list[AgentId] = field(default_factory=list)
    given_up: list[AgentId] = field(default_factory=list)
    abandoned: list[AgentId] = field(default_factory=list)

    def line(self) -> str:
        """R-SCAN-3: upstream's report line, byte for byte."""
        named = f" ({', '.join(self.silent_deaths)})" if self.silent_deaths else ""
        return (
            f"silent deaths: {len(self.silent_deaths)}{named}; "
            f"died deposits swept: {len(self.swept)}; "
            f"drivers launched: {len(self.launched)}; "
            f"inboxes with no agent branch: {len(self.debris)}"
        )

    def as_json(self) -> dict[str, object]:
        return {
            "silent_deaths": list(self.silent_deaths),
            "swept": list(self.swept),
            "resent": [{"agent": a, "to": r} for a, r in self.resent],
            "launched": list(self.launched),
            "busy": list(self.busy),
            "debris": list(self.debris),
            "driven": list(self.driven),
            "revived": list(self.revived),
            "given_up": list(self.given_up),
            "abandoned": list(self.abandoned),
        }

    def json_text(self) -> str:
        import json  # only ``--json`` gets here

        return json.dumps(self.as_json(), sort_keys=True)
