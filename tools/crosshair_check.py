#!/usr/bin/env python3
"""CI step: check the PEP 316 contracts of the pure core with CrossHair (SPEC §20).

Finds every top-level function with ``pre:``/``post:`` lines in the contract modules,
runs ``crosshair check --analysis_kind=PEP316`` on each function in its own process
(two at a time by default, so one engine crash cannot hide the other results), and
prints what CrossHair reported for every postcondition:

- **confirmed**: "Confirmed over all paths": CrossHair exhausted the paths;
- **sampled**: "Not confirmed": no counterexample on the paths the budget reached;
- **unreached**: "Unable to meet precondition": no legal input was reached in budget;
- **counterexample**: a concrete input that breaks the contract.

Exit status 1 on any counterexample, on a module that cannot be imported, or on a
contract line CrossHair cannot parse; 0 otherwise. An internal CrossHair crash is
reported (its conditions count as unchecked) but is not a counterexample.

Usage: ``python tools/crosshair_check.py [--per-condition-timeout S] [--per-path-timeout S]
[--jobs N] [--json FILE] [TARGET ...]`` (targets: ``module`` or ``module.function``).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "tools" / "crosshair_plugin.py"

MODULES = {
    "lernie_ref.core.ids": (ROOT / "lernie_ref" / "core" / "ids.py", "PEP316"),
    "lernie_ref.core.frontmatter": (ROOT / "lernie_ref" / "core" / "frontmatter.py", "PEP316"),
    "lernie_ref.core.warrant": (ROOT / "lernie_ref" / "core" / "warrant.py", "PEP316"),
    "lernie_ref.actors.release": (ROOT / "lernie_ref" / "actors" / "release.py", "PEP316"),
    "lernie_ref.actors.drain": (ROOT / "lernie_ref" / "actors" / "drain.py", "PEP316"),
    "tests.support.bounded": (ROOT / "tests" / "support" / "bounded.py", "asserts"),
}
"""Modules CI checks, with the contract kind: PEP 316 contracts on the implementation, and
the ``asserts``-style proof harnesses of ``tests.support.bounded``, which run the real
code with no callee contract assumed."""

HARNESSED = {
    "lernie_ref.core.warrant.warrant_of": "tests.support.bounded.warrant_slots",
    "lernie_ref.core.warrant.unanswered_tail": "tests/contracts/test_pure_properties.py",
}
"""Contracted functions CrossHair cannot call symbolically (it cannot build the
``Literal`` role of a wire history), with where their rule is checked instead."""

SMALL_SCOPE_BUDGET = 20.0
"""Per-condition budget of the small-scope harnesses (``*_small``): they stop as soon as
every path is explored, and the longer budget is what lets them get there."""

HEAVY = {"render_plain", "render_result"}
"""Functions whose one path (a UTF-8 encode of symbolic text) needs a longer path budget."""

_LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<level>error|info|warning): (?P<msg>.*)$")
_HEADER = re.compile(r"^\s*(pre|post|raises|inv)\s*(\[[^\]]*\])?\s*:")


@dataclass
class Target:
    qualname: str
    path: Path
    pre: int
    post: list[int]  # absolute line numbers of the ``post:`` conditions (asserts: the def)
    off: bool = False  # ``# crosshair: off``: checked through a harness instead
    kind: str = "PEP316"


@dataclass
class Result:
    target: str
    seconds: float
    outcomes: dict[str, int] = field(default_factory=dict)
    counterexamples: list[str] = field(default_factory=list)
    tool_error: str = ""
    fatal: str = ""


def contract_targets(module: str, path: Path, kind: str) -> list[Target]:
    """Every top-level function of ``path`` with a contract of the module's kind."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    out = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        if kind == "asserts":
            body = node.body[1:] if ast.get_docstring(node) else node.body
            if body and isinstance(body[0], ast.Assert):
                pre = sum(1 for _ in _leading_asserts(body))
                out.append(Target(f"{module}.{node.name}", path, pre, [node.lineno], kind=kind))
            continue
        doc = ast.get_docstring(node, clean=False)
        if not doc or not node.body or not isinstance(node.body[0], ast.Expr):
            continue
        first = node.body[0].lineno
        pre, post = 0, []
        for offset, line in enumerate(doc.split("\n")):
            match = _HEADER.match(line)
            if match and match.group(1) == "pre":
                pre += 1
            elif match and match.group(1) == "post":
                post.append(first + offset)
        if post:
            off = "# crosshair: off" in (ast.get_source_segment(source, node) or "")
            out.append(Target(f"{module}.{node.name}", path, pre, post, off))
    return out


def _leading_asserts(body: list[ast.stmt]) -> list[ast.Assert]:
    out = []
    for stmt in body:
        if not isinstance(stmt, ast.Assert):
            break
        out.append(stmt)
    return out[:-1] if len(out) == len(body) else out


