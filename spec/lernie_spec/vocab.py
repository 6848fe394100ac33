"""The spellings the model and the implementation share, defined once, on the model's side.

Only names live here, never a decision, and this module imports nothing, so the
implementation (:mod:`lernie_ref.core.vocab`) takes its epitaph enumeration from it
without loading any of the model. Dependencies run one way: the model imports neither
the implementation nor the checkers (SPEC §19); the checkers import both.
"""

from __future__ import annotations

# --------------------------------------------------------------- epitaphs (R-DEP-5)
# How a step loop ended, spelled as on disk in a result's ``epitaph:`` field.

FINAL_RESPONSE = "final-response"
STOPPED = "stopped"
BUDGET_EXHAUSTED = "budget-exhausted"
DIED = "died"
