"""`lernie-check refine` and `lernie-check bugs`: the refinement machine from the command line.

``refine`` runs the machine on the installed implementation: exit 0 when no
divergence shows in N examples, else exit 1 with Hypothesis's shrunk program,
the swimlane of the implementation's points and the abstract states side by side.
``bugs`` runs it once per seeded bug (``lernie_stateful.seeded_bugs``) and prints
bug, caught, examples run, seconds to the first failure and the shrunk program's
length; exit 0 only when every bug is caught. A failing program is replayed without
the bug: one that fails there too ("shared") is not counted as the bug's catch.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import statistics
import sys
import time
from collections.abc import Iterator
from typing import NamedTuple

import hypothesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    ExampleDatabase,
    InMemoryExampleDatabase,
)
from hypothesis.errors import UnsatisfiedAssumption
from hypothesis.stateful import run_state_machine_as_test
from lernie_spec import cliopts
from lernie_spec.cliopts import Progress

from lernie_stateful import refinement
from lernie_stateful.seeded_bugs import BUGS, BY_NAME, Bug

SCOPES = {"default": 20, "short": 12, "long": 40}
"""--scope: rules per example (the length of each generated program)."""


class Outcome(NamedTuple):
    failed: bool
    examples: int
    seconds: float  # to the first failure (or the whole run)
    program: list[str]
    message: str
    draws: tuple[str, ...] = ()  # what the program's data(...) drew, in order
    first_at: int = 0  # the example that failed first (its number in the run), or 0
    also_unpatched: bool = False  # the failing program fails without the bug too


@contextlib.contextmanager
def _shrink_budget(seconds: float) -> Iterator[None]:
    """Bound Hypothesis's shrinking (its own limit is five minutes)."""
    from hypothesis.internal.conjecture import engine

    old = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = int(seconds)
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = old


def example_database(spec: str | None) -> ExampleDatabase | None:
    """``--database``: none, a directory (Hypothesis's directory database: workers of one
    machine pool what they find), or ``redis://host:port`` (its Redis database, for
    several machines; needs the ``redis`` package)."""
    if not spec:
        return None
    if spec.startswith("redis://"):
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase

        return RedisExampleDatabase(redis.Redis.from_url(spec))
    return DirectoryBasedExampleDatabase(spec)


class _FailuresOnly(InMemoryExampleDatabase):
    """An example database that keeps only what a run saves under its test's own key
    (the failing programs), not its secondary corpus or its Pareto front of targeted
    runs: a replay from it replays the failure and nothing else."""

    def save(self, key: bytes, value: bytes) -> None:
        if not key.endswith((b".secondary", b".pareto")):
            super().save(key, value)


def _failing(exc: BaseException | None) -> bool:
    """Whether ``exc``, raised by a rule, fails the example (Hypothesis's own control flow,
    such as running out of data or an unmet assumption, does not)."""
    return isinstance(exc, Exception) and not isinstance(exc, UnsatisfiedAssumption)


def run(examples: int, seed: int, steps: int, bug: Bug | None = None,
        shrink: float = 30.0, database: str | None = None, attribute: bool = False,
        progress: Progress | None = None, label: str = "") -> Outcome:
    """Run the machine for ``examples`` programs of ``steps`` rules, seeded by ``seed``.

    With ``bug`` and ``attribute``, a failing program is replayed on the unpatched
    implementation (Hypothesis's reuse phase over a private example database, cut to the
    program's own rules): ``also_unpatched`` says it fails there too, so the failure is
    not the bug's. `progress` shows the examples run so far (after `label`)."""
    own_db = _FailuresOnly() if bug is not None and attribute and not database else None
    counter: dict[str, float] = {"examples": 0, "first": 0.0, "first_at": 0}
    start = time.monotonic()

    def first_failure() -> None:
        if not counter["first"]:
            counter["first"] = time.monotonic() - start
            counter["first_at"] = counter["examples"]

    class Machine(refinement.RefinementMachine):
        def __init__(self) -> None:
            counter["examples"] += 1
            if progress is not None:
                progress.update(f"{label}{int(counter['examples'])} examples run "
                                f"(--examples {examples})"
                                + (", failed: shrinking" if counter["first"] else ""))
            super().__init__()

        def teardown(self) -> None:
            if _failing(sys.exc_info()[1]):  # a rule raised: this example failed
                first_failure()
            try:
                super().teardown()
            except BaseException:
                first_failure()
                raise

    Machine.__name__ = Machine.__qualname__ = "RefinementMachine"
    phases = ([Phase.reuse] if database else []) + [Phase.generate, Phase.target] + (
        [Phase.shrink] if shrink > 0 else [])
    config = settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                      database=own_db if own_db is not None else example_database(database),
                      phases=phases,
                      report_multiple_bugs=False,
                      suppress_health_check=list(HealthCheck), print_blob=False)
    random.seed(seed)
    machine = hypothesis.seed(seed)(Machine)  # the same seed, the same programs
    patch = bug.apply() if bug is not None else contextlib.nullcontext()
    failed, message, program, draws = False, "", [], []
    # the drivers' operator notices (stderr) are the driver log's, not the checker's output
    with patch, _shrink_budget(shrink), contextlib.redirect_stderr(io.StringIO()):
        try:
            run_state_machine_as_test(machine, settings=config)
        except BaseException as exc:  # the machine's verdict, shown below
            if isinstance(exc, KeyboardInterrupt):
                raise
            failed = True
            message = str(exc)
            notes = getattr(exc, "__notes__", [])
            program = [n for n in "\n".join(notes).splitlines()
                       if n.startswith("state.") and "teardown" not in n]
            draws = [n for n in "\n".join(notes).splitlines() if n.startswith("Draw ")]
            first_failure()
    seconds = counter["first"] if failed else time.monotonic() - start
    examples_run, first_at = int(counter["examples"]), int(counter["first_at"])
    also = False
    if own_db is not None and failed:
        # The replay runs the failing program's rules and no more: Hypothesis's reuse phase
        # extends a stored example with fresh random rules, and a divergence in those would
        # be another program's (then the unpatched code is wrong too, but not here).
        replay = settings(config, phases=[Phase.reuse],
                          stateful_step_count=max(1, len(program)))
        with contextlib.redirect_stderr(io.StringIO()):
            try:
                run_state_machine_as_test(machine, settings=replay)
            except Exception:
                also = True
    return Outcome(failed, examples_run, seconds, program, message, tuple(draws), first_at,
                   also)


