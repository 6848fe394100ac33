"""`lernie-check`: explore the default scope for every profile and variant.

With no arguments it prints one table and exits 0 only if `reference` holds
every invariant and every variant shows each violation it is expected to.
`--variant NAME --trace` prints a shortest counterexample as a swimlane
(`--format mermaid` for a Mermaid diagram, `--json` for machines);
`--bench` prints throughput and per-variant times; `--coverage` counts, per
rule and per addressing case, the steps the default worlds take.
Subcommands (first argument): `mutants` runs the verifier's mutation score
(`lernie_stateful.model_mutants`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import NamedTuple

from lernie_spec.explore import Violation, explore
from lernie_spec.properties import INVARIANTS
from lernie_spec.trace import as_json, mermaid, swimlane
from lernie_spec.variants import (
    BY_NAME,
    DEFAULT,
    SCOPES,
    VARIANTS,
    NamedScope,
    Variant,
    largest_first,
)


class Outcome(NamedTuple):
    variant: Variant
    found: dict[str, tuple[Violation, str]]  # invariant -> (shortest trace, scope)
    states: int
    edges: int
    seconds: float

    @property
    def ok(self) -> bool:
        if not self.variant.expected:
            return not self.found
        return self.variant.expected <= self.found.keys()

    @property
    def verdict(self) -> str:
        if not self.found:
            return "holds"
        return "violates " + ", ".join(sorted(self.found, key=_inv_key))


def _inv_key(inv: str) -> int:
    return int(inv.split("-")[1])


def run(v: Variant, scopes: tuple[NamedScope, ...] = DEFAULT, quiet: bool = False) -> Outcome:
    """Explore each scope in turn; a variant stops once its expectation is met."""
    found: dict[str, tuple[Violation, str]] = {}
    states = edges = 0
    secs = 0.0
    for ns in scopes:
        def tick(n: int, t: float, ns: NamedScope = ns) -> None:
            if not quiet:
                print(f"  {v.name} / {ns.name}: {n} states, {n / t:,.0f} states/s",
                      file=sys.stderr, flush=True)

        want = frozenset(v.expected - found.keys()) or None if v.expected else None
        r = explore(v.profile, ns.scope, want=want, progress=tick)
        states += r.states
        edges += r.edges
        secs += r.seconds
        for inv, vio in r.violations.items():
            found.setdefault(inv, (vio, ns.name))
        if v.expected and v.expected <= found.keys():
            break
    return Outcome(v, found, states, edges, secs)


def jobs_default() -> int:
    """One worker per CPU this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


def _run_quiet(v: Variant, scopes: tuple[NamedScope, ...]) -> Outcome:
    return run(v, scopes, quiet=True)


def _merge(v: Variant, parts: list[Outcome]) -> Outcome:
    found: dict[str, tuple[Violation, str]] = {}
    for o in parts:
        for inv, hit in o.found.items():
            found.setdefault(inv, hit)
    return Outcome(v, found, sum(o.states for o in parts), sum(o.edges for o in parts),
                   sum(o.seconds for o in parts))


def run_all(vs: list[Variant], scopes: tuple[NamedScope, ...] = DEFAULT, quiet: bool = False,
            jobs: int = 1) -> list[Outcome]:
    """`run` for each variant, spread over `jobs` processes. A variant expected
    to hold must exhaust every world, so it is split into one task per world
    (the largest start first, `largest_first`); a variant expected to fail runs
    its worlds in order in one task, stopping as `run` does. The result is the
    same as running them one by one: the worlds' findings merge in scope order."""
    if jobs <= 1:
        return [run(v, scopes, quiet) for v in vs]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures: list[list[Future[Outcome]]] = [[] for _ in vs]
        for k, v in enumerate(vs):
            if not v.expected:
                started = {ns.name: pool.submit(_run_quiet, v, (ns,))
                           for ns in largest_first(scopes)}
                futures[k] = [started[ns.name] for ns in scopes]
        for k, v in enumerate(vs):
            if v.expected:
                futures[k] = [pool.submit(_run_quiet, v, scopes)]
        return [_merge(v, [f.result() for f in fs]) for v, fs in zip(vs, futures, strict=True)]


