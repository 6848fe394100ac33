"""`lernie-check code-mutants`: catalogued edits of the implementation's source, each run
against the fast checkers.

Each mutant is one exact source-text edit of ``lernie_ref`` (a file, the old text, which
must occur exactly once, and the new text), the rule it breaks and the checkers expected
to kill it, cheapest first. The edit is applied to a copy of the package in a temporary
directory, never to the installed tree, and every checker runs in a fresh process whose
import path starts with that copy (``PYTHONPATH`` for the processes it starts, pytest's
``pythonpath`` for the test process itself). The first checker that fails kills the mutant;
one that none fails survived. A mutant is declared equivalent only with a written argument
that no observable outcome changes (``Mutant.equivalent``), and is then not run.

The checkers: ``refine`` (the refinement machine at a small budget, no shrinking),
``crash-points`` (the crash-point enumeration's CI-sized sample), ``kit`` (the conformance
kit's exact-interface scenarios through the reference's own adapter) and ``pytest`` (named
tests). ``--baseline`` also runs each checker that killed a mutant on the unedited copy
(once per checker): one that fails there would kill anything and proves nothing, so the
mutant's verdict is then an error, not a kill.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

PACKAGE = "lernie_ref"
CHECK_TIMEOUT_S = 900.0
"""A checker still running after this long counts as killed by the timeout (a hang)."""


class Check(NamedTuple):
    """One checker invocation: ``kind`` is refine, crash-points, kit or pytest."""

    kind: str
    args: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        if self.kind == "pytest":
            return "pytest " + " ".join(a.rpartition("::")[2] or a for a in self.args)
        if self.kind == "refine":
            return "refine " + " ".join(self.args)
        return " ".join((self.kind, *self.args)) if self.kind == "kit" else self.kind


def refine(examples: int = 10, seed: int = 0) -> Check:
    """The refinement machine: ``examples`` programs of the long scope, no shrinking."""
    return Check("refine", ("--examples", str(examples), "--scope", "long", "--seed", str(seed),
                            "--shrink", "0"))


def tests(*nodes: str) -> Check:
    """Named pytest tests (node ids relative to the project root)."""
    return Check("pytest", nodes)


CRASH_POINTS = Check("crash-points", (
    "tests/fault/test_crash_points.py::test_a_crash_of_every_kind_heals_on_the_next_touch",))
KIT = Check("kit")


class Mutant(NamedTuple):
    name: str
    file: str  # relative to the package's parent directory
    old: str
    new: str
    rule: str  # the rule it breaks
    summary: str
    checks: tuple[Check, ...]  # cheapest first
    equivalent: str = ""  # the written argument, when no observable outcome changes
    ci: bool = False  # in the CI-sized subset


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "probe-launches-nobody", "lernie_ref/actors/probe.py",
        "    launcher.launch(ws, agent_id)\n    yield Passed(Point.PROBE_LAUNCHED, agent_id)\n",
        "    yield Passed(Point.PROBE_LAUNCHED, agent_id)\n",
        "R-PROBE-1", "a free lock's probe launches nobody (the seeded bug writer-never-probes, "
        "as an edit of the source)",
        (refine(examples=5),), ci=True),
    Mutant(
        "stop-children-only", "lernie_ref/operator/stop.py",
        "if name != agent and is_descendant_or_self(name, agent):",
        "if name != agent and parent_of(name) == agent:",
        "R-STOP-3", "`lernie stop` cascades to direct children only, not to grandchildren",
        (tests("tests/codemut/test_killers.py::"
               "test_r_stop_3_a_stop_reaches_the_grandchildren_of_the_stopped_agent"),),
        ci=True),
    Mutant(
        "deposit-number-from-count", "lernie_ref/core/frontmatter.py",
        "    best = max(filter(U32_MAX.__ge__, numbers), default=0)\n    return best + 1",
        "    return len(mine) + 1",
        "R-DEP-2", "a deposit's number is the count of the sender's deposits plus one",
        (tests("tests/foundation/test_deposit.py::"
               "test_r_dep_2_sequence_across_foreign_and_malformed_names"), refine())),
    Mutant(
        "delivery-unlinks-then-writes", "lernie_ref/actors/drain.py",
        "            inbox.rename(item.name, messages, name)\n",
        "            data = inbox.read_bytes(item.name)\n"
        "            inbox.unlink(item.name)\n"
        "            messages.write_new(name, data)\n",
        "R-DRAIN-4", "delivery unlinks the deposit, then writes the entry (not one rename)",
        (tests("tests/codemut/test_killers.py::"
               "test_r_drain_4_a_delivery_that_cannot_write_loses_nothing"), refine(),
         CRASH_POINTS)),
    Mutant(
        "lock-released-by-close", "lernie_ref/substrate/lock.py",
        "        try:\n            fcntl.flock(fd, fcntl.LOCK_UN)\n        finally:\n"
        "            os.close(fd)",
        "        os.close(fd)",
        "R-LOCK-2", "a release only closes its descriptor (a forked copy keeps the lease)",
        (tests("tests/foundation/test_lock.py::"
               "test_r_lock_2_release_frees_the_lease_while_a_forked_child_holds_the_fd"),
         refine())),
    Mutant(
        "launch-under-probe-lock", "lernie_ref/actors/probe.py",
        "        yield Passed(Point.PROBE_ACQUIRED, agent_id)\n    finally:\n"
        "        lock.release()\n    yield Passed(Point.PROBE_RELEASED, agent_id)\n"
        "    launcher.launch(ws, agent_id)\n",
        "        yield Passed(Point.PROBE_ACQUIRED, agent_id)\n"
        "        launcher.launch(ws, agent_id)\n    finally:\n"
        "        lock.release()\n    yield Passed(Point.PROBE_RELEASED, agent_id)\n",
        "R-PROBE-1", "the probe launches while it still holds the executor lock",
        (tests("tests/foundation/test_lock.py::"
               "test_r_probe_1_probe_releases_before_it_launches"), refine())),
    Mutant(
        "guarded-replace-writes-through", "lernie_ref/substrate/guarded.py",
        "            self.unlink(name)\n        except FileNotFoundError:\n            pass\n"
        "        self.write_new(name, data)",
        "        except FileNotFoundError:\n            pass\n"
        "        self.write_new(name, data, replace=True)",
        "R-WS-7", "a guarded replace truncates the file under the name (a hard link's "
        "target) instead of removing the name",
        (tests("tests/codemut/test_killers.py::"
               "test_r_ws_7_a_guarded_replace_never_writes_through_a_hard_link"),
         tests("tests/contain")), ci=True),
    Mutant(
        "stale-git-lock-ignores-live-git", "lernie_ref/substrate/gitlocks.py",
        "        users = live_users(worktree, agent_id)\n",
        "        users: list[int] = []\n",
        "R-WS-8", "stale git lock files are removed while a live git may still own them",
        (tests("tests/fault/test_git_locks.py"),)),
    Mutant(
        "revival-not-counted", "lernie_ref/actors/sweep.py",
        "    _record_revival(ws, agent, tip, count + 1)",
        "    _record_revival(ws, agent, tip, count)",
        "R-SCAN-10", "the scan revives without counting: the crash-loop guard never fires",
        (tests("tests/fault/test_recovery.py"),)),
    Mutant(
        "crash-loop-guard-never-resets", "lernie_ref/core/sweep.py",
        "    if len(parts) != 2 or parts[0] != tip or not parts[1].isdigit():",
        "    if len(parts) != 2 or not parts[1].isdigit():",
        "R-SCAN-10", "the revival count ignores the tip: progress never resets the guard",
        (tests("tests/codemut/test_killers.py::"
               "test_r_scan_10_progress_resets_the_crash_loop_guard"),
         tests("tests/fault/test_recovery.py"))),
    Mutant(
        "mark-repair-moves-nothing", "lernie_ref/actors/mark_repair.py",
        "        ws.set_mark(MarkKind.RETURNED, agent, tip)\n    except LernieError as exc:\n"
        '        raise GitOpError("returned mark repair update-ref", exc) from None',
        "        pass\n    except LernieError as exc:\n"
        '        raise GitOpError("returned mark repair update-ref", exc) from None',
        "R-SCAN-11", "the returned-mark repair says it moved the mark and moves nothing",
        (tests("tests/fault/test_recovery.py"), tests("tests/operator_verbs/test_ref_files.py"),
         CRASH_POINTS)),
    Mutant(
        "lost-reply-not-resent", "lernie_ref/actors/hop.py",
        "        resent = yield from _send_lost_reply(ws, agent_id, deps)\n",
        "        resent = False\n",
        "R-DRAIN-8", "the hop never re-sends a lost reply before it drains",
        (tests("tests/fault/test_recovery.py"), CRASH_POINTS)),
    Mutant(
        "packed-refs-read-once", "lernie_ref/substrate/reffiles.py",
        "        if key != self._packed_key:\n",
        "        if self._packed_key is None:\n",
        "R-WS-5", "the ref files' reader never re-reads a changed packed-refs",
        (tests("tests/codemut/test_killers.py::"
               "test_r_ws_5_ref_files_read_packed_refs_again_after_it_changed"),
         tests("tests/operator_verbs/test_ref_files.py"))),
    Mutant(
        "model-timeout-not-passed", "lernie_ref/adapters/selection.py",
        "        return CommandModel(model_command, timeout=None if config is None "
        "else config.model_timeout)",
        "        return CommandModel(model_command, timeout=None)",
        "R-STEP-6", "the configured model_timeout never reaches the command model",
        (tests("tests/adapters/test_settings.py::"
               "test_r_step_5_model_timeout_fails_the_hop_with_one_line_through_the_cli"),
         tests("tests/adapters"))),
    Mutant(
        "stop-unknown-agent-text", "lernie_ref/core/errors.py",
        'f"no agent {debug_quote(agent_id)} in this workspace — {reason}; no agent has "',
        'f"agent {debug_quote(agent_id)} does not exist — {reason}; no agent has "',
        "R-ID-6", "the unknown-agent error every verb shares words its subject its own way "
        "(the kit pins `no agent \"<id>\" in this workspace — ` for message and dispatch)",
        (Check("kit", ("-k", "unknown")),)),
    Mutant(
        "one-retry-too-many", "lernie_ref/adapters/provider.py",
        "if not failure.retryable or retry >= self.settings.max_retries:",
        "if not failure.retryable or retry > self.settings.max_retries:",
        "R-STEP-8", "the provider retries once more than max_retries",
        (tests("tests/adapters/test_providers.py::"
               "test_r_step_8_retries_end_at_the_budget_with_one_line"),
         tests("tests/adapters/test_providers.py"))),
    Mutant(
        "streamed-content-decoded-per-piece", "lernie_ref/substrate/deposit.py",
        "            decoder.decode(chunk, final=not chunk)\n",
        "            chunk.decode(\"utf-8\")\n",
        "R-CLI-6", "streamed content is checked piece by piece: a character split across "
        "two pieces is refused",
        (tests("tests/codemut/test_killers.py::"
               "test_r_cli_6_streamed_text_split_inside_a_character_is_text"),
         tests("tests/contain/test_content.py"))),
    Mutant(
        "deposit-stamped-at-write", "lernie_ref/substrate/deposit.py",
        "                _stamp(inbox, temp)\n",
        "                pass\n",
        "R-DEP-12", "a deposit keeps the mtime of its temp's write (upstream's): a writer "
        "paused before its link goes before deposits published meanwhile",
        (tests("tests/foundation/test_deposit.py::"
               "test_r_dep_12_a_deposit_published_late_is_listed_after_those_published_first"),
         tests("tests/refine/test_delivery_order.py"))),
)

BY_NAME = {m.name: m for m in MUTANTS}


class CatalogueError(Exception):
    """A mutant's old text does not occur exactly once in its file."""


