"""`lernie-check check` (the default subcommand): explore the model's worlds.

With no options it explores the default scope for every profile and variant,
prints one table and exits 0 only if `reference` holds every invariant and every
variant shows each violation it is expected to. `--variant NAME --trace` prints a
shortest counterexample as a swimlane that ends with why its last step breaks the
invariant (`--format mermaid` for a Mermaid diagram, `--json` for machines,
`--html FILE` for a drawing); `--bench` prints throughput and per-variant times;
`--coverage` counts, per rule and per addressing case, the steps the default
worlds take. This module is the model checker's library and this one subcommand;
the `lernie-check` command with all its subcommands is `lernie_stateful.cli`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

import lernie_spec.cliopts as cliopts
from lernie_spec.cliopts import Progress
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
    seconds: float  # the explorations' own clock, summed over the worlds
    cpu: float = 0.0  # processor seconds of the explorations (in whichever worker ran them)

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


def run(v: Variant, scopes: tuple[NamedScope, ...] = DEFAULT, quiet: bool = False,
        progress: Progress | None = None, done: int = 0) -> Outcome:
    """Explore each scope in turn; a variant stops once its expectation is met.
    `progress` (unless `quiet`) shows the world being explored and its states so far,
    after `done` states explored before this variant."""
    found: dict[str, tuple[Violation, str]] = {}
    states = edges = 0
    secs = 0.0
    cpu0 = time.process_time()
    for ns in scopes:
        def tick(n: int, t: float, ns: NamedScope = ns, before: int = done + states) -> None:
            if progress is not None and not quiet:
                progress.update(f"{v.name} / {ns.name}: {n:,} states in this world, "
                                f"{before + n:,} in all ({n / t:,.0f} states/s)")

        want = frozenset(v.expected - found.keys()) or None if v.expected else None
        r = explore(v.profile, ns.scope, want=want, progress=tick)
        states += r.states
        edges += r.edges
        secs += r.seconds
        for inv, vio in r.violations.items():
            found.setdefault(inv, (vio, ns.name))
        if v.expected and v.expected <= found.keys():
            break
    return Outcome(v, found, states, edges, secs, time.process_time() - cpu0)


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
                   sum(o.seconds for o in parts), sum(o.cpu for o in parts))


def run_all(vs: list[Variant], scopes: tuple[NamedScope, ...] = DEFAULT, quiet: bool = False,
            jobs: int = 1, progress: Progress | None = None) -> list[Outcome]:
    """`run` for each variant, spread over `jobs` processes. A variant expected
    to hold must exhaust every world, so it is split into one task per world
    (the largest start first, `largest_first`); a variant expected to fail runs
    its worlds in order in one task, stopping as `run` does. The result is the
    same as running them one by one: the worlds' findings merge in scope order.
    `progress` shows the worlds explored, the states so far and the violations found."""
    if jobs <= 1:
        outs: list[Outcome] = []
        for v in vs:
            outs.append(run(v, scopes, quiet, progress, sum(o.states for o in outs)))
        return outs
    tally = {"tasks": 0, "done": 0, "states": 0, "found": 0}

    def finished(f: Future[Outcome]) -> None:
        if f.cancelled() or f.exception() is not None:
            return
        o = f.result()
        tally["done"] += 1
        tally["states"] += o.states
        tally["found"] += len(o.found)
        if progress is not None and not quiet:
            progress.update(f"{tally['done']}/{tally['tasks']} explorations done "
                            f"({jobs} workers), {tally['states']:,} states so far, "
                            f"{tally['found']} violations found", force=True)

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
        tally["tasks"] = sum(len(fs) for fs in futures)
        if progress is not None and not quiet:  # the workers are started: none forks later
            progress.update(f"0/{tally['tasks']} explorations done ({jobs} workers)",
                            force=True)
        for fs in futures:
            for f in fs:
                f.add_done_callback(finished)
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
    """One row per variant; `cpu` is the processor time of its explorations (summed over
    the workers that ran its worlds, so it may exceed the wall time of the run)."""
    heads = ("profile/variant", "expected", "verdict", "states", "cpu", "trace", "ok")
    body = []
    for o in outs:
        exp = ", ".join(sorted(o.variant.expected, key=_inv_key)) or "holds"
        body.append((o.variant.name, exp, o.verdict, f"{o.states:,}",
                     f"{o.cpu:.2f}s", _length(o), "yes" if o.ok else "NO"))
    w = [max(len(h), *(len(r[k]) for r in body)) for k, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w[k]) for k, h in enumerate(heads)).rstrip()]
    lines.append("  ".join("-" * x for x in w))
    lines += ["  ".join(c.ljust(w[k]) for k, c in enumerate(r)).rstrip() for r in body]
    return "\n".join(lines)


def _scope_line(scopes: tuple[NamedScope, ...]) -> str:
    head = "default scope: " if scopes == DEFAULT else "scope: "
    return head + "; ".join(f"{ns.name} ({ns.summary})" for ns in scopes)


HELP = """\
Explore the model's worlds. With no options: the default scope for every profile
and variant, one table, exit 0 only if `reference` holds every invariant and every
variant shows each violation it is expected to. `--variant NAME --trace` prints a
shortest counterexample as a swimlane that ends with why its last step breaks the
invariant; `--html FILE` draws the run's counterexamples in one page."""


