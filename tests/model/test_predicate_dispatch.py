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
import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import lernie_spec
import pytest
from lernie_spec import explore as explore_mod
from lernie_spec import properties
from lernie_spec.model import Profile, Scope, State, Step
from lernie_spec.properties import REVIVAL, Invariant, Part, i11_one_address
from lernie_spec.variants import BY_NAME, DEFAULT, SCOPES, VARIANTS, Variant
from lernie_stateful.model_mutants import CATALOGUE, apply


class _Enough(Exception):
    pass


def audit(prof: Profile, scope: Scope, table: dict[str, Invariant] | None = None,
          stop_at_first: bool = False, props: ModuleType = properties,
          explorer: ModuleType = explore_mod) -> tuple[list[str], set[str]]:
    """Every edge of the world judged both ways: (problems found, the step
    invariants some edge violates). `props` and `explorer`: the modules to judge
    with (a mutated copy of the package), `table` in place of their table."""
    problems: list[str] = []
    failing: set[str] = set()
    real = table is None
    table = props.INVARIANTS if table is None else table
    steps = [(k, inv) for k, inv in table.items()
             if inv.kind is props.Kind.STEP and inv.holds]

    def see(pre: State, step: Step, post: State) -> None:
        e = props.Edge(pre, step, post, scope)
        facts = props.edge_facts(e)
        plain = []
        for k, inv in steps:
            assert inv.holds is not None
            whole = inv.holds(e)
            if not whole:
                failing.add(k)
                plain.append(k)
            parts = inv.parts or (props.Part(inv.holds),)
            if all(p.holds(e) for p in parts) != whole:
                problems.append(f"{k}: its parts disagree with it on {step.text!r}")
            for p in parts:
                if not p.when(step.action, facts) and not p.holds(e):
                    problems.append(f"{k}: skipped on {step.text!r}, where it fails")
        if real and props.step_violations(pre, step, post, scope) != plain:
            problems.append(f"step_violations differs from the predicates on {step.text!r}")
        # the explorer skips I-1's state half on an edge into a state seen before
        if props.i1_state(post) != props.i1_state(explorer.canonical(post)):
            problems.append(f"I-1's state half depends on process order at {step.text!r}")
        if problems and stop_at_first:
            raise _Enough

    with contextlib.suppress(_Enough):
        explorer.explore(prof, scope, liveness=False, observe=see)
    return problems, failing


@contextlib.contextmanager
def mutated(name: str, tmp: Path) -> Iterator[tuple[ModuleType, ModuleType, ModuleType]]:
    """A copy of the package with one mutant of the catalogue applied to its
    model (as `lernie-check mutants` makes it): its model, properties, explorer."""
    (m,) = [m for m in CATALOGUE if m.name == name]
    pkg = "lernie_spec_audit_" + name.replace("-", "_")
    shutil.copytree(Path(lernie_spec.__file__).parent, tmp / pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for f in (tmp / pkg).glob("*.py"):
        text = f.read_text(encoding="utf-8").replace("lernie_spec.", pkg + ".")
        f.write_text(apply(m, text) if f.name == "model.py" else text, encoding="utf-8")
    sys.path.insert(0, str(tmp))
    try:
        yield (importlib.import_module(pkg + ".model"),
               importlib.import_module(pkg + ".properties"),
               importlib.import_module(pkg + ".explore"))
    finally:
        sys.path.remove(str(tmp))
        for mod in [k for k in sys.modules if k == pkg or k.startswith(pkg + ".")]:
            del sys.modules[mod]


# Worlds in which the variants break step invariants, small enough for every run.
_CASES = [
    ("reference", "races"),
    ("no-stray-recovery", "races"),  # I-18
    ("bl-a96a-reply-to-parent", "faults"),  # I-11, I-16
    ("bl-a96a-reply-to-parent", "exchange"),  # I-12
    ("stopped-obituary-wakes-parent", "faults"),  # I-8, I-9, I-11
    ("no-scan-revival", "faults"),  # I-20
]
# Mutants of the model (lernie-check mutants) that break the step invariants no
# variant breaks, each in the world that catches it.
_MUTANTS = [
    ("executor-result-keeps-mark", "faults"),  # I-14
    ("sweep-result-keeps-mark", "faults"),  # I-15
    ("sweep-ignores-lock", "faults"),
]


def test_the_fast_path_never_skips_a_failing_step_predicate() -> None:
    failing: set[str] = set()
    for name, world in _CASES:
        problems, seen = audit(BY_NAME[name].profile, SCOPES[world].scope)
        assert problems == [], (name, world, problems[:5])
        failing |= seen
    # not vacuous: edges that break these invariants were judged both ways
    assert {"I-8", "I-9", "I-11", "I-12", "I-16", "I-18", "I-20"} <= failing, failing


def test_the_fast_path_never_skips_a_failing_predicate_of_a_mutated_model(
        tmp_path: Path) -> None:
    failing: set[str] = set()
    for name, world in _MUTANTS:
        with mutated(name, tmp_path) as (model, props, explorer):
            problems, seen = audit(model.Profile(), SCOPES[world].scope, props=props,
                                   explorer=explorer)
        assert problems == [], (name, world, problems[:5])
        failing |= seen
    assert {"I-14", "I-15"} <= failing, failing


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_the_fast_path_agrees_on_every_default_world(variant: Variant) -> None:
    for ns in DEFAULT:
        problems, _ = audit(variant.profile, ns.scope)
        assert problems == [], (variant.name, ns.name, problems[:5])


def test_a_guard_that_drops_a_fact_its_predicate_reads_is_caught() -> None:
    # Planted: I-11 judged only on revivals, not on edges that publish a file.
    wrong = dict(properties.INVARIANTS)
    wrong["I-11"] = properties.INVARIANTS["I-11"]._replace(
        parts=(Part(i11_one_address, lambda act, facts: bool(facts & REVIVAL)),))
    problems, _ = audit(BY_NAME["bl-a96a-reply-to-parent"].profile, SCOPES["faults"].scope,
                        wrong, stop_at_first=True)
    assert problems and problems[0].startswith("I-11: skipped on 'publish ")
    # and the guard as written admits that edge
    right, _ = audit(BY_NAME["bl-a96a-reply-to-parent"].profile, SCOPES["faults"].scope,
                     stop_at_first=True)
    assert right == []