REFINE_HELP = """\
Run the refinement machine on the installed implementation: Hypothesis generates
programs of operator and model steps, runs each against real drivers and the
model side by side, and fails on the first divergence. Exit 0 when none shows in
--examples programs, else exit 1 with the shrunk program, what its data drew and
the swimlane of the implementation's points beside the model's states."""

BUGS_HELP = """\
Run the refinement machine once per seeded implementation bug (a patch of the
reference applied only for the run) and print, per bug: caught or not, examples
run until the first failure, seconds to it and the shrunk program's length. A
failing program is replayed without the bug: one that fails there too ("shared")
is not the bug's catch. Exit 0 only when every bug is caught."""

_SCOPE_HELP = ("rules per example (the length of each generated program): "
               + ", ".join(f"{k} = {v}" for k, v in SCOPES.items()))


def build_refine_parser(prog: str = "lernie-check refine") -> argparse.ArgumentParser:
    ap = cliopts.parser(prog, REFINE_HELP)
    ap.add_argument("--examples", type=int, default=30, metavar="N",
                    help="programs to generate and run (Hypothesis's max_examples)")
    ap.add_argument("--seed", type=int, default=0,
                    help="the run's seed: the same seed generates the same programs")
    ap.add_argument("--scope", choices=sorted(SCOPES), default="default", help=_SCOPE_HELP)
    ap.add_argument("--shrink", type=float, default=60.0, metavar="SECONDS",
                    help="seconds of shrinking a failing program at most (0: no shrinking)")
    ap.add_argument("--database", default=None, metavar="DIR|redis://HOST:PORT",
                    help="Hypothesis's example database, shared by workers: a directory or "
                    "redis://host:port (replays what any of them found; default: none)")
    cliopts.add_common(ap)
    return ap


build_parser = build_refine_parser


def refine_main(argv: list[str]) -> int:
    ns = build_refine_parser().parse_args(argv)
    progress = Progress.of("lernie-check refine", ns.quiet, ns.verbose)
    try:
        out = run(ns.examples, ns.seed, SCOPES[ns.scope], shrink=ns.shrink,
                  database=ns.database, progress=progress)
    finally:
        progress.done()
    wall, cpu = progress.times()
    if ns.json:
        print(json.dumps({
            "ok": not out.failed, "examples": out.examples, "rules_per_example":
            SCOPES[ns.scope], "seed": ns.seed, "seconds": round(out.seconds, 3),
            "wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
            "program": out.program if out.failed else None, "draws": list(out.draws),
            "message": out.message or None,
        }, indent=2))
        return 1 if out.failed else 0
    if not out.failed:
        print(f"refine: no divergence in {out.examples} examples "
              f"({SCOPES[ns.scope]} rules each, seed {ns.seed}, wall time {out.seconds:.1f}s)")
        return 0
    print("refine: DIVERGENCE")
    print("shrunk program:")
    print("  state = RefinementMachine()")
    for line in out.program:
        print(f"  {line}")
    if out.draws:
        print("what its data(...) drew, in order:")
        for line in out.draws:
            print(f"  {line}")
    print(out.message)
    return 1