def build_parser(prog: str = "lernie-check check") -> argparse.ArgumentParser:
    ap = cliopts.parser(prog, HELP)
    ap.add_argument("--variant", action="append", metavar="NAME",
                    help="check only this profile or variant (repeatable; default: all of "
                    "them, see --list)")
    ap.add_argument("--trace", action="store_true",
                    help="print the shortest counterexample of each variant instead of the "
                    "table")
    ap.add_argument("--invariant", metavar="I-n",
                    help="with --trace: which violation to trace (default: the variant's "
                    "shortest expected one)")
    ap.add_argument("--format", choices=("swimlane", "mermaid"), default="swimlane",
                    help="with --trace: a text table with one lane per process, or a Mermaid "
                    "sequence diagram")
    ap.add_argument("--width", type=int, default=None, metavar="N",
                    help="with --trace: wrap the swimlane to N columns (default: the "
                    "terminal's width on a terminal, one line per step otherwise; 0: one "
                    "line per step)")
    ap.add_argument("--bench", action="store_true",
                    help="throughput of the reference over the default worlds and each "
                    "variant's time to its violations")
    ap.add_argument("--list", action="store_true", help="list profiles, variants and scopes")
    ap.add_argument("--coverage", action="store_true",
                    help="rule and addressing-case coverage of the default worlds")
    ap.add_argument("--scope", action="append", metavar="NAME", choices=sorted(SCOPES),
                    help="explore this world instead of the default scope (repeatable; one "
                    f"of {', '.join(sorted(SCOPES))})")
    ap.add_argument("--jobs", type=int, default=jobs_default(), metavar="N",
                    help="worker processes (default: one per CPU; 1 explores in this process)")
    cliopts.add_common(ap, html=True)
    return ap


def main(argv: list[str] | None = None, prog: str = "lernie-check check") -> int:
    ns = build_parser(prog).parse_args(argv)
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

        shown = Progress.of("lernie-check --coverage", ns.quiet, ns.verbose)
        try:
            cov = measure(jobs=ns.jobs, progress=lambda text: shown.update(text, force=True))
        finally:
            shown.done()
        print(report(cov))
        return 1 if cov.missing_rules() or cov.missing_cases() else 0
    scopes = tuple(SCOPES[s] for s in ns.scope) if ns.scope else DEFAULT
    progress = Progress.of("lernie-check", ns.quiet, ns.verbose)
    try:
        outs = run_all([BY_NAME[n] for n in names], scopes, jobs=ns.jobs, progress=progress)
    finally:
        progress.done()
    wall, cpu = progress.times()
    jobs = max(1, ns.jobs)
    if ns.html:
        _write(ns.html, html_report(outs, scopes, ns.invariant if ns.trace else None,
                                    wall, cpu, jobs))
    if ns.trace:
        width = ns.width if ns.width is not None else (
            cliopts.terminal_width() if sys.stdout.isatty() else 0)
        return _traces(outs, ns.invariant, ns.format, ns.json, width)
    ok = all(o.ok for o in outs)
    if ns.json:
        print(json.dumps({
            "ok": ok,
            "scopes": [{"name": s.name, "summary": s.summary} for s in scopes],
            "wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3), "jobs": jobs,
            "results": [{
                "variant": o.variant.name,
                "expected": sorted(o.variant.expected, key=_inv_key),
                "violated": sorted(o.found, key=_inv_key),
                "states": o.states, "seconds": round(o.seconds, 3),
                "cpu_seconds": round(o.cpu, 3), "ok": o.ok,
                "traces": {inv: {"length": len(vio.trace), "loop": vio.loop, "scope": sc}
                           for inv, (vio, sc) in o.found.items()},
            } for o in outs],
        }, indent=2))
    else:
        print(_scope_line(scopes))
        print()
        print(table(outs))
        print()
        print(cliopts.timing(wall, cpu, jobs))
        bad = [o.variant.name for o in outs if not o.ok]
        print("all as expected" if ok else "NOT as expected: " + ", ".join(bad))
    return 0 if ok else 1