class Result(NamedTuple):
    mutant: Mutant
    verdict: str  # killed, survived, equivalent, error
    by: str  # the checker that killed it, or ""
    seconds: float
    detail: str = ""
    check: Check | None = None  # the checker that killed it


def project_root() -> Path:
    """The checkout holding the package and its tests (the package is installed editable)."""
    import lernie_ref

    return Path(lernie_ref.__file__).resolve().parents[1]


def copy_package(root: Path, into: Path) -> Path:
    """A copy of ``root/lernie_ref`` under ``into``; returns ``into`` (the path entry)."""
    shutil.copytree(root / PACKAGE, into / PACKAGE,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return into


def apply(m: Mutant, copy: Path) -> None:
    """Apply the edit to the copy; :class:`CatalogueError` unless the old text is there once."""
    path = copy / m.file
    text = path.read_text(encoding="utf-8")
    n = text.count(m.old)
    if n != 1:
        raise CatalogueError(f"{m.name}: the old text occurs {n} times in {m.file}")
    path.write_text(text.replace(m.old, m.new), encoding="utf-8")


def check_catalogue(root: Path, mutants: Iterable[Mutant] = MUTANTS) -> list[str]:
    """The mutants whose edit does not apply to ``root``'s package (each with why)."""
    bad = []
    for m in mutants:
        text = (root / m.file).read_text(encoding="utf-8")
        n = text.count(m.old)
        if n != 1:
            bad.append(f"{m.name}: the old text occurs {n} times in {m.file}")
        elif m.old == m.new:
            bad.append(f"{m.name}: the edit changes nothing")
    return bad


def _command(check: Check, root: Path, copy: Path) -> list[str]:
    py = sys.executable
    if check.kind == "refine":
        return [py, "-m", "lernie_stateful.cli", "refine", *check.args]
    if check.kind == "kit":
        return [py, "-m", "lernie_stateful.cli", "conform", "--impl", "lernie", *check.args]
    nodes = [str(root / n) for n in check.args]
    paths = " ".join(str(p) for p in (copy, root, root / "spec", root / "stateful"))
    return [py, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--rootdir", str(root),
            "-c", str(root / "pyproject.toml"), "-o", f"pythonpath={paths}", *nodes]


def run_check(check: Check, root: Path, copy: Path, cwd: Path,
              timeout: float = CHECK_TIMEOUT_S) -> tuple[bool, str]:
    """(failed, the last lines of its output) for one checker over the package at ``copy``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LERNIE_")}
    env["PYTHONPATH"] = str(copy)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        proc = subprocess.run(_command(check, root, copy), cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return True, f"timed out after {timeout:.0f} s"
    out = (proc.stdout + proc.stderr).strip().splitlines()
    failed = [line.split()[1] for line in out if line.startswith("FAILED ")]
    tail = failed[0] if failed else "\n".join(out[-3:])
    if check.kind == "pytest" and proc.returncode not in (0, 1):
        raise RuntimeError(f"pytest exited {proc.returncode} for {check.label}: {tail}")
    return proc.returncode != 0, tail


def run_mutant(m: Mutant, root: Path, timeout: float = CHECK_TIMEOUT_S) -> Result:
    """Apply ``m`` to a fresh copy and run its checkers in order until one fails."""
    if m.equivalent:
        return Result(m, "equivalent", "", 0.0, m.equivalent)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lernie-mutant-") as tmp:
        copy = copy_package(root, Path(tmp) / "pkg")
        apply(m, copy)
        work = Path(tmp) / "work"
        work.mkdir()
        for check in m.checks:
            failed, tail = run_check(check, root, copy, work, timeout)
            if failed:
                by = check.label
                if check.kind == "pytest" and "::" in tail:  # the test that failed
                    by = "pytest " + tail.rpartition("::")[2].partition(" ")[0]
                return Result(m, "killed", by, time.monotonic() - start, tail, check)
    return Result(m, "survived", "", time.monotonic() - start)


def judge(m: Mutant, root: Path, clean: dict[Check, str | None] | None,
          timeout: float = CHECK_TIMEOUT_S) -> Result:
    """:func:`run_mutant`; with ``clean`` (checker -> why it fails on the unedited copy, filled
    in as needed), a kill by a checker that fails without the edit too is an error."""
    r = run_mutant(m, root, timeout)
    if clean is None or r.check is None:
        return r
    if r.check not in clean:
        failing = baseline([r.check], root, timeout)
        clean[r.check] = failing[0][1] if failing else None
    why = clean[r.check]
    if why is None:
        return r
    return r._replace(verdict="error", detail=f"{r.by} fails on the unedited copy too: {why}")


def baseline(checks: Iterable[Check], root: Path,
             timeout: float = CHECK_TIMEOUT_S) -> list[tuple[Check, str]]:
    """The checkers that fail on the unedited copy (each with its output's tail)."""
    failing = []
    with tempfile.TemporaryDirectory(prefix="lernie-mutant-") as tmp:
        copy = copy_package(root, Path(tmp) / "pkg")
        work = Path(tmp) / "work"
        work.mkdir()
        for check in dict.fromkeys(checks):
            failed, tail = run_check(check, root, copy, work, timeout)
            if failed:
                failing.append((check, tail))
    return failing


def table(results: Sequence[Result]) -> str:
    heads = ("mutant", "rule", "verdict", "killed by", "seconds")
    body = [(r.mutant.name, r.mutant.rule, r.verdict, r.by or "-", f"{r.seconds:.1f}")
            for r in results]
    w = [max(len(h), *(len(row[k]) for row in body)) for k, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w[k]) for k, h in enumerate(heads)).rstrip(),
             "  ".join("-" * x for x in w)]
    lines += ["  ".join(c.ljust(w[k]) for k, c in enumerate(row)).rstrip() for row in body]
    return "\n".join(lines)