def _length(o: Outcome) -> str:
    if not o.found:
        return "-"
    parts = []
    for inv in sorted(o.variant.expected or o.found, key=_inv_key):
        if inv in o.found:
            vio = o.found[inv][0]
            n = len(vio.trace)
            parts.append(f"{inv}:{n - vio.loop}+{vio.loop} loop" if vio.loop else f"{inv}:{n}")
    return " ".join(parts)


def table(outs: list[Outcome]) -> str:
    heads = ("profile/variant", "expected", "verdict", "states", "time", "trace", "ok")
    body = []
    for o in outs:
        exp = ", ".join(sorted(o.variant.expected, key=_inv_key)) or "holds"
        body.append((o.variant.name, exp, o.verdict, f"{o.states:,}",
                     f"{o.seconds:.2f}s", _length(o), "yes" if o.ok else "NO"))
    w = [max(len(h), *(len(r[k]) for r in body)) for k, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w[k]) for k, h in enumerate(heads)).rstrip()]
    lines.append("  ".join("-" * x for x in w))
    lines += ["  ".join(c.ljust(w[k]) for k, c in enumerate(r)).rstrip() for r in body]
    return "\n".join(lines)


def _scope_line(scopes: tuple[NamedScope, ...]) -> str:
    head = "default scope: " if scopes == DEFAULT else "scope: "
    return head + "; ".join(f"{ns.name} ({ns.summary})" for ns in scopes)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="lernie-check", description=__doc__.splitlines()[0])
    ap.add_argument("--variant", action="append", metavar="NAME",
                    help="check only this profile or variant (repeatable)")
    ap.add_argument("--trace", action="store_true",
                    help="print the shortest counterexample of the variant")
    ap.add_argument("--invariant", metavar="I-n", help="which violation to trace")
    ap.add_argument("--format", choices=("swimlane", "mermaid"), default="swimlane")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("--bench", action="store_true", help="throughput and per-variant times")
    ap.add_argument("--list", action="store_true", help="list profiles, variants and scopes")
    ap.add_argument("--coverage", action="store_true",
                    help="rule and addressing-case coverage of the default worlds")
    ap.add_argument("--scope", action="append", metavar="NAME", choices=sorted(SCOPES),
                    help="explore this world instead of the default scope (repeatable)")
    ap.add_argument("--jobs", type=int, default=jobs_default(), metavar="N",
                    help="worker processes (default: one per CPU; 1 explores in this process)")
    ns = ap.parse_args(argv)
    if ns.list:
        for v in VARIANTS:
            exp = ", ".join(sorted(v.expected, key=_inv_key)) or "holds"
            print(f"{v.name:34} {exp:18} {v.summary}")
        print()
        for sc in SCOPES.values():
            tag = "default" if sc in DEFAULT else "extra"
            print(f"scope {sc.name:12} {tag:8} {sc.summary}")
        return 0
    names = ns.variant or [v.name for v in VARIANTS]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        print(f"lernie-check: unknown variant {unknown[0]!r} (see --list)", file=sys.stderr)
        return 2
    if ns.invariant is not None and ns.invariant not in INVARIANTS:
        print(f"lernie-check: unknown invariant {ns.invariant!r} (one of I-1 … I-20)",
              file=sys.stderr)
        return 2
    if ns.bench:
        return _bench(names)
    if ns.coverage:
        from lernie_spec.coverage import measure, report

        cov = measure(jobs=ns.jobs)
        print(report(cov))
        return 1 if cov.missing_rules() or cov.missing_cases() else 0
    scopes = tuple(SCOPES[s] for s in ns.scope) if ns.scope else DEFAULT
    outs = run_all([BY_NAME[n] for n in names], scopes, quiet=ns.json, jobs=ns.jobs)
    if ns.trace:
        return _traces(outs, ns.invariant, ns.format, ns.json)
    ok = all(o.ok for o in outs)
    if ns.json:
        print(json.dumps({
            "ok": ok,
            "scopes": [{"name": s.name, "summary": s.summary} for s in scopes],
            "results": [{
                "variant": o.variant.name,
                "expected": sorted(o.variant.expected, key=_inv_key),
                "violated": sorted(o.found, key=_inv_key),
                "states": o.states, "seconds": round(o.seconds, 3), "ok": o.ok,
                "traces": {inv: {"length": len(vio.trace), "loop": vio.loop, "scope": sc}
                           for inv, (vio, sc) in o.found.items()},
            } for o in outs],
        }, indent=2))
    else:
        print(_scope_line(scopes))
        print()
        print(table(outs))
        print()
        bad = [o.variant.name for o in outs if not o.ok]
        print("all as expected" if ok else "NOT as expected: " + ", ".join(bad))
    return 0 if ok else 1


