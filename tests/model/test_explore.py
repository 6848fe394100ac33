"""The model checked by exhaustive exploration (SPEC.md §16, §19).

The reference holds every invariant in the default scope, and every historic
profile or variant shows the violation it is expected to, with a shortest
trace. Two trace lengths are checked against minimums counted by hand.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from lernie_spec.check import Outcome, run
from lernie_spec.coverage import Coverage
from lernie_spec.explore import _key, _proc_before, _proc_key, canonical, explore, sorted_form
from lernie_spec.model import NOBODY, Proc, Profile, Scope, State, Step, initial, successors
from lernie_spec.properties import (
    quiescent,
    returned_at_tip,
    state_violations,
    step_violations,
    work_due,
)
from lernie_spec.variants import BY_NAME, DEFAULT, SCOPES, VARIANTS, NamedScope, Variant

_CACHE: dict[str, Outcome] = {}


def outcome(name: str) -> Outcome:
    if name not in _CACHE:
        _CACHE[name] = run(BY_NAME[name], quiet=True)
    return _CACHE[name]


@pytest.mark.parametrize("scope", DEFAULT, ids=lambda s: s.name)
def test_i_1_to_i_19_reference_holds_in_each_default_scope(
    scope: NamedScope, reference_run: Coverage
) -> None:
    r = reference_run.runs[scope.name]
    assert r.complete
    assert r.violations == {}
    # the scope is not trivially small (`stop-tree` is a tree and a stop, 41 states)
    assert r.states > (40 if scope.name == "stop-tree" else 1000)
    # the pool's scheduling hint (`largest_first`) is this world's real size
    assert scope.size == r.states


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v.expected], ids=lambda v: v.name)
def test_each_variant_shows_its_expected_violation(variant: Variant) -> None:
    o = outcome(variant.name)
    assert o.variant.expected <= o.found.keys(), o.verdict
    for inv in o.variant.expected:
        vio = o.found[inv][0]
        assert vio.trace, inv
        assert all(step.rule for step, _ in vio.trace)


def test_i_7_lost_wakeup_shortest_trace_is_six_steps() -> None:
    # Hand count for bl-9c8f (no release rule). I-7 needs a crash-free quiescent
    # state with a plain deposit pending. The deposit costs 2 steps (the writer's
    # list, then its publish). The writer must not launch, so its probe (1 step)
    # reads BUSY: some driver holds the lock at that moment, and the cheapest
    # holder is the operator's `advance` taking the lease (1 step; a launched
    # driver would need an earlier writer's 4 steps). That driver must not deliver
    # the deposit, so its one listing (1 step) precedes the publish, and it must
    # give the lock back (1 step) for the state to be quiescent. 2+1+1+1+1 = 6.
    vio = outcome("bl-9c8f-no-release-rule").found["I-7"][0]
    assert len(vio.trace) == 6
    assert [s.rule for s, _ in vio.trace][-1] == "R-LOCK-2"
    assert quiescent(vio.trace[-1][1])


def test_i_20_no_scan_revival_is_caught_by_a_short_trace() -> None:
    # Upstream's scan (D-24): a message reaches the root (4 steps: list, publish, probe,
    # launch), its driver takes the lease, lists and moves the deposit (3 steps) and is
    # killed before the model call; a scan starts and sweeps (2 steps). The sweep finds
    # the root dead with a model call due and relaunches nothing: 10 steps.
    vio = outcome("no-scan-revival").found["I-20"][0]
    assert len(vio.trace) == 10
    rules = [s.rule for s, _ in vio.trace]
    assert "CRASH" in rules and rules[-1] == "R-SCAN-1"
    pre = vio.trace[-2][1]
    assert not pre.procs[0].lease  # the scanner alone: nobody holds the dead root
    assert all(a.pending_launches == 0 for a in vio.trace[-1][1].agents)


def test_i_20_holds_for_the_reference_after_the_same_steps() -> None:
    # The same run under the reference: the sweep launches a driver for the dead root.
    vio, world = outcome("no-scan-revival").found["I-20"]
    pre = vio.trace[-2][1]
    prof = Profile()
    scope = SCOPES[world].scope
    sweeps = [(st, s2) for st, s2 in successors(pre, prof, scope)
              if st.text.startswith("sweep")]
    assert sweeps
    for step, post in sweeps:
        assert step.launched and "revive P" in step.text
        assert not step_violations(pre, step, post, scope)


def test_i_19_a_delivery_stray_behind_a_childs_answer_is_recovered_not_stranded() -> None:
    # P dispatches C and C answers, its returned mark at its tip; the operator then
    # messages C and C's driver dies between the delivery's rename and its commit. At
    # rest, C has work due, no mail, no obituary and its mark at its unmoved tip: no
    # `died` is owed (R-SCAN-5) and the next scan revives C (R-SCAN-10), whose hop
    # commits the stray first (R-DRAIN-2). No default world holds two inputs to a child
    # and a crash; this one does, and it reaches that state.
    scope = Scope((NOBODY, 0), (True, False), messages=2, advances=0, stops=0, scans=0,
                  crashes=1, tools=0, sends=1, exhaust=0, max_procs=2)
    strays: list[State] = []

    def observe(pre: State, step: Step, post: State) -> None:
        c = post.agents[1]
        h = c.history.value
        if (quiescent(post) and c.uncommitted and returned_at_tip(h)
                and work_due(h.entries) == "call due"):
            strays.append(post)

    r = explore(Profile(), scope, observe=observe)
    assert r.complete and r.violations == {}
    assert strays and not state_violations(strays[0], scope)


def test_i_5_overwriting_deposit_shortest_trace_is_four_steps() -> None:
    # Two operator writers list the same inbox (2 steps, both take user-001),
    # both publish (2 steps); the second rename replaces the first file.
    vio = outcome("litany-0.0.12").found["I-5"][0]
    assert [s.rule for s, _ in vio.trace] == ["R-PROBE-4", "R-PROBE-4", "R-DEP-6", "R-DEP-6"]


def test_i_13_ping_pong_is_a_lasso_of_42_plus_24_steps() -> None:
    # bl-82d8: the shortest lasso, counted by phase (each step forced):
    #  8  P gets a model call: the operator's message (list, publish, probe,
    #     release+launch), P's driver starts, lists, moves and commits it.
    #  6  P's call dispatches C: tool_use, list C's inbox (forking C), publish,
    #     probe (C is free), release+launch, commit the tool result (baton kept).
    #  9  C's driver starts, lists, moves, commits P's goal; its call messages P
    #     (tool_use, list, publish, probe: busy as P's successor hop holds P's
    #     lock, commit tool result).
    #  6  P's successor hop lists C's plain message, moves, commits it; its call
    #     answers (terminal); P owes C a reply: list C's inbox, publish.
    #  8  C's successor hop lists (empty), answers P (its last prompter, owed with
    #     no debt rule), lists, publishes, releases, re-reads, self-launches,
    #     probes P: busy.
    #  5  C's new driver starts, lists, moves, commits P's reply and answers P
    #     again (the foreign reply asks nothing, but without the debt it replies).
    # = 42 steps; from here the two agents answer each other forever: per round
    # each agent's hop (start, list, move, commit, answer, list, publish) and
    # tail (release, re-read, launches), 24 steps, with no external input.
    o = outcome("bl-82d8-no-reply-debt")
    vio = o.found["I-13"][0]
    assert (len(vio.trace) - vio.loop, vio.loop) == (42, 24)
    loop = vio.trace[-vio.loop :]
    assert not any(step.external for step, _ in loop)
    assert loop[-1][1] == vio.trace[-vio.loop - 1][1]  # the cycle closes
    assert not any(quiescent(st) for _, st in loop)


def test_i_13_reply_debt_makes_the_same_exchange_terminate(reference_run: Coverage) -> None:
    r = reference_run.runs["exchange"]
    assert r.complete and "I-13" not in r.violations


def test_every_default_scope_is_small(reference_run: Coverage) -> None:
    assert all(isinstance(ns.scope, Scope) for ns in DEFAULT)
    assert set(reference_run.runs) == {ns.name for ns in DEFAULT}
    assert reference_run.states < 400_000


def _reachable(scope: Scope) -> list[State]:
    st0 = initial(scope)
    seen, todo = {st0}, [st0]
    while todo:
        for _, nxt in successors(todo.pop(), Profile(), scope):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return list(seen)


def test_symmetry_the_model_and_the_invariants_commute_with_process_order() -> None:
    """SPEC §19's proof obligation, checked on every state of `races` (three
    processes): reversing the process order permutes the successors and
    changes no state or step verdict."""
    scope = SCOPES["races"].scope
    checked = 0
    for st in _reachable(scope):
        if len(st.procs) < 2:
            continue
        flipped = st._replace(procs=st.procs[::-1])
        assert sorted_form(flipped) == sorted_form(st)
        if all(p.role is st.procs[0].role for p in st.procs):
            assert canonical(flipped) == canonical(st)  # the reduction merges these
        assert state_violations(flipped, scope) == state_violations(st, scope)

        def edges(s: State) -> dict[tuple[str, str, State], list[str]]:
            return {(step.rule, step.text, sorted_form(nxt)): step_violations(
                s, step, nxt, scope) for step, nxt in successors(s, Profile(), scope)}

        assert edges(flipped) == edges(st)
        checked += 1
    assert checked > 500


@pytest.mark.parametrize("name", ["reference", "bl-9c8f-no-release-rule", "litany-0.0.12",
                                  "no-stray-recovery", "bl-7318-release-by-close"])
def test_symmetry_reduction_keeps_every_verdict_and_shortest_trace(name: str) -> None:
    v = BY_NAME[name]
    scope = SCOPES["races"].scope
    full = explore(v.profile, scope, symmetry=False)
    reduced = explore(v.profile, scope)
    assert reduced.states < full.states
    assert {k: len(x.trace) for k, x in reduced.violations.items()} == {
        k: len(x.trace) for k, x in full.violations.items()}


def test_speed_the_fast_step_and_state_builders_agree_with_the_records() -> None:
    """`_step` and `_put` build Step and State without NamedTuple's constructor: the
    same fields in the same order, and the same defaults (SPEC §19, *Speed*)."""
    import inspect

    from lernie_spec import model

    params = inspect.signature(model._step).parameters
    assert tuple(params) == Step._fields
    assert {k: p.default for k, p in params.items() if p.default is not p.empty} == (
        Step._field_defaults)
    built = model._step("R-X", 1, "text", model.Action.PROBE, also=("R-Y",), target=0)
    assert type(built) is Step
    assert built == Step("R-X", 1, "text", model.Action.PROBE, also=("R-Y",), target=0)
    assert State._fields == ("agents", "procs", "in_flight", "budget")
    st = initial(Scope())
    (_, nxt), *_ = model.ext_message(st, Profile(), Scope())
    put = model._put(nxt, 0, nxt.procs[0]._replace(number=1))
    assert type(put) is State
    assert put == nxt._replace(procs=(nxt.procs[0]._replace(number=1),))


def test_speed_the_records_built_by_position_have_the_fields_the_transitions_give() -> None:
    """The transitions build Entry, Publication, Dep, File and Death positionally (`_new`,
    SPEC §19, *Speed*): a field added, dropped or moved in one of them must fail here,
    not shift every later value into the wrong field. The shared records built once
    (`_FINAL_ENTRY`, `_STEP_ENTRY`, `_TOOL_RESULT_ENTRY`, `_DRIVER_AT_START`) are what
    their names say."""
    from lernie_spec import model

    assert model.Entry._fields == ("kind", "sender", "deposit_kind", "tool_uses")
    assert model.Publication._fields == ("recipient", "kind", "tip", "by_sweep", "entries")
    assert model.Dep._fields == ("recipient", "sender", "kind")
    assert model.File._fields == ("sender", "n", "kind")
    assert model.Death._fields == ("role", "agent", "published", "woke", "pending")
    assert model.Entry(model.EntryKind.MODEL) == model._FINAL_ENTRY
    assert model.Entry(model.EntryKind.MODEL, tool_uses=1) == model._STEP_ENTRY
    assert model.Entry(model.EntryKind.TOOL_RESULT) == model._TOOL_RESULT_ENTRY
    driver = Proc(model.Role.DRIVER, model.NOBODY, model.Pc.START, lease=True)
    assert driver == model._DRIVER_AT_START


def test_speed_the_ghost_writers_agree_with_replace() -> None:
    """`_ah` and `_ph` copy a history without `_replace`: a new ghost whose history has
    each named field set, in its place, and every other field kept; the old history is
    untouched, and a field the history does not have is refused (SPEC §19, *Speed*)."""
    from lernie_spec import model

    st = initial(Scope())
    (_, nxt), *_ = model.ext_message(st, Profile(), Scope())
    ag = nxt.agents[0]._replace(pending_launches=1)
    p = nxt.procs[0]
    other_a = model.AgentHistory(
        (model.Entry(model.EntryKind.MODEL),), 9, (model.Publication(1, model.FINAL, 2),), 3,
        True, (4,), (5,), 6, (7,), 8, (model.Death(model.Role.SCANNER, 1, (), (), ()),),
        ("lost",))
    other_p = model.ProcHistory(((1, model.FINAL),), (1,), (0,), ((1, model.Funding.FLUSH),),
                                4, True, True, (model.File(0, 1, model.PLAIN),),
                                (model.File(0, 2, model.PLAIN),), (model.File(0, 3, model.PLAIN),))
    for write, rec, cls, other in ((model._ah, ag, model.AgentHistory, other_a),
                                   (model._ph, p, model.ProcHistory, other_p)):
        old = rec.history.value
        assert tuple(inspect.signature(write).parameters)[1:] == cls._fields
        assert all(x != y for x, y in zip(old, other, strict=True))
        for k, f in enumerate(cls._fields):
            got = write(rec, **{f: other[k]})
            assert type(got) is model.Ghost and type(got.value) is cls
            assert got.value == old._replace(**{f: other[k]}), f
            assert got.value[k] is other[k]
        assert rec.history.value is old and old == cls(**old._asdict())
    assert model._ah(ag, commits=4, leases=("taken",)).value == ag.history.value._replace(
        commits=4, leases=("taken",))
    with pytest.raises(TypeError):
        model._ah(ag, no_such_field=1)  # type: ignore[call-arg]


@pytest.mark.parametrize("record", ["Agent", "Proc", "State", "Budget"])
def test_speed_the_record_copies_agree_with_replace(record: str) -> None:
    """`agent_with`, `proc_with`, `state_with` and `budget_with` copy a record with the
    named fields replaced, as `_replace` does, in one typed call: each takes exactly its
    record's fields, keeps every field it is not given, and sets each one it is given
    (SPEC §19, *Speed*)."""
    from lernie_spec import model

    cls = getattr(model, record)
    copy = getattr(model, f"{record.lower()}_with")
    assert tuple(inspect.signature(copy).parameters)[1:] == cls._fields
    st = initial(Scope())
    (_, nxt), *_ = model.ext_message(st, Profile(), Scope())
    rec: Any = {"Agent": nxt.agents[0], "Proc": nxt.procs[0], "State": nxt,
           "Budget": nxt.budget}[record]
    assert copy(rec) == rec and type(copy(rec)) is cls
    # every field replaced, one at a time, by the value the same field has in a record
    # that differs from rec in every field (a history is a Ghost: equal to any other)
    m = model
    agent = m.Agent(False, (m.File(0, 1, m.PLAIN),), 1, True, True, True, True, m.Window.OPEN,
                    (m.Dep(0, 1, m.PLAIN),), True, True, 1, True, True, True, 2, True,
                    m.Ghost(m.AgentHistory(commits=7)))
    proc = m.Proc(m.Role.SCANNER, 1, m.Pc.SWEEP, True, 1, 1, 1, m.FINAL, 3, ((0, 1),),
                  m.FINAL, 1, True, "noop", True, m.Ghost(m.ProcHistory(released=True)))
    budget = m.Budget(*range(10, 19))
    other = {"Agent": agent, "Proc": proc, "State": m.State((agent,), (proc,), (
        m.Dep(0, 1, m.PLAIN),), budget), "Budget": budget}[record]
    changed = 0
    for k, f in enumerate(cls._fields):
        got = copy(rec, **{f: other[k]})
        assert type(got) is cls
        assert got == rec._replace(**{f: other[k]}), f
        assert got[k] is other[k] and got[:k] == rec[:k] and got[k + 1:] == rec[k + 1:]
        changed += got != rec
    assert changed == len(cls._fields) - (cls._fields[-1] == "history")


def test_speed_two_processes_of_one_role_are_ordered_as_their_keys_are() -> None:
    """`canonical`'s two-process order, read field by field, is the order of the whole
    sort keys, on every pair of same-role processes of `races` and `dispatch`, in every
    branch of the comparison (the agents differ, the counters differ, neither)."""
    branches = {"agent": 0, "pc": 0, "rest": 0}
    for name in ("races", "dispatch"):
        procs = {p for st in _reachable(SCOPES[name].scope) for p in st.procs}
        for x in procs:
            for y in procs:
                if x.role is not y.role:
                    continue
                assert _proc_before(x, y) == (_proc_key(x) < _proc_key(y)), (x, y)
                branches["agent" if x.agent != y.agent else "pc" if x.pc is not y.pc
                         else "rest"] += 1
    assert all(branches.values()), branches


def test_speed_the_search_keys_two_states_alike_exactly_when_they_are_equal() -> None:
    """The explorer's table is keyed on each state's records by number (`_key`): a key
    made from the state it came from (the records it shares taking that state's
    numbers) is the key made from scratch, and two states of `races` share a key
    exactly when they are equal (`==` ignores the ghost)."""
    scope = SCOPES["races"].scope
    numbers: list[dict[object, int]] = [{}, {}, {}, {}]
    by_key: dict[tuple[int, ...], State] = {}
    states = _reachable(scope)
    for st in states:
        key = _key(st, None, (), numbers)
        assert by_key.setdefault(key, st) == st
        for _, nxt in successors(st, Profile(), scope):
            post = canonical(nxt)
            assert _key(post, st, key, numbers) == _key(post, None, (), numbers)
    assert len(by_key) == len(set(states))