def run_one(target: Target, per_condition: float, per_path: float) -> Result:
    if target.off or target.qualname in HARNESSED:
        return Result(target.qualname, 0.0, {"off": len(target.post)})
    name = target.qualname.rsplit(".", 1)[1]
    path_budget = max(per_path, 2 * per_condition) if name in HEAVY else per_path
    cond_budget = 2 * per_condition if name in HEAVY else per_condition
    if name.endswith("_small"):
        cond_budget = max(cond_budget, SMALL_SCOPE_BUDGET)
    command = [
        sys.executable, "-m", "crosshair", "check",
        f"--analysis_kind={target.kind}", "--report_all",
        f"--per_condition_timeout={cond_budget}", f"--per_path_timeout={path_budget}",
        f"--extra_plugin={PLUGIN}", target.qualname,
    ]  # fmt: skip
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [env.get("PYTHONPATH")])]
    )
    env["PYTHONHASHSEED"] = "0"
    started = time.monotonic()
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    result = Result(target.qualname, round(time.monotonic() - started, 1))
    seen: set[int] = set()
    for raw in proc.stdout.splitlines():
        match = _LINE.match(raw)
        if not match:
            continue
        line, msg = int(match.group("line")), match.group("msg")
        seen.add(line)
        if match.group("level") == "error":
            result.counterexamples.append(f"{Path(match.group('file')).name}:{line}: {msg}")
            kind = "counterexample"
        elif msg.startswith("Confirmed over all paths"):
            kind = "confirmed"
        elif msg.startswith("Not confirmed"):
            kind = "sampled"
        elif msg.startswith("Unable to meet precondition"):
            kind = "unreached"
        else:
            kind = "other"
        result.outcomes[kind] = result.outcomes.get(kind, 0) + 1
    missing = [line for line in target.post if line not in seen]
    if target.kind == "asserts":
        missing = [] if seen else target.post
    if "CrossHairInternal" in proc.stderr or (missing and "Traceback" in proc.stderr):
        result.tool_error = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "?"
    elif proc.returncode == 2 or (proc.returncode not in (0, 1)):
        result.fatal = (proc.stderr or proc.stdout).strip()[-2000:]
    if missing and not result.fatal:
        if "unreached" in result.outcomes:
            # "Unable to meet precondition" stands for every condition it silences.
            others = sum(v for k, v in result.outcomes.items() if k != "unreached")
            result.outcomes["unreached"] = len(target.post) - others
        else:
            result.outcomes["unchecked"] = len(missing)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-condition-timeout", type=float, default=3.0)
    parser.add_argument("--per-path-timeout", type=float, default=3.0)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--json", type=Path, help="write the per-function results here")
    parser.add_argument("targets", nargs="*", help="module or module.function (default: all)")
    args = parser.parse_args(argv)

    targets: list[Target] = []
    for module, (path, kind) in MODULES.items():
        if path.exists():
            targets += contract_targets(module, path, kind)
    if args.targets:
        wanted = tuple(args.targets)
        targets = [t for t in targets if t.qualname in wanted or t.qualname.startswith(
            tuple(w + "." for w in wanted))]
    if not targets:
        print("crosshair_check: no contracts found", file=sys.stderr)
        return 1

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(
            pool.map(
                lambda t: run_one(t, args.per_condition_timeout, args.per_path_timeout), targets
            )
        )
    elapsed = time.monotonic() - started

    totals: Counter[str] = Counter()
    width = max(len(r.target) for r in results)
    for target, result in zip(targets, results, strict=True):
        totals.update(result.outcomes)
        cells = " ".join(f"{k}={v}" for k, v in sorted(result.outcomes.items()))
        print(f"{result.target:<{width}}  pre={target.pre} post={len(target.post)}  {cells}"
              f"  ({result.seconds:.0f}s)")
        for line in result.counterexamples:
            print(f"  COUNTEREXAMPLE {line}")
        if result.tool_error:
            print(f"  crosshair internal error (conditions unchecked): {result.tool_error}")
        if result.fatal:
            print(f"  FAILED TO RUN:\n{result.fatal}")
    n_pre = sum(t.pre for t in targets)
    n_post = sum(len(t.post) for t in targets)
    print(
        f"\ncontracts: {len(targets)} functions, {n_pre} preconditions, {n_post} postconditions; "
        f"confirmed over all paths: {totals['confirmed']}; "
        f"sampled (no counterexample, not exhaustive): {totals['sampled']}; "
        f"precondition not met in budget: {totals['unreached']}; "
        f"unchecked (tool error): {totals['unchecked']}; "
        f"off (checked through a harness): {totals['off']}; "
        f"counterexamples: {totals['counterexample']}; "
        f"budget {args.per_condition_timeout:g}s/condition, {args.jobs} jobs, {elapsed:.0f}s"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "totals": dict(totals),
                    "functions": len(targets),
                    "preconditions": n_pre,
                    "postconditions": n_post,
                    "seconds": round(elapsed, 1),
                    "results": [asdict(r) for r in results],
                },
                indent=2,
            )
        )
    failed = totals["counterexample"] > 0 or any(r.fatal for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