def _traces(outs: list[Outcome], inv: str | None, fmt: str, as_js: bool) -> int:
    status = 0
    for o in outs:
        pick = inv or min(o.variant.expected or o.found or {"-"}, key=lambda i: (
            len(o.found[i][0].trace) if i in o.found else 10**9))
        if pick not in o.found:
            print(f"{o.variant.name}: no counterexample for {pick} "
                  f"({o.verdict} in the default scope)")
            status = status or (0 if not o.variant.expected and inv is None else 1)
            continue
        vio, scope = o.found[pick]
        if as_js:
            print(as_json(o.variant.name, vio))
        elif fmt == "mermaid":
            print(mermaid(o.variant.name, vio))
        else:
            print(f"(scope: {scope})")
            print(swimlane(o.variant.name, vio))
            print()
    return status


def _bench(names: list[str]) -> int:
    ref = BY_NAME["reference"]
    print("reference, each scope exhausted (states, edges, seconds, states/s; states without "
          "the symmetry reduction):")
    total = plain = 0
    t0 = time.perf_counter()
    for sc in DEFAULT:
        r = explore(ref.profile, sc.scope)
        total += r.states
        print(f"  {sc.name:15} {r.states:9,} states {r.edges:10,} edges "
              f"{r.seconds:7.2f}s {r.states / r.seconds:10,.0f} states/s", flush=True)
    wall = time.perf_counter() - t0
    print(f"  {'total':15} {total:9,} states {'':16} {wall:7.2f}s "
          f"{total / wall:10,.0f} states/s")
    for sc in DEFAULT:
        plain += explore(ref.profile, sc.scope, liveness=False, symmetry=False).states
    print(f"  symmetry reduction: {plain:,} states without it, {total:,} with it "
          f"({total / plain:.0%})")
    print("time to find each variant's expected violations (shortest traces):")
    for n in names:
        v = BY_NAME[n]
        if not v.expected:
            continue
        o = run(v, quiet=True)
        print(f"  {n:34} {o.seconds:7.3f}s {o.states:8,} states  {_length(o)}")
    return 0


def _mutants(argv: list[str]) -> int:
    from lernie_stateful.model_mutants import main as mutants_main

    return mutants_main(argv)


def _kit(verb: str) -> Callable[[list[str]], int]:
    """The conformance kit's subcommands (lernie_stateful.conform)."""

    def run_kit(argv: list[str]) -> int:
        from lernie_stateful.conform.cli import main as kit

        return kit([verb, *argv])

    return run_kit


def _refine(argv: list[str]) -> int:
    """The implementation against the model (lernie_stateful.refinement)."""
    from lernie_stateful.refine_cli import refine_main

    return refine_main(argv)


def _code_mutants(argv: list[str]) -> int:
    """Catalogued edits of the implementation against the fast checkers."""
    from lernie_stateful.code_mutants import main as code_mutants_main

    return code_mutants_main(argv)


def _bugs(argv: list[str]) -> int:
    """Seeded implementation bugs under the refinement machine."""
    from lernie_stateful.refine_cli import bugs_main

    return bugs_main(argv)


# Subcommands, dispatched by the first argument; anything else is the checker.
SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {
    "mutants": _mutants,
    "refine": _refine,
    "bugs": _bugs,
    "code-mutants": _code_mutants,
    "audit": _kit("audit"),
    "conform": _kit("conform"),
    "serve-model": _kit("serve-model"),
}


def entry() -> None:
    args = sys.argv[1:]
    try:
        sub = SUBCOMMANDS.get(args[0]) if args else None
        code = sub(args[1:]) if sub is not None else main(args)
        sys.stdout.flush()
    except BrokenPipeError:  # a reader such as `head` went away: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    entry()
