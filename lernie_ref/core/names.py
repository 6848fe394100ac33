"""The protocol's plain names: directories, reserved senders, environment variables, ref
prefixes and protocol point names, as ``str`` constants (R-WS-1, R-ID-7, R-LOCK-4, R-WS-5).

This module imports nothing, so the ``lernie message`` path can use the shared names
without paying for ``enum`` or ``typing`` (R-CLI-5). :mod:`lernie_ref.core.vocab` re-exports
every name here next to the enumerations (epitaphs, mark kinds); everything else imports
either module. Only names live here, never a decision.
"""

from __future__ import annotations

from lernie_ref.core import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Final

# --------------------------------------------------------------- workspace layout (R-WS-1)

REPO_DIR: Final = "repo.git"
INBOX_DIR: Final = "inbox"
"""R-DEP-1: ``<ws>/inbox/<id>/`` holds the deposits and the executor lock."""
STEPS_DIR: Final = "steps"
AGENTS_DIR: Final = "agents"
DRIVER_LOG: Final = "driver.log"
STAGING_FILE: Final = "staging.json"
GOAL_FILE: Final = "goal.md"
NAME_FILE: Final = "name"
CONFIG_BRANCH: Final = "config/default"
CHILD_ROLE: Final = "worker"
MESSAGES_DIR: Final = "messages"
"""R-TR-1: the transcript directory of an agent's worktree."""

# --------------------------------------------------------------- reserved names

USER_SENDER: Final = "user"
"""R-ID-7: the sender of a message typed by a person (no agent id)."""
TOOL_ORIGIN: Final = "tool"
"""R-TR-1: the one reserved ``.json`` origin: a tool result, never model output."""

# --------------------------------------------------------------- environment

LOCK_FD_ENV: Final = "LERNIE_LOCK_FD"
"""R-LOCK-4: the inherited executor-lock descriptor of an exec'd successor."""
CONV_BRANCH_ENV: Final = "LERNIE_CONV_BRANCH"
"""R-ID-7: the sending agent's id when a tool runs a writer verb."""

# --------------------------------------------------------------- refs and marks (R-WS-5)

AGENT_REF_PREFIX: Final = "refs/heads/agents/"
MARK_REF_PREFIX: Final = "refs/lernie/"

# --------------------------------------------------------------- protocol points


class Point:
    """Every protocol point an actor yields, named ``<actor>.<step>``, as plain strings.

    A point is passed right after a step another process could observe (a rename, a
    commit, a flock or unlock, an inbox read, a launch). The names are ``str``, so
    ``run_to("drain.listed")`` and ``run_to(Point.DRAIN_LISTED)`` agree. :data:`ALL` lists
    them in declaration order.
    """

    DEPOSIT_LISTED: Final = "deposit.listed"
    DEPOSIT_TEMP_WRITTEN: Final = "deposit.temp-written"
    DEPOSIT_COLLIDED: Final = "deposit.collided"
    DEPOSIT_PUBLISHED: Final = "deposit.published"
    DEPOSIT_MARKED: Final = "deposit.marked"

    DISPATCH_LOCKED: Final = "dispatch.locked"
    DISPATCH_PREPARED: Final = "dispatch.prepared"
    DISPATCH_CREATED: Final = "dispatch.created"

    PROBE_BUSY: Final = "probe.busy"
    PROBE_ACQUIRED: Final = "probe.acquired"
    PROBE_RELEASED: Final = "probe.released"
    PROBE_LAUNCHED: Final = "probe.launched"

    DRAIN_STRAY_COMMITTED: Final = "drain.stray-committed"
    DRAIN_REMATERIALIZED: Final = "drain.rematerialized"
    DRAIN_LISTED: Final = "drain.listed"
    DRAIN_RENAMED: Final = "drain.renamed"
    DRAIN_COMMITTED: Final = "drain.committed"

    TRANSCRIPT_RENAMED: Final = "transcript.renamed"
    TRANSCRIPT_COMMITTED: Final = "transcript.committed"

    HOP_BUSY: Final = "hop.busy"
    HOP_ACQUIRED: Final = "hop.acquired"
    HOP_WARRANT: Final = "hop.warrant"
    HOP_SETTLED: Final = "hop.settled"
    HOP_BUDGET_EXHAUSTED: Final = "hop.budget-exhausted"
    HOP_MODEL_RETURNED: Final = "hop.model-returned"
    HOP_ASSISTANT_COMMITTED: Final = "hop.assistant-committed"
    HOP_TOOL_RAN: Final = "hop.tool-ran"
    HOP_TOOLS_RAN: Final = "hop.tools-ran"

    TERMINAL_STOPPED_MARKED: Final = "terminal.stopped-marked"
    TERMINAL_RECIPIENT: Final = "terminal.recipient"
    TERMINAL_SELF_LAUNCHED: Final = "terminal.self-launched"

    RELEASE_RELEASED: Final = "release.released"
    RELEASE_REREAD: Final = "release.reread"

    SCAN_HELD: Final = "scan.held"
    SCAN_NO_INBOX: Final = "scan.no-inbox"
    SCAN_ASSESSED: Final = "scan.assessed"
    SCAN_RESENT: Final = "scan.resent"
    SCAN_SWEPT: Final = "scan.swept"
    SCAN_DEBRIS: Final = "scan.debris"
    SCAN_FLUSHED: Final = "scan.flushed"
    SCAN_DRIVEN: Final = "scan.driven"
    SCAN_RELEASED: Final = "scan.released"
    SCAN_ABANDONED: Final = "scan.abandoned"

    ALL: Final = (
        DEPOSIT_LISTED,
        DEPOSIT_TEMP_WRITTEN,
        DEPOSIT_COLLIDED,
        DEPOSIT_PUBLISHED,
        DEPOSIT_MARKED,
        DISPATCH_LOCKED,
        DISPATCH_PREPARED,
        DISPATCH_CREATED,
        PROBE_BUSY,
        PROBE_ACQUIRED,
        PROBE_RELEASED,
        PROBE_LAUNCHED,
        DRAIN_STRAY_COMMITTED,
        DRAIN_REMATERIALIZED,
        DRAIN_LISTED,
        DRAIN_RENAMED,
        DRAIN_COMMITTED,
        TRANSCRIPT_RENAMED,
        TRANSCRIPT_COMMITTED,
        HOP_BUSY,
        HOP_ACQUIRED,
        HOP_WARRANT,
        HOP_SETTLED,
        HOP_BUDGET_EXHAUSTED,
        HOP_MODEL_RETURNED,
        HOP_ASSISTANT_COMMITTED,
        HOP_TOOL_RAN,
        HOP_TOOLS_RAN,
        TERMINAL_STOPPED_MARKED,
        TERMINAL_RECIPIENT,
        TERMINAL_SELF_LAUNCHED,
        RELEASE_RELEASED,
        RELEASE_REREAD,
        SCAN_HELD,
        SCAN_NO_INBOX,
        SCAN_ASSESSED,
        SCAN_RESENT,
        SCAN_SWEPT,
        SCAN_DEBRIS,
        SCAN_FLUSHED,
        SCAN_DRIVEN,
        SCAN_RELEASED,
        SCAN_ABANDONED,
    )