def _write(path: str, text: str) -> None:
    """Write a report; a path that cannot be written is the user's error, said in one line."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"lernie-check: cannot write {path}: {exc.strerror}", file=sys.stderr)
        raise SystemExit(1) from exc


def _pick(o: Outcome, inv: str | None) -> str:
    return inv or min(o.variant.expected or o.found or {"-"}, key=lambda i: (
        len(o.found[i][0].trace) if i in o.found else 10**9))


def _traces(outs: list[Outcome], inv: str | None, fmt: str, as_js: bool,
            width: int = 0) -> int:
    status = 0
    for o in outs:
        pick = _pick(o, inv)
        if pick not in o.found:
            print(f"{o.variant.name}: no counterexample for {pick} "
                  f"({o.verdict} in the default scope)")
            status = status or (0 if not o.variant.expected and inv is None else 1)
            continue
        vio, scope = o.found[pick]
        world = SCOPES[scope].scope
        if as_js:
            print(as_json(o.variant.name, vio, world))
        elif fmt == "mermaid":
            print(mermaid(o.variant.name, vio, world))
        else:
            print(f"(scope: {scope})")
            print(swimlane(o.variant.name, vio, world, width))
            print()
    return status


def html_report(outs: list[Outcome], scopes: tuple[NamedScope, ...], inv: str | None,
                wall: float, cpu: float, jobs: int) -> str:
    """The run as one HTML page: the table, then each counterexample found (with `inv`,
    only that invariant's), the first one open."""
    import lernie_spec.html as html

    ok = all(o.ok for o in outs)
    rows_html = "".join(
        f'<tr><td><a href="#{html.esc(o.variant.name)}">{html.esc(o.variant.name)}</a></td>'
        f"<td>{html.esc(', '.join(sorted(o.variant.expected, key=_inv_key)) or 'holds')}</td>"
        f"<td>{html.esc(o.verdict)}</td><td class=num>{o.states:,}</td>"
        f"<td class=num>{o.cpu:.2f}s</td><td>{html.esc(_length(o))}</td>"
        f'<td class="{"ok" if o.ok else "bad"}">{"yes" if o.ok else "NO"}</td></tr>'
        for o in outs)
    summary = html.section(
        "verdicts", "<table><thead><tr><th>profile/variant</th><th>expected</th>"
        "<th>verdict</th><th>states</th><th>cpu</th><th>trace</th><th>ok</th></tr></thead>"
        f"<tbody>{rows_html}</tbody></table>", bad=not ok, is_open=True,
        tag="all as expected" if ok else "NOT as expected")
    sections = [summary]
    for o in outs:
        picks = [inv] if inv else sorted(o.found, key=_inv_key)
        for k in picks:
            if k not in o.found:
                continue
            vio, scope = o.found[k]
            sections.append(html.section(
                f"{o.variant.name}: {k}", html.counterexample(
                    o.variant.name, vio, SCOPES[scope].scope, scope),
                bad=True, is_open=len(sections) == 1,
                tag=(f"{len(vio.trace) - vio.loop} steps, then a {vio.loop}-step cycle"
                     if vio.loop else f"{len(vio.trace)} steps"),
                ident=o.variant.name if k == picks[0] else ""))
    head = "default scope" if scopes == DEFAULT else "scope"
    meta = (html.esc(f"{head}: {len(scopes)} worlds ({', '.join(s.name for s in scopes)})")
            + "<br>" + html.esc(cliopts.timing(wall, cpu, jobs)))
    return html.page("lernie-check: the model's worlds", meta, sections)


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


def entry() -> None:
    """The `lernie-check` command (kept for callers of this old entry point)."""
    _delegate(sys.argv[1:])


def _delegate(args: list[str]) -> None:
    """Run `lernie-check ARGS` (`python -m lernie_spec.check ARGS`, as older scripts do).
    The command lives with the checkers (`lernie_stateful.cli`); this library never
    imports it, so it is looked up by name, only when run as a command."""
    import importlib

    try:
        cli = importlib.import_module("lernie_stateful.cli")
    except ImportError:  # the model alone: only its own subcommand
        try:
            code = main(args[1:] if args[:1] == ["check"] else args)
            sys.stdout.flush()
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            code = 1
        sys.exit(code)
    sys.argv[1:] = args
    cli.entry()


if __name__ == "__main__":
    entry()
