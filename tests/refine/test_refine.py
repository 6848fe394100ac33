"""The refinement machine: the unpatched implementation refines the model (CI budget),
and seeded implementation bugs are caught (those the CI budget reliably catches)."""

from __future__ import annotations

import pytest
from lernie_stateful.refine_cli import run
from lernie_stateful.seeded_bugs import BY_NAME


def test_unpatched_implementation_refines_the_model() -> None:
    out = run(examples=8, seed=1, steps=20, shrink=0)
    assert not out.failed, out.message


@pytest.mark.parametrize("bug", ["overwriting-deposit", "writer-never-probes",
                                 "lock-leaked-at-release", "delivery-never-committed"])
def test_seeded_bug_is_caught(bug: str) -> None:
    out = run(examples=20, seed=0, steps=20, bug=BY_NAME[bug], shrink=0)
    assert out.failed
