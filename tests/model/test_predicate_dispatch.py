"""The explorer's fast path for step invariants is sound (SPEC.md §16, §19).

`step_violations` runs each step invariant as one or more parts, and a part
only on the edges whose facts (`properties.edge_facts`) its guard admits: its
guard restates the predicate's own first tests. These tests run every
predicate in one piece and every part on every edge of worlds where the
historic variants break invariants, and check that the pieces agree, that no
part is ever skipped on an edge where it fails, and that the verdicts
`step_violations` gives are those of the plain predicates. A planted wrong
guard shows the check can fail.
"""

from __future__ import annotations

import contextlib

import pytest
from lernie_spec.explore import canonical, explore
from lernie_spec.model import Profile, Scope, State, Step
from lernie_spec.properties import (
    INVARIANTS,
    REVIVAL,
    Edge,
    Invariant,
    Kind,
    Part,
    edge_facts,
    i1_state,
    i11_one_address,
    step_violations,
)
from lernie_spec.variants import BY_NAME, DEFAULT, SCOPES, VARIANTS, Variant


class _Enough(Exception):
    pass


def audit(prof: Profile, scope: Scope, table: dict[str, Invariant] = INVARIANTS,
          stop_at_first: bool = False) -> tuple[list[str], set[str]]:
    """Every edge of the world judged both ways: (problems found, the step
    invariants some edge violates)."""
    problems: list[str] = []
    failing: set[str] = set()
    steps = [(k, inv) for k, inv in table.items() if inv.kind is Kind.STEP and inv.holds]

    def see(pre: State, step: Step, post: State) -> None:
        e = Edge(pre, step, post, scope)
        facts = edge_facts(e)
        plain = []
        for k, inv in steps:
            assert inv.holds is not None
            whole = inv.holds(e)
            if not whole:
                failing.add(k)
                plain.append(k)
            parts = inv.parts or (Part(inv.holds),)
            if all(p.holds(e) for p in parts) != whole:
                problems.append(f"{k}: its parts disagree with it on {step.text!r}")
            for p in parts:
                if not p.when(step.action, facts) and not p.holds(e):
                    problems.append(f"{k}: skipped on {step.text!r}, where it fails")
        if table is INVARIANTS and step_violations(pre, step, post, scope) != plain:
            problems.append(f"step_violations differs from the predicates on {step.text!r}")
        # the explorer skips I-1's state half on an edge into a state seen before
        if i1_state(post) != i1_state(canonical(post)):
            problems.append(f"I-1's state half depends on process order at {step.text!r}")
        if problems and stop_at_first:
            raise _Enough

    with contextlib.suppress(_Enough):
        explore(prof, scope, liveness=False, observe=see)
    return problems, failing


# Worlds in which the variants break step invariants, small enough for every run.
_CASES = [(v.name, "races") for v in VARIANTS] + [
    ("bl-a96a-reply-to-parent", "faults"),
    ("bl-a96a-reply-to-parent", "exchange"),
    ("lernie-0.0.11", "lineage"),
    ("stopped-obituary-wakes-parent", "faults"),
    ("no-scan-revival", "faults"),
    ("bl-7318-release-by-close", "faults"),
]


def test_the_fast_path_never_skips_a_failing_step_predicate() -> None:
    failing: set[str] = set()
    for name, world in _CASES:
        problems, seen = audit(BY_NAME[name].profile, SCOPES[world].scope)
        assert problems == [], (name, world, problems[:5])
        failing |= seen
    # not vacuous: edges that break these invariants were judged both ways
    assert {"I-8", "I-9", "I-11", "I-12", "I-16", "I-20"} <= failing, failing


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_the_fast_path_agrees_on_every_default_world(variant: Variant) -> None:
    for ns in DEFAULT:
        problems, _ = audit(variant.profile, ns.scope)
        assert problems == [], (variant.name, ns.name, problems[:5])


def test_a_guard_that_drops_a_fact_its_predicate_reads_is_caught() -> None:
    # Planted: I-11 judged only on revivals, not on edges that publish a file.
    wrong = dict(INVARIANTS)
    wrong["I-11"] = INVARIANTS["I-11"]._replace(
        parts=(Part(i11_one_address, lambda act, facts: bool(facts & REVIVAL)),))
    problems, _ = audit(BY_NAME["bl-a96a-reply-to-parent"].profile, SCOPES["faults"].scope,
                        wrong, stop_at_first=True)
    assert problems and problems[0].startswith("I-11: skipped on 'publish ")
    # and the guard as written admits that edge
    right, _ = audit(BY_NAME["bl-a96a-reply-to-parent"].profile, SCOPES["faults"].scope,
                     stop_at_first=True)
    assert right == []
