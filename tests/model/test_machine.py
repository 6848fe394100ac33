"""The Hypothesis machine over the model alone (stateful/lernie_stateful/model_machine.py)."""

from __future__ import annotations

import pytest
from hypothesis import settings
from lernie_spec.check import run
from lernie_spec.model import initial
from lernie_spec.variants import BY_NAME, DEFAULT
from lernie_stateful.model_machine import WIDE, ModelMachine, ProtocolViolation, check

TestReferenceInAWideScope = ModelMachine.TestCase
TestReferenceInAWideScope.settings = settings(
    max_examples=100, stateful_step_count=80, deadline=None
)


@pytest.mark.parametrize("name", ["bl-9c8f-no-release-rule", "overwriting-deposit",
                                  "stopped-obituary-wakes-parent"])
def test_the_machine_check_rejects_a_known_counterexample(name: str) -> None:
    """Replaying a variant's BFS trace through the machine's check fails."""
    v = BY_NAME[name]
    vio, scope_name = run(v, quiet=True).found[min(v.expected)]
    scope = next(ns.scope for ns in DEFAULT if ns.name == scope_name)
    pre = initial(scope)
    with pytest.raises(ProtocolViolation):
        for step, post in vio.trace:
            check(pre, step, post, scope)
            pre = post


def test_wide_scope_is_wider_than_the_default() -> None:
    assert len(WIDE.parents) == 3
    assert WIDE.max_procs > max(ns.scope.max_procs for ns in DEFAULT)