def build_parser(prog: str = "lernie-check code-mutants") -> argparse.ArgumentParser:
    from lernie_spec import cliopts

    ap = cliopts.parser(
        prog,
        "Apply catalogued edits to a copy of lernie_ref and run the fast checkers "
        "against each (cheapest first, stopping at the first that fails). Exit 0 when every "
        "mutant is killed or argued equivalent; 1 when one survives (or, with --baseline, its "
        "killer fails on the unedited copy too); 2 when the catalogue does not apply.")
    ap.add_argument("--list", action="store_true",
                    help="list the mutants, the rule each breaks and its checkers")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    choices=sorted(BY_NAME), help="run only this mutant (repeatable)")
    ap.add_argument("--ci", action="store_true",
                    help="the CI-sized subset (a few mutants with cheap killers)")
    ap.add_argument("--baseline", action="store_true",
                    help="run each checker that kills a mutant on the unedited copy too (once): "
                    "a kill counts only when that checker passes without the edit")
    ap.add_argument("--timeout", type=float, default=CHECK_TIMEOUT_S, metavar="SECONDS",
                    help="a checker running longer counts as killing the mutant (a hang)")
    cliopts.add_common(ap)
    return ap


def main(argv: Sequence[str]) -> int:
    from lernie_spec.cliopts import Progress

    ap = build_parser()
    ns = ap.parse_args(list(argv))
    if ns.list:
        for m in MUTANTS:
            how = "equivalent" if m.equivalent else "; ".join(c.label for c in m.checks)
            print(f"{m.name:36} {m.rule:10} {m.summary}\n{'':47}{how}")
        return 0
    chosen = [BY_NAME[n] for n in ns.only] if ns.only else [
        m for m in MUTANTS if m.ci or not ns.ci]
    root = project_root()
    if not (root / "tests").is_dir():
        print(f"lernie-check code-mutants: no tests/ next to {PACKAGE} (needs a source "
              "checkout installed editable)", file=sys.stderr)
        return 2
    bad = check_catalogue(root, chosen)
    if bad:
        for line in bad:
            print(f"lernie-check code-mutants: {line}", file=sys.stderr)
        return 2
    start = time.monotonic()
    clean: dict[Check, str | None] = {}  # checker -> why it fails on the unedited copy
    results: list[Result] = []
    progress = Progress.of("lernie-check code-mutants", ns.quiet, ns.verbose)
    try:
        for k, m in enumerate(chosen):
            progress.update(f"mutant {k + 1}/{len(chosen)} {m.name} "
                            f"({sum(r.verdict == 'killed' for r in results)} killed so far)",
                            force=True)
            r = judge(m, root, clean if ns.baseline else None, ns.timeout)
            results.append(r)
            if not ns.json:
                progress.done()
                print(f"  {m.name}: {r.verdict}" + (f" by {r.by}" if r.by else "")
                      + f" ({r.seconds:.1f} s)", flush=True)
    finally:
        progress.done()
    survived = [r for r in results if r.verdict in ("survived", "error")]
    if ns.json:
        import json

        wall, cpu = progress.times()
        print(json.dumps({"ok": not survived, "wall_seconds": round(wall, 3),
                          "cpu_seconds": round(cpu, 3),
                          "mutants": [{"mutant": r.mutant.name, "rule": r.mutant.rule,
                                       "verdict": r.verdict, "killed_by": r.by or None,
                                       "seconds": round(r.seconds, 3)} for r in results]},
                         indent=2))
        return 1 if survived else 0
    print(table(results))
    if ns.baseline:
        print(f"baseline: {sum(v is None for v in clean.values())} of {len(clean)} killing "
              "checkers pass on the unedited copy")
    counts = {v: sum(r.verdict == v for r in results)
              for v in ("killed", "survived", "equivalent", "error")}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"code-mutants: {counts['killed']} killed, {counts['survived']} survived, "
          f"{counts['equivalent']} equivalent"
          + (f", {counts['error']} killed only by a checker that fails without the edit"
             if counts["error"] else "") + f" of {len(results)} "
          f"({time.monotonic() - start:.0f} s, load average {load:.1f})")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
