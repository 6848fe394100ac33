"""`lernie-check --coverage`: which rules and addressing cases the default worlds take.

Every edge the explorer follows under the reference profile counts once for
its rule and for each further rule its decision applied (`Step.also`). Every
final-response event counts once for its addressing case, read from the ghost
transcript with the invariants' own reading (`properties.reply`): the operator
(the last prompter is `user`), the parent, a sibling, an own child, a
grandchild. A rule the model implements (`model.RULES`) that no edge takes is
a gap in the worlds, and the report (and a test) says so.

The same pass keeps each world's exploration result and the set of step texts
seen, so one exploration of the default worlds serves every check that needs
one (the test suite explores them once per session).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import NamedTuple

from lernie_spec import model
from lernie_spec.explore import Result, explore
from lernie_spec.model import USER, Action, Profile, Scope, State, Step
from lernie_spec.properties import last_prompter, reply
from lernie_spec.variants import DEFAULT, NamedScope, largest_first

CASES = ("operator", "parent", "sibling", "own child", "grandchild")


class Coverage(NamedTuple):
    rules: Counter[str]
    cases: Counter[str]
    states: int
    runs: dict[str, Result]  # world name -> its exploration (reference profile)
    texts: frozenset[str]  # every step text seen

    def missing_rules(self) -> list[str]:
        return sorted(r for r in model.RULES if not self.rules[r])

    def missing_cases(self) -> list[str]:
        return [c for c in CASES if not self.cases[c]]


def case_of(scope: Scope, st: State, c: int) -> str:
    """The addressing case of c's newest final response in st."""
    entries = st.agents[c].history.value.entries
    if last_prompter(entries, c) == USER:
        return "operator"
    _, to = reply(entries, c, scope)
    par = scope.parents
    if to == par[c]:
        return "parent"
    if to >= 0 and par[to] == par[c]:
        return "sibling"
    if to >= 0 and par[to] == c:
        return "own child"
    if to >= 0 and par[to] >= 0 and par[par[to]] == c:
        return "grandchild"
    return "nobody" if to < 0 else "other"


def _measure_world(ns: NamedScope, liveness: bool
                   ) -> tuple[Counter[str], Counter[str], set[str], Result]:
    rules: Counter[str] = Counter()
    cases: Counter[str] = Counter()
    texts: set[str] = set()

    def observe(pre: State, step: Step, post: State) -> None:
        rules[step.rule] += 1
        for r in step.also:
            rules[r] += 1
        texts.add(step.text)
        if step.action is Action.MODEL_FINAL:
            cases[case_of(ns.scope, post, pre.procs[step.actor].agent)] += 1

    r = explore(Profile(), ns.scope, liveness=liveness, observe=observe)
    return rules, cases, texts, r


def measure(worlds: tuple[NamedScope, ...] = DEFAULT, liveness: bool = False,
            jobs: int = 1, progress: Callable[[str], None] | None = None) -> Coverage:
    """Explore each world under the reference, counting rules and addressing
    cases; with `liveness`, each run also checks I-13. With `jobs` > 1 the
    worlds are explored in that many processes (the largest first) and their
    counts added up. `progress` is told each world explored and the states so far."""
    done: list[int] = []

    def tell(ns: NamedScope, states: int) -> None:
        done.append(states)
        if progress is not None:
            progress(f"{len(done)}/{len(worlds)} worlds explored ({ns.name} last), "
                     f"{sum(done):,} states so far")

    if jobs > 1 and len(worlds) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futs = {ns.name: pool.submit(_measure_world, ns, liveness)
                    for ns in largest_first(worlds)}
            if progress is not None:  # after the workers started (none is forked later)
                progress(f"0/{len(worlds)} worlds explored ({jobs} workers)")
            named = {f: ns for ns in worlds for f in [futs[ns.name]]}
            for f in as_completed(named):
                tell(named[f], f.result()[3].states)
            parts = [futs[ns.name].result() for ns in worlds]
    else:
        parts = []
        if progress is not None:
            progress(f"0/{len(worlds)} worlds explored")
        for ns in worlds:
            parts.append(_measure_world(ns, liveness))
            tell(ns, parts[-1][3].states)
    rules: Counter[str] = Counter()
    cases: Counter[str] = Counter()
    texts: set[str] = set()
    runs: dict[str, Result] = {}
    for ns, (ru, ca, te, r) in zip(worlds, parts, strict=True):
        rules.update(ru)
        cases.update(ca)
        texts |= te
        runs[ns.name] = r
    return Coverage(rules, cases, sum(r.states for r in runs.values()), runs, frozenset(texts))


def report(cov: Coverage) -> str:
    lines = [f"rule coverage of the default worlds ({cov.states:,} states, reference profile):"]
    for r in sorted(model.RULES, key=_rule_key):
        lines.append(f"  {r:11} {cov.rules[r]:10,}" + ("  NEVER TAKEN" if not cov.rules[r] else ""))
    for r in sorted(model.NOT_MODELLED, key=_rule_key):
        lines.append(f"  {r:11} {'-':>10}  not modelled: {model.NOT_MODELLED[r]}")
    lines.append(f"  {'CRASH':11} {cov.rules['CRASH']:10,}")
    lines.append("final responses by addressing case:")
    for c in (*CASES, "nobody", "other"):
        if c in CASES or cov.cases[c]:
            lines.append(f"  {c:11} {cov.cases[c]:10,}" + ("  NEVER TAKEN" if not cov.cases[c]
                                                         and c in CASES else ""))
    gaps = cov.missing_rules() + cov.missing_cases()
    lines.append("coverage: every implemented rule and addressing case taken" if not gaps
                 else "coverage: NOT taken: " + ", ".join(gaps))
    return "\n".join(lines)


def _rule_key(r: str) -> tuple[str, int]:
    area, n = r.rsplit("-", 1)
    return area, int(n)
