"""The protocol's shared vocabulary: every name that two parts of the code (or the code and
the model) must spell the same way, defined once.

Only names live here — directories, reserved origins and senders, mark kinds, ref
prefixes, epitaphs and protocol point names — never a decision. The model may import this
module (it imports only :mod:`lernie_ref.core.names` and has no side effects); it must not
import the implementation's decision functions (SPEC §19: one vocabulary, two implementations).
The plain string names and the protocol points are defined in :mod:`lernie_ref.core.names`
(importable without ``enum``/``typing``, for the ``lernie message`` path) and re-exported here.
"""

from __future__ import annotations

from enum import StrEnum

from lernie_spec import vocab as _spelling

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.names import (
    AGENT_REF_PREFIX as AGENT_REF_PREFIX,
)
from lernie_ref.core.names import (
    AGENTS_DIR as AGENTS_DIR,
)
from lernie_ref.core.names import (
    CHILD_ROLE as CHILD_ROLE,
)
from lernie_ref.core.names import (
    CONFIG_BRANCH as CONFIG_BRANCH,
)
from lernie_ref.core.names import (
    CONV_BRANCH_ENV as CONV_BRANCH_ENV,
)
from lernie_ref.core.names import (
    DRIVER_LOG as DRIVER_LOG,
)
from lernie_ref.core.names import (
    GOAL_FILE as GOAL_FILE,
)
from lernie_ref.core.names import (
    INBOX_DIR as INBOX_DIR,
)
from lernie_ref.core.names import (
    LOCK_FD_ENV as LOCK_FD_ENV,
)
from lernie_ref.core.names import (
    MARK_REF_PREFIX as MARK_REF_PREFIX,
)
from lernie_ref.core.names import (
    MESSAGES_DIR as MESSAGES_DIR,
)
from lernie_ref.core.names import (
    NAME_FILE as NAME_FILE,
)
from lernie_ref.core.names import (
    REPO_DIR as REPO_DIR,
)
from lernie_ref.core.names import (
    STAGING_FILE as STAGING_FILE,
)
from lernie_ref.core.names import (
    STEPS_DIR as STEPS_DIR,
)
from lernie_ref.core.names import (
    TOOL_ORIGIN as TOOL_ORIGIN,
)
from lernie_ref.core.names import (
    USER_SENDER as USER_SENDER,
)
from lernie_ref.core.names import (
    Point as Point,
)

if TYPE_CHECKING:
    from typing import Literal

    Role = Literal["user", "assistant", "tool"]
    """R-TR-5: the role of a message in the model's history."""
else:
    Role = str  # what the checker sees above; at run time a role is one of those strings


class MarkKind(StrEnum):
    """R-WS-5: the kinds of ``refs/lernie/<kind>/<id>`` marks."""

    RETURNED = "returned"
    STOPPED = "stopped"
    BUDGET_EXHAUSTED = "budget-exhausted"


RETURNED_REF_PREFIX = f"{MARK_REF_PREFIX}{MarkKind.RETURNED.value}/"


# --------------------------------------------------------------- epitaphs (R-DEP-5)


class Epitaph(StrEnum):
    """R-DEP-5: how a step loop ended, spelled as on disk (spelled once, in the model's
    :mod:`lernie_spec.vocab`)."""

    FINAL_RESPONSE = _spelling.FINAL_RESPONSE
    STOPPED = _spelling.STOPPED
    BUDGET_EXHAUSTED = _spelling.BUDGET_EXHAUSTED
    DIED = _spelling.DIED


PARKED_EPITAPHS = frozenset({Epitaph.STOPPED.value, Epitaph.BUDGET_EXHAUSTED.value})
"""R-REL-2: a result with one of these epitaphs parks its child; it warrants no launch."""
