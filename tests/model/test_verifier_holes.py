"""The verifier's holes, each shown closed (SPEC.md §16, §18, §19; docs/verifier-holes.md).

Every hole is a mutant of the model that the checker once let through, or could not
express: a reply sent twice, a lost wakeup after an unrelated crash, a sweep that reads
process order, a crash-loop guard that never resets or never fires, the SPEC obligations
with no invariant (the exit self-launch beside a parked obituary, a busy flush, the stop
cascade, the returned-mark repair). Each is killed by the invariant and in the number of
steps its catalogue entry records (`Mutant.kills`); weakening that invariant back makes
its test fail. The symmetry reduction is compared with the plain search on every
default world.
"""

from __future__ import annotations

import pytest
from lernie_spec.coverage import Coverage
from lernie_spec.explore import explore, sorted_form
from lernie_spec.model import Profile, Role, State, Step
from lernie_spec.properties import INVARIANTS, ghost_reading
from lernie_spec.variants import DEFAULT, SCOPES, NamedScope
from lernie_stateful import model_mutants

HOLES = {m.name: m for m in model_mutants.CATALOGUE if m.kills}


def _kills(m: model_mutants.Mutant) -> tuple[str, int, str]:
    inv, rest = m.kills.split(":")
    length, world = rest.split("@")
    return inv, int(length), world


_LARGE = {"dispatch", "siblings", "tools-and-sends", "exchange"}  # a minute or more each


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.slow) if _kills(m)[2] in _LARGE else n
    for n, m in sorted(HOLES.items())])
def test_each_hole_is_killed_by_its_invariant_in_its_recorded_steps(name: str) -> None:
    m = HOLES[name]
    inv, length, world = _kills(m)
    assert inv in INVARIANTS and world in {ns.name for ns in DEFAULT}
    out = model_mutants.run_one(m, worlds=(world,))
    assert (out.caught, out.length, out.world) == (inv, length, world), out


@pytest.mark.slow
def test_a_lost_wakeup_after_a_crash_is_caught_by_i_7() -> None:
    """I-7 is not switched off by a crash: the hop's re-send of a lost reply exists only
    after a crash, and a re-send that never wakes its recipient leaves a quiescent
    world with the reply unread; I-7 names it (I-21 catches it earlier, as a step)."""
    out = model_mutants.run_one(HOLES["lost-reply-never-wakes"], worlds=("dispatch",),
                                invariant="I-7")
    assert out.caught == "I-7", out


def test_the_ghost_aware_search_keeps_states_the_invariants_tell_apart() -> None:
    """Merging states whatever their ghost keeps the history of the first path only: in
    `crash-loop` the guard that never resets is then found only by a longer run (the
    state whose revivals were counted at the current tip was merged into one counted at
    an older tip), and the search is no longer breadth-first over what I-20 reads."""
    m = HOLES["guard-never-resets"]
    blind = model_mutants.run_one(m, worlds=("crash-loop",), ghost=False)
    aware = model_mutants.run_one(m, worlds=("crash-loop",))
    assert (aware.caught, aware.length) == ("I-20", 21)
    assert blind.caught == "I-20" and blind.length > aware.length
    scope = SCOPES["crash-loop"].scope
    assert explore(Profile(), scope, ghost=False).states < explore(Profile(), scope).states


def test_the_crash_loop_guard_fires_in_the_default_worlds(reference_run: Coverage) -> None:
    assert any(t.startswith("sweep:") and "gave up on P" in t for t in reference_run.texts)
    assert any("returned mark repaired" in t for t in reference_run.texts)
    assert any("repaired" in t and t.startswith("sweep:") for t in reference_run.texts)


def test_every_equivalence_claim_is_argued() -> None:
    """A mutant is declared equivalent only with a written argument that no observable
    outcome changes (and the claims are re-examined: the stop cascade's is gone)."""
    eq = [m for m in model_mutants.CATALOGUE if m.equivalent]
    assert {m.name for m in eq} == {"unpaired-not-declined", "sweep-ignores-missing-parent"}
    for m in eq:
        assert "no observable outcome changes" in m.equivalent and len(m.equivalent) > 300
        assert not m.kills


# ------------------------------------------------------------------ symmetry


def _observed(ns: NamedScope, symmetry: bool) -> tuple[set[object], dict[str, int], set[str]]:
    seen: set[object] = set()
    orders: set[str] = set()

    def observe(pre: State, step: Step, post: State) -> None:
        s = sorted_form(post)
        seen.add((s, ghost_reading(s, ns.scope)))
        orders.add("".join(p.role.value[0] for p in post.procs))

    r = explore(Profile(), ns.scope, liveness=True, observe=observe, symmetry=symmetry)
    assert r.complete
    return seen, {k: len(v.trace) for k, v in r.violations.items()}, orders


@pytest.mark.parametrize("ns", DEFAULT, ids=lambda ns: ns.name)
def test_the_reduction_keeps_every_verdict_and_reachable_observation(ns: NamedScope) -> None:
    """The reduced and the plain search reach the same states (read with processes in
    one fixed order, ghost included) and give the same verdicts."""
    full, full_verdict, _ = _observed(ns, symmetry=False)
    reduced, reduced_verdict, _ = _observed(ns, symmetry=True)
    assert reduced == full
    assert reduced_verdict == full_verdict


def test_the_reduction_keeps_the_order_of_roles() -> None:
    """A driver that starts after the scan began is explored as such (and a writer after
    a driver): every process kind meets every other in both orders somewhere."""
    orders: set[str] = set()
    for ns in (SCOPES["races"], SCOPES["faults"], SCOPES["siblings"]):
        orders |= _observed(ns, symmetry=True)[2]
    assert {"Ds", "sD", "WD", "DW"} <= orders
    roles = {r.value[0] for r in Role}
    assert roles == {c for o in orders for c in o}
