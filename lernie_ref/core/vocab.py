"""The protocol's shared vocabulary: every name that two parts of the code (or the code and
the model) must spell the same way, defined once.

Only names live here — directories, reserved origins and senders, mark kinds, ref
prefixes, epitaphs and protocol point names — never a decision. The model may import this
module (it imports nothing of the package and has no side effects); it must not import the
implementation's decision functions (DESIGN: one vocabulary, two implementations).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

# --------------------------------------------------------------- workspace layout (R-WS-1)

REPO_DIR = "repo.git"
INBOX_DIR = "inbox"
"""R-DEP-1: ``<ws>/inbox/<id>/`` holds the deposits and the executor lock."""
STEPS_DIR = "steps"
AGENTS_DIR = "agents"
DRIVER_LOG = "driver.log"
STAGING_FILE = "staging.json"
GOAL_FILE = "goal.md"
NAME_FILE = "name"
CONFIG_BRANCH = "config/default"
CHILD_ROLE = "worker"
MESSAGES_DIR = "messages"
"""R-TR-1: the transcript directory of an agent's worktree."""

# --------------------------------------------------------------- reserved names

Role = Literal["user", "assistant", "tool"]
"""R-TR-5: the role of a message in the model's history."""

USER_SENDER = "user"
"""R-ID-7: the sender of a message typed by a person (no agent id)."""
TOOL_ORIGIN = "tool"
"""R-TR-1: the one reserved ``.json`` origin: a tool result, never model output."""

# --------------------------------------------------------------- environment

LOCK_FD_ENV = "LERNIE_LOCK_FD"
"""R-LOCK-4: the inherited executor-lock descriptor of an exec'd successor."""
CONV_BRANCH_ENV = "LERNIE_CONV_BRANCH"
"""R-ID-7: the sending agent's id when a tool runs a writer verb."""

# --------------------------------------------------------------- refs and marks (R-WS-5)

AGENT_REF_PREFIX = "refs/heads/agents/"
MARK_REF_PREFIX = "refs/lernie/"


class MarkKind(StrEnum):
    """R-WS-5: the kinds of ``refs/lernie/<kind>/<id>`` marks."""

    RETURNED = "returned"
    STOPPED = "stopped"
    BUDGET_EXHAUSTED = "budget-exhausted"


RETURNED_REF_PREFIX = f"{MARK_REF_PREFIX}{MarkKind.RETURNED.value}/"


# --------------------------------------------------------------- epitaphs (R-DEP-5)


class Epitaph(StrEnum):
    """R-DEP-5: how a step loop ended, spelled as on disk."""

    FINAL_RESPONSE = "final-response"
    STOPPED = "stopped"
    BUDGET_EXHAUSTED = "budget-exhausted"
    DIED = "died"


PARKED_EPITAPHS = frozenset({Epitaph.STOPPED.value, Epitaph.BUDGET_EXHAUSTED.value})
"""R-REL-2: a result with one of these epitaphs parks its child; it warrants no launch."""


# --------------------------------------------------------------- protocol points


class Point(StrEnum):
    """Every protocol point an actor yields, named ``<actor>.<step>``.

    A point is passed right after a step another process could observe (a rename, a
    commit, a flock or unlock, an inbox read, a launch). The members compare equal to
    their strings, so ``run_to("drain.listed")`` and ``run_to(Point.DRAIN_LISTED)`` agree.
    """

    DEPOSIT_LISTED = "deposit.listed"
    DEPOSIT_TEMP_WRITTEN = "deposit.temp-written"
    DEPOSIT_COLLIDED = "deposit.collided"
    DEPOSIT_PUBLISHED = "deposit.published"
    DEPOSIT_MARKED = "deposit.marked"

    PROBE_BUSY = "probe.busy"
    PROBE_ACQUIRED = "probe.acquired"
    PROBE_RELEASED = "probe.released"
    PROBE_LAUNCHED = "probe.launched"

    DRAIN_STRAY_COMMITTED = "drain.stray-committed"
    DRAIN_REMATERIALIZED = "drain.rematerialized"
    DRAIN_LISTED = "drain.listed"
    DRAIN_RENAMED = "drain.renamed"
    DRAIN_COMMITTED = "drain.committed"

    TRANSCRIPT_RENAMED = "transcript.renamed"
    TRANSCRIPT_COMMITTED = "transcript.committed"

    HOP_BUSY = "hop.busy"
    HOP_ACQUIRED = "hop.acquired"
    HOP_WARRANT = "hop.warrant"
    HOP_SETTLED = "hop.settled"
    HOP_BUDGET_EXHAUSTED = "hop.budget-exhausted"
    HOP_MODEL_RETURNED = "hop.model-returned"
    HOP_ASSISTANT_COMMITTED = "hop.assistant-committed"
    HOP_TOOL_RAN = "hop.tool-ran"
    HOP_TOOLS_RAN = "hop.tools-ran"

    TERMINAL_STOPPED_MARKED = "terminal.stopped-marked"
    TERMINAL_RECIPIENT = "terminal.recipient"
    TERMINAL_SELF_LAUNCHED = "terminal.self-launched"

    RELEASE_RELEASED = "release.released"
    RELEASE_REREAD = "release.reread"

    SCAN_HELD = "scan.held"
    SCAN_NO_INBOX = "scan.no-inbox"
    SCAN_ASSESSED = "scan.assessed"
    SCAN_RESENT = "scan.resent"
    SCAN_SWEPT = "scan.swept"
    SCAN_DEBRIS = "scan.debris"
    SCAN_FLUSHED = "scan.flushed"
    SCAN_DRIVEN = "scan.driven"
    SCAN_RELEASED = "scan.released"
