"""Refinement row of the performance budget: seconds to catch each seeded bug.

    python -m benchmarks --only refinement [--quick]
    python -m benchmarks.refinement [--seeds N] [--first-seed S] [--only BUG] [--only BUG] ...

For every seeded implementation bug (``lernie_stateful.seeded_bugs``) the refinement
machine runs at the CI budget (40 examples of the long scope, no shrinking: the time
to the first failure is what is measured) once per seed, seeds ``S`` to ``S+N-1``
(other seeds than CI's seed 0, so the figure is not tuned to one seed). Per bug: how
many seeds caught it, the median number of examples to the first failure, and the
median seconds to it, where a seed that did not catch the bug counts as never (so a
bug caught by fewer than half the seeds has no finite median and fails its target).
A failing program is replayed on the unpatched implementation; one that fails there
too is not the bug's catch and counts as a miss ("shared").
Runs are in this process, one after the other: run it on a machine as quiet as you
can make it.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

R = TypeVar("R")

EXAMPLES = 40
SCOPE = "long"
FIRST_SEED = 100
TARGET_S = 5.0


class BugFigure(NamedTuple):
    bug: str
    caught: int
    seeds: int
    median_examples: float
    median_seconds: float  # inf when fewer than half the seeds caught it
    worst_seconds: float  # the slowest catch (inf when a seed missed)
    shared: int = 0  # seeds whose failing program fails without the bug too (not caught)


def measure(seeds: int, first_seed: int = FIRST_SEED, only: Sequence[str] = (),
            examples: int = EXAMPLES, scope: str = SCOPE) -> list[BugFigure]:
    """Run every (chosen) seeded bug at ``seeds`` seeds and return its figures (each bug's
    line goes to stderr as soon as it is measured: a long run shows its progress)."""
    from lernie_stateful.refine_cli import SCOPES, run
    from lernie_stateful.seeded_bugs import BUGS, BY_NAME

    chosen = [BY_NAME[n] for n in only] if only else list(BUGS)
    out = []
    for bug in chosen:
        runs = [run(examples, first_seed + k, SCOPES[scope], bug, shrink=0, attribute=True)
                for k in range(seeds)]
        hit = [r.failed and not r.also_unpatched for r in runs]
        secs = [r.seconds if h else math.inf for r, h in zip(runs, hit, strict=True)]
        exs = [float(r.first_at) if h else math.inf for r, h in zip(runs, hit, strict=True)]
        out.append(BugFigure(bug.name, sum(hit), seeds, statistics.median(exs),
                             statistics.median(secs), max(secs),
                             sum(r.failed and r.also_unpatched for r in runs)))
        print(table(out[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    return out


def table(figures: Sequence[BugFigure]) -> str:
    """A markdown table of the figures (docs/refinement.md, the catch rate)."""
    lines = ["| bug | caught | median examples to first failure | median seconds | worst | "
             "shared |", "|---|---|---|---|---|---|"]
    for f in figures:
        lines.append(f"| {f.bug} | {f.caught}/{f.seeds} | {_num(f.median_examples, 0)} | "
                     f"{_num(f.median_seconds, 1)} | {_num(f.worst_seconds, 1)} | "
                     f"{f.shared} |")
    return "\n".join(lines)


def _num(x: float, digits: int) -> str:
    return "never" if math.isinf(x) else f"{x:.{digits}f}"


def rows(seeds: int, make_row: Callable[..., R]) -> list[R]:
    """The benchmark rows, made by ``make_row`` (``python -m benchmarks``' row type): one
    summary row, then one row per bug."""
    start = time.perf_counter()
    figures = measure(seeds)
    wall = time.perf_counter() - start
    worst = max(figures, key=lambda f: f.median_seconds)
    caught = sum(f.caught for f in figures)
    out = [make_row(
        f"refinement: seconds to catch each seeded bug (median of {seeds} seeds)",
        worst.median_seconds, "s", None, None, f"<= {TARGET_S:g} s each",
        all(f.median_seconds <= TARGET_S for f in figures),
        f"slowest median: {worst.bug}; {caught} of {seeds * len(figures)} runs caught their "
        f"bug; {EXAMPLES} examples of scope {SCOPE}, seeds {FIRST_SEED}.."
        f"{FIRST_SEED + seeds - 1}; {wall:.0f} s in all")]
    for f in figures:
        out.append(make_row(
            f"refinement: {f.bug} (median of {seeds} seeds)", f.median_seconds, "s", None,
            None, f"<= {TARGET_S:g} s", f.median_seconds <= TARGET_S,
            f"caught {f.caught}/{f.seeds} ({f.shared} shared with the unpatched code), "
            f"median examples {_num(f.median_examples, 0)}, "
            f"slowest catch: {_num(f.worst_seconds, 1)} (s)"))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.refinement",
                                 description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--seeds", type=int, default=20, help="seeds per bug (default 20)")
    ap.add_argument("--first-seed", type=int, default=FIRST_SEED,
                    help=f"the first seed (default {FIRST_SEED})")
    ap.add_argument("--only", action="append", default=[], metavar="BUG",
                    help="measure this seeded bug (repeat for several; every bug when absent)")
    ns = ap.parse_args(argv)
    from lernie_stateful.seeded_bugs import BY_NAME

    unknown = [n for n in ns.only if n not in BY_NAME]
    if unknown:
        ap.error(f"no seeded bug named {', '.join(unknown)} (known: {', '.join(BY_NAME)})")
    start = time.perf_counter()
    figures = measure(ns.seeds, ns.first_seed, ns.only)
    print(table(figures))
    print(f"({time.perf_counter() - start:.0f} s in all)")
    return 0 if all(f.median_seconds <= TARGET_S for f in figures) else 1


if __name__ == "__main__":
    raise SystemExit(main())
