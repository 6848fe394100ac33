"""The refinement mapping: which model step the implementation takes at each protocol point.

The label of each kind of step is the set of protocol points
(:class:`lernie_ref.core.names.Point`) at which the implementation takes it. An empty
set: the step has no point of its own (an external input, or a step the implementation
folds into a neighbour's point). The refinement machine (:mod:`lernie_stateful.refinement`)
matches every point the implementation passes to a step carrying it, or to its table of
internal (stuttering) points. The mapping lives with the checkers, which import both the
model and the implementation; the model itself knows nothing of the code's points.
"""

from __future__ import annotations

from lernie_spec.model import Action

from lernie_ref.core.names import Point

POINTS: dict[Action, frozenset[str]] = {
    Action.OPERATOR_MESSAGE: frozenset(),
    Action.OPERATOR_ADVANCE: frozenset({Point.HOP_ACQUIRED, Point.HOP_BUSY}),
    Action.OPERATOR_STOP: frozenset(),
    Action.OPERATOR_SCAN: frozenset(),
    Action.DRIVER_START: frozenset({Point.HOP_ACQUIRED, Point.HOP_BUSY}),
    Action.LIST_FOR_DEPOSIT: frozenset({Point.DEPOSIT_LISTED}),
    Action.PUBLISH: frozenset({Point.DEPOSIT_PUBLISHED, Point.DEPOSIT_MARKED}),
    Action.MARK_RETURNED: frozenset({Point.DEPOSIT_MARKED}),  # Scope.split_mark only
    Action.PROBE: frozenset({Point.PROBE_ACQUIRED, Point.PROBE_BUSY}),
    Action.PROBE_RELEASE_LAUNCH: frozenset({Point.PROBE_LAUNCHED}),
    Action.SELF_LAUNCH: frozenset({Point.TERMINAL_SELF_LAUNCHED}),
    Action.SETTLE_WINDOW: frozenset({Point.TRANSCRIPT_RENAMED}),
    Action.RECOVER_STRAYS: frozenset({Point.DRAIN_STRAY_COMMITTED}),
    Action.LIST_INBOX: frozenset({Point.DRAIN_LISTED}),
    Action.MOVE_DEPOSIT: frozenset({Point.DRAIN_RENAMED}),
    Action.COMMIT_ENTRY: frozenset({Point.DRAIN_COMMITTED}),
    Action.DECLINE: frozenset(),  # the hop's error exit: no point, the actor raises
    Action.ERROR_EXIT: frozenset(),
    Action.MODEL_FINAL: frozenset({Point.TRANSCRIPT_RENAMED}),
    Action.COMMIT_FINAL: frozenset({Point.TRANSCRIPT_COMMITTED}),
    Action.COMMIT_STEP: frozenset({Point.TRANSCRIPT_COMMITTED}),
    Action.MODEL_TOOL_USE: frozenset({Point.TRANSCRIPT_RENAMED}),
    Action.PARKING_EVENT: frozenset(
        {Point.TERMINAL_STOPPED_MARKED, Point.HOP_BUDGET_EXHAUSTED, Point.TRANSCRIPT_RENAMED}),
    Action.TOOL_RESULT: frozenset({Point.TRANSCRIPT_RENAMED}),
    Action.RELEASE_LEASE: frozenset({Point.RELEASE_RELEASED}),
    Action.REREAD_INBOX: frozenset({Point.RELEASE_REREAD}),
    Action.SWEEP: frozenset(),  # `lernie scan` is matched as one atomic input
    Action.FLUSH: frozenset(),
    Action.CRASH: frozenset(),
    Action.FORKED_CHILD_EXECS: frozenset(),
}