def build_bugs_parser(prog: str = "lernie-check bugs") -> argparse.ArgumentParser:
    ap = cliopts.parser(prog, BUGS_HELP)
    ap.add_argument("--examples", type=int, default=40, metavar="N",
                    help="programs to generate and run per bug and seed")
    ap.add_argument("--seed", type=int, default=0,
                    help="the first seed (with --seeds K: seeds SEED .. SEED+K-1)")
    ap.add_argument("--scope", choices=sorted(SCOPES), default="default", help=_SCOPE_HELP)
    ap.add_argument("--shrink", type=float, default=10.0, metavar="SECONDS",
                    help="seconds of shrinking each failing program at most (0: no shrinking)")
    ap.add_argument("--seeds", type=int, default=1, metavar="K",
                    help="seeds per bug (a benchmark: catch rate and median seconds)")
    ap.add_argument("--until-caught", action="store_true",
                    help="try the seeds in turn only until one catches the bug (a bug is "
                    "caught when any seed catches it; CI)")
    ap.add_argument("--only", action="append", default=[], metavar="BUG",
                    choices=sorted(BY_NAME),
                    help="run only this bug (repeatable; default: every seeded bug)")
    cliopts.add_common(ap, html=True)
    return ap


def bugs_main(argv: list[str]) -> int:
    ns = build_bugs_parser().parse_args(argv)
    chosen = [BY_NAME[n] for n in ns.only] if ns.only else list(BUGS)
    progress = Progress.of("lernie-check bugs", ns.quiet, ns.verbose)
    if not ns.json:
        print(f"{'bug':30} {'caught':>7} {'examples':>8} {'seconds':>8} {'program':>7}",
              flush=True)
    missed = 0
    rows: list[dict[str, object]] = []
    try:
        for b, bug in enumerate(chosen):
            runs: list[Outcome] = []
            for k in range(ns.seeds):
                caught_so_far = b - missed
                label = (f"bug {b + 1}/{len(chosen)} {bug.name} (seed {ns.seed + k}; "
                         f"{caught_so_far} caught so far): ")
                runs.append(run(ns.examples, ns.seed + k, SCOPES[ns.scope], bug, ns.shrink,
                                attribute=True, progress=progress, label=label))
                if ns.until_caught and runs[-1].failed and not runs[-1].also_unpatched:
                    break
            # a failure the unpatched implementation shares is not the bug's catch
            caught = [r for r in runs if r.failed and not r.also_unpatched]
            if not caught:
                missed += 1
            row = _bug_row(bug, runs, caught, ns.seed, ns.seeds, ns.until_caught)
            rows.append(row)
            if not ns.json:
                progress.done()
                print(str(row["line"]), flush=True)
    finally:
        progress.done()
    wall, cpu = progress.times()
    if ns.html:
        from lernie_stateful.report import bugs_page, write

        write(ns.html, bugs_page(rows, len(chosen) - missed, len(chosen), wall, cpu))
    if ns.json:
        print(json.dumps({"ok": missed == 0, "caught": len(chosen) - missed,
                          "bugs": len(chosen), "wall_seconds": round(wall, 3),
                          "cpu_seconds": round(cpu, 3),
                          "results": [{k: v for k, v in r.items() if k != "line"}
                                      for r in rows]}, indent=2))
    else:
        print(cliopts.timing(wall, cpu) + " (seconds: the wall time to each bug's first "
              "failure)")
        print(f"bugs: {len(chosen) - missed} caught of {len(chosen)}")
    return 0 if missed == 0 else 1


def _bug_row(bug: Bug, runs: list[Outcome], caught: list[Outcome], seed: int, seeds: int,
             until_caught: bool) -> dict[str, object]:
    """One bug's result: its table line and what the JSON and HTML reports show."""
    if seeds == 1 or until_caught:
        r = caught[0] if caught else runs[-1]
        verdict = "shared" if r.failed and r.also_unpatched else "yes" if r.failed else "NO"
        line = (f"{bug.name:30} {verdict:>7} {r.first_at or r.examples:>8} "
                f"{r.seconds:>8.1f} {len(r.program) if r.failed else '-':>7}"
                + (f"  (seed {seed + len(runs) - 1})" if until_caught else ""))
    else:
        med = statistics.median(r.seconds for r in caught) if caught else float("nan")
        r = caught[0] if caught else runs[-1]
        verdict = f"{len(caught)}/{seeds}"
        line = (f"{bug.name:30} {len(caught):>3}/{seeds:<3} "
                f"{statistics.median(x.first_at or x.examples for x in runs):>8} {med:>8.1f} "
                f"{statistics.median(len(x.program) for x in caught) if caught else '-':>7}")
    return {"bug": bug.name, "summary": bug.summary, "caught": bool(caught),
            "verdict": verdict, "seeds_run": len(runs),
            "examples": r.first_at or r.examples, "seconds": round(r.seconds, 3),
            "program": list(r.program) if r.failed else [], "message": r.message,
            "line": line}


if __name__ == "__main__":
    sys.exit(refine_main(sys.argv[1:]))
