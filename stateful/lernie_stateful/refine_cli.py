"""`lernie-check refine` and `lernie-check bugs`: the refinement machine from the command line.

``refine`` runs the machine on the installed implementation: exit 0 when no
divergence shows in N examples, else exit 1 with the shrunk failing program (one step
a line, each with what its ``data(...)`` drew), the swimlane of the implementation's
points and the abstract states side by side. ``bugs`` runs it once per seeded bug
(``lernie_stateful.seeded_bugs``) and prints bug, caught, examples run, seconds to the
first failure and the shrunk program's length, then the program; exit 0 only when every
bug is caught. A failing program is replayed without the bug: one that fails there too
("shared") is not counted as the bug's catch.

Shrinking is bounded by the checker: with ``--shrink S`` > 0 the run happens in a child
process that is killed S seconds after its first failure was stored, and the shortest
program it stored is replayed here. Hypothesis's own five-minute shrink limit, whose
abort prints a request to report a Hypothesis bug, is never reached (``MAX_SHRINK``).

The machine's workspaces are thrown away after each program and no run outlives the
machine, so nothing in them needs the disk: with ``TMPDIR`` unset they go to the
memory-backed ``/dev/shm`` when it is there, writable, executable and roomy
(``scratch_parent``), where a commit or a durable deposit costs no disk journal.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import select
import signal
import statistics
import sys
import tempfile
import time
import unittest
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import hypothesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from hypothesis.errors import UnsatisfiedAssumption
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test
from lernie_spec import cliopts
from lernie_spec.cliopts import Progress

from lernie_stateful import refinement
from lernie_stateful.seeded_bugs import BUGS, BY_NAME, Bug

SCOPES = {"default": 20, "short": 12, "long": 40}
"""--scope: rules per example (the length of each generated program)."""

SHM = "/dev/shm"
SHM_ROOM = 1 << 30
"""Free bytes ``/dev/shm`` must have to take the machine's workspaces (a program's world
takes a few megabytes; the rest is margin for whatever else uses it)."""


def scratch_parent(environ: Mapping[str, str] | None = None, shm: str = SHM) -> str | None:
    """Where the refinement's throw-away workspaces go: ``None`` (the default temporary
    directory) when ``TMPDIR`` is set, since the user chose it, or when ``shm`` is
    missing, read-only for us, mounted ``noexec`` (the world runs scripts it writes) or
    has less than ``SHM_ROOM`` free; else ``shm``."""
    env = os.environ if environ is None else environ
    if env.get("TMPDIR"):
        return None
    try:
        fs = os.statvfs(shm)
    except OSError:
        return None
    if fs.f_flag & (os.ST_NOEXEC | os.ST_RDONLY) or fs.f_bavail * fs.f_frsize < SHM_ROOM:
        return None
    return shm if os.access(shm, os.W_OK | os.X_OK) else None


@contextlib.contextmanager
def run_scratch() -> Iterator[Path]:
    """A scratch directory for one run, made in ``scratch_parent()``, that the machine's
    workspaces go into (``tempfile.tempdir`` points there for the run) and that is removed
    with everything in it at the end."""
    before = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="lernie-check-", dir=scratch_parent()) as tmp:
        tempfile.tempdir = tmp
        try:
            yield Path(tmp)
        finally:
            tempfile.tempdir = before


class Outcome(NamedTuple):
    failed: bool
    examples: int
    seconds: float  # to the first failure (or the whole run)
    program: list[str]
    message: str
    draws: tuple[str, ...] = ()  # what the program's data(...) drew, in order
    first_at: int = 0  # the example that failed first (its number in the run), or 0
    also_unpatched: bool = False  # the failing program fails without the bug too
    shrink_seconds: float = 0.0  # spent shrinking the failing program
    shrink_cut: bool = False  # the shrink budget ran out before Hypothesis finished


MAX_SHRINK = 240.0
"""--shrink at most: below Hypothesis's own five-minute stall limit, whose abort asks the
user to report a Hypothesis bug; a bounded shrink here never reaches it."""


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


def _own(key: bytes) -> bool:
    """A key of the test's own failing programs (not its secondary corpus or the Pareto
    front of targeted runs)."""
    return not key.endswith((b".secondary", b".pareto"))


class _FailuresOnly(DirectoryBasedExampleDatabase):
    """A private example database that keeps only what a run saves under its test's own key
    (the failing programs, the smallest first as the shrinker finds them): a replay from it
    replays the failure and nothing else. On disk, so a bounded shrink in a child process
    leaves its best program to the parent.

    The shrinker moves the best program so far out of the test's key *before* it saves the
    shorter one that replaces it; a child killed between the two would leave nothing to
    replay. So a program moved out stays until its replacement is stored."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._replaced: list[tuple[bytes, bytes]] = []  # (key, program) moved out, kept

    def save(self, key: bytes, value: bytes) -> None:
        if not _own(key):
            return
        super().save(key, value)
        for old in [r for r in self._replaced if r[0] == key and r[1] != value]:
            self._replaced.remove(old)
            self.delete(*old)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        if src == dest:
            self.save(dest, value)
            return
        if _own(src) and not _own(dest):
            self._replaced.append((src, value))  # deleted when its replacement is saved
            return
        self.delete(src, value)
        self.save(dest, value)


def _failing(exc: BaseException | None) -> bool:
    """Whether ``exc``, raised by a rule, fails the example (Hypothesis's own control flow,
    such as running out of data or an unmet assumption, does not)."""
    return isinstance(exc, Exception) and not isinstance(exc, UnsatisfiedAssumption)


def _teardown_fails(in_flight: BaseException | None) -> bool:
    """Whether an exception the teardown raises fails the example, given the exception in
    flight when the teardown began: not when Hypothesis had abandoned the example (a
    control exception such as the ``StopTest`` of a program that ran out of room to draw:
    Hypothesis raises that again in place of the teardown's and stores nothing)."""
    return in_flight is None or isinstance(in_flight, Exception)


class _Verdict(NamedTuple):
    failed: bool
    message: str = ""
    program: tuple[str, ...] = ()
    draws: tuple[str, ...] = ()
    ran: bool = True  # False: a replay found no stored program to run


def steps_of(notes: list[str]) -> list[str]:
    """The failing program from Hypothesis's notes, one step a line: each step with what
    its ``data(...)`` drew (Hypothesis notes a step's draws just before the step)."""
    steps: list[str] = []
    drawn: list[str] = []
    for line in notes:
        if line.startswith("Draw "):
            # "Draw 3 (script of P): ['dispatch']" -> "script of P: ['dispatch']"
            head, _, value = line.partition(": ")
            label = head.partition("(")[2].rstrip(")") or head
            drawn.append(f"{label}: {value}")
        elif line.startswith("state.") and "teardown" not in line:
            call = line.replace("data=data(...)", "data")
            steps.append(f"{call:40}  # " + "; ".join(drawn) if drawn else call)
            drawn = []
    return steps


def _play(machine: type[RuleBasedStateMachine], config: settings) -> _Verdict:
    """One Hypothesis run of ``machine``; its failure's message, program and draws."""
    try:
        # the drivers' operator notices (stderr) are the driver log's, not the checker's output
        with contextlib.redirect_stderr(io.StringIO()):
            run_state_machine_as_test(machine, settings=config)
    except unittest.SkipTest:  # a replay found nothing stored to replay
        return _Verdict(False, ran=False)
    except BaseException as exc:  # the machine's verdict
        if isinstance(exc, KeyboardInterrupt):
            raise
        notes = "\n".join(getattr(exc, "__notes__", [])).splitlines()
        return _Verdict(True, str(exc), tuple(steps_of(notes)),
                        tuple(n for n in notes if n.startswith("Draw ")))
    return _Verdict(False)


class _Child(NamedTuple):
    verdict: _Verdict | None  # None when the budget cut the child
    cut: bool
    shrink_seconds: float  # from the first failure to the child's end
    first_at: int  # the example that failed first, or 0
    first_seconds: float  # from the start of the run to that failure
    examples: int  # examples the child ran (when it finished)


def _bounded(play: Callable[[Callable[[str], None]], _Verdict],
             counts: Callable[[], str], shrink: float) -> _Child:
    """Run ``play`` in a child process and give its shrinking ``shrink`` seconds from its
    first failure: then the child and every process it started are killed. ``play`` gets
    a callback that writes a line to the parent: ``F <example> <seconds>`` at the first
    failure, and ``S`` when the next example starts (the failure is in the example
    database by then: the budget starts there). The child's verdict is ``None`` when the
    budget cut it (the shortest program it found is in the example database)."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, report, and leave without unwinding the parent's stack
        code = 3
        try:
            os.close(rfd)
            os.setpgid(0, 0)

            def first(line: str) -> None:
                os.write(wfd, f"{line}\n".encode())

            verdict = play(first)
            os.write(wfd, f"D {counts()} ".encode() + json.dumps(verdict._asdict()).encode()
                     + b"\n")
            code = 0
        finally:
            os._exit(code)
    with contextlib.suppress(OSError):  # here too, so the group exists before any kill
        os.setpgid(pid, pid)
    os.close(wfd)
    buf = b""
    deadline: float | None = None
    failed_at = 0.0
    cut = finished = False
    try:
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([rfd], [], [], wait)
            if not ready:  # the shrink budget is spent
                cut = True
                break
            chunk = os.read(rfd, 1 << 16)
            if not chunk:  # the child is done
                finished = True
                break
            buf += chunk
            if deadline is None and b"\nS\n" in b"\n" + buf:
                failed_at = time.monotonic()
                deadline = failed_at + shrink
    finally:
        os.close(rfd)
        if not finished:  # cut by the budget, or interrupted here (^C reaches only us)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)  # whatever the child started and left behind
    shrunk = time.monotonic() - failed_at if failed_at else 0.0
    lines = buf.decode().splitlines()
    first_at, first_seconds = 0, 0.0
    for line in lines:
        if line.startswith("F "):
            _, n, secs = line.split()
            first_at, first_seconds = int(n), float(secs)
    done = [line for line in lines if line.startswith("D ")]
    if cut or not done:
        if not cut:
            raise RuntimeError("the refinement run's child process died without a verdict")
        return _Child(None, True, shrunk, first_at, first_seconds, 0)
    _, n, raw = done[-1].split(" ", 2)
    v = json.loads(raw)
    verdict = _Verdict(v["failed"], v["message"], tuple(v["program"]), tuple(v["draws"]))
    return _Child(verdict, False, shrunk, first_at, first_seconds, int(n))


def run(examples: int, seed: int, steps: int, bug: Bug | None = None,
        shrink: float = 30.0, database: str | None = None, attribute: bool = False,
        machine: type[RuleBasedStateMachine] = refinement.RefinementMachine) -> Outcome:
    """Run ``machine`` (the refinement machine unless told) for ``examples`` programs of
    ``steps`` rules, seeded by ``seed``.

    The first failure is the first example Hypothesis counts as failing: one it abandoned
    (a program that ran out of room to draw) is not, whatever its teardown raised, since
    Hypothesis stores nothing of it. With ``shrink`` > 0 the run happens in a child process
    whose shrinking is cut ``shrink`` seconds after the first failure was stored; the
    shortest program it found by then is replayed here from the example database (so
    Hypothesis's own shrink limit, whose message asks for a bug report, is never reached).
    With ``bug`` and ``attribute``, a failing program is replayed on the unpatched
    implementation (Hypothesis's reuse phase over the private example database, cut to the
    program's own rules): ``also_unpatched`` says it fails there too, so the failure is not
    the bug's."""
    if shrink > MAX_SHRINK:
        raise ValueError(f"shrink budget {shrink:g} s is above {MAX_SHRINK:g} s")
    counter: dict[str, float] = {"examples": 0, "first": 0.0, "first_at": 0, "after": 0}
    start = time.monotonic()
    hooks: list[Callable[[str], None]] = []

    def first_failure() -> None:
        if not counter["first"]:
            counter["first"] = time.monotonic() - start
            counter["first_at"] = counter["examples"]
            for hook in hooks:
                hook(f"F {int(counter['first_at'])} {counter['first']:.3f}")

    class Machine(machine):  # type: ignore[misc,valid-type]  # the machine run, counted
        def __init__(self) -> None:
            counter["examples"] += 1
            if counter["first"] and not counter["after"]:  # shrinking begins
                counter["after"] = 1
                for hook in hooks:
                    hook("S")
            super().__init__()

        def teardown(self) -> None:
            in_flight = sys.exc_info()[1]
            if _failing(in_flight):  # a rule raised: this example failed
                first_failure()
            try:
                super().teardown()
            except BaseException:
                if _teardown_fails(in_flight):
                    first_failure()
                raise

    Machine.__name__ = Machine.__qualname__ = machine.__name__
    with run_scratch() as scratch:
        own = not database and (shrink > 0 or (bug is not None and attribute))
        db = _FailuresOnly(str(scratch / "db")) if own else example_database(database)
        phases = ([Phase.reuse] if database else []) + [Phase.generate, Phase.target] + (
            [Phase.shrink] if shrink > 0 else [])
        config = settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                          database=db, phases=phases, report_multiple_bugs=False,
                          suppress_health_check=list(HealthCheck), print_blob=False)
        random.seed(seed)
        seeded = hypothesis.seed(seed)(Machine)  # the same seed, the same programs
        patch = bug.apply() if bug is not None else contextlib.nullcontext()
        cut, shrunk = False, 0.0
        with patch:
            if shrink > 0:
                def play(first: Callable[[str], None]) -> _Verdict:
                    hooks.append(first)
                    return _play(seeded, config)

                child = _bounded(play, lambda: str(int(counter["examples"])), shrink)
                counter["first_at"], counter["first"] = child.first_at, child.first_seconds
                counter["examples"] = child.examples
                cut, shrunk = child.cut, child.shrink_seconds
                if child.verdict is not None:
                    verdict = child.verdict
                else:  # cut: replay the shortest failing program the child stored
                    verdict = _play(seeded, settings(config, phases=[Phase.reuse]))
                    if not verdict.ran:  # the budget starts only once a failure is stored
                        raise RuntimeError("the shrink budget cut the refinement run before "
                                           "it stored a failing program")
                    if not verdict.failed:
                        verdict = _Verdict(True, "the shortest failing program found did not "
                                           "fail again when replayed (a non-deterministic run)")
            else:
                verdict = _play(seeded, config)
                if verdict.failed:
                    first_failure()
        also = False
        if verdict.failed and bug is not None and attribute and db is not None:
            # Without the bug. The replay runs the failing program's rules and no more:
            # Hypothesis's reuse phase extends a stored example with fresh random rules, and
            # a divergence in those would be another program's (then the unpatched code is
            # wrong too, but not here).
            replay = settings(config, phases=[Phase.reuse],
                              stateful_step_count=max(1, len(verdict.program)))
            also = _play(seeded, replay).failed
    seconds = counter["first"] if verdict.failed else time.monotonic() - start
    return Outcome(verdict.failed, int(counter["examples"]), seconds, list(verdict.program),
                   verdict.message, verdict.draws, int(counter["first_at"]), also,
                   shrunk, cut)


def _shrink_seconds(text: str) -> float:
    value = float(text)
    if not 0 <= value <= MAX_SHRINK:
        raise argparse.ArgumentTypeError(f"between 0 and {MAX_SHRINK:g} seconds")
    return value


def _program(out: Outcome, indent: str) -> list[str]:
    """The failing program, one step a line, as Hypothesis printed it (runnable)."""
    return [f"{indent}state = RefinementMachine()", *(f"{indent}{line}" for line in out.program),
            f"{indent}state.teardown()"]


def _shrink_note(out: Outcome) -> str:
    if out.shrink_cut:
        return f"shrunk for {out.shrink_seconds:.0f} s (the budget; a longer --shrink may " \
               "shorten it further)"
    if out.shrink_seconds:
        return f"shrunk in {out.shrink_seconds:.0f} s (to the end)"
    return "not shrunk (--shrink 0)"


REFINE_HELP = """\
Run the real implementation against the model (the refinement machine): Hypothesis
generates programs of operator and model steps and runs each against real drivers and
the model side by side. Exit 0 when no divergence shows, 1 with the shrunk failing
program otherwise (one step a line, with what its data(...) drew)."""

BUGS_HELP = """\
Patch each seeded implementation bug in turn and run the refinement machine until it
diverges; print whether each is caught (examples to the first failure, seconds to it,
the failing program's length), then its shrunk failing program. A failing program is
replayed without the bug: one that fails there too ("shared") is not the bug's catch.
Exit 0 only when every bug is caught."""


def _scope_help(default: str) -> str:
    return ("rules per program: " + ", ".join(f"{k} {v}" for k, v in sorted(SCOPES.items()))
            + f" (default {default})")


def build_refine_parser(prog: str = "lernie-check refine") -> argparse.ArgumentParser:
    ap = cliopts.parser(prog, REFINE_HELP)
    ap.add_argument("--examples", type=int, default=30, metavar="N",
                    help="programs to generate and run (Hypothesis's max_examples)")
    ap.add_argument("--seed", type=int, default=0,
                    help="the run's seed: the same seed runs the same programs")
    ap.add_argument("--scope", choices=sorted(SCOPES), default="default",
                    help=_scope_help("default"))
    ap.add_argument("--shrink", type=_shrink_seconds, default=60.0, metavar="SECONDS",
                    help="seconds of shrinking the failing program at most, counted from when "
                    f"it is found (default 60, at most {MAX_SHRINK:g}; 0: no shrinking)")
    ap.add_argument("--database", default=None, metavar="DIR|redis://HOST:PORT",
                    help="Hypothesis's example database, shared by workers: a directory or "
                    "redis://host:port (replays what any of them found; default: none)")
    cliopts.add_common(ap)
    return ap


build_parser = build_refine_parser


def refine_main(argv: list[str]) -> int:
    ns = build_refine_parser().parse_args(argv)
    progress = Progress.of("lernie-check refine", ns.quiet, ns.verbose)
    progress.update(f"running up to {ns.examples} programs of {SCOPES[ns.scope]} rules "
                    f"(seed {ns.seed})", force=True)
    try:
        out = run(ns.examples, ns.seed, SCOPES[ns.scope], shrink=ns.shrink,
                  database=ns.database)
    finally:
        progress.done()
    wall, cpu = progress.times()
    if ns.json:
        print(json.dumps({
            "ok": not out.failed, "examples": out.examples,
            "rules_per_example": SCOPES[ns.scope], "seed": ns.seed,
            "seconds": round(out.seconds, 3), "first_failure_at": out.first_at or None,
            "wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
            "program": out.program if out.failed else None, "draws": list(out.draws),
            "message": out.message or None,
        }, indent=2))
        return 1 if out.failed else 0
    if not out.failed:
        print(f"refine: no divergence in {out.examples} examples "
              f"({SCOPES[ns.scope]} rules each, seed {ns.seed}, wall time {out.seconds:.1f}s)")
        return 0
    print(f"refine: DIVERGENCE (example {out.first_at}, after {out.seconds:.1f} s)")
    n = len(out.program)
    print(f"failing program ({n} step{'s' * (n != 1)}; {_shrink_note(out)}):")
    print("\n".join(_program(out, "  ")))
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
    ap.add_argument("--scope", choices=sorted(SCOPES), default="long",
                    help=_scope_help("long"))
    ap.add_argument("--shrink", type=_shrink_seconds, default=6.0, metavar="SECONDS",
                    help="seconds of shrinking each caught bug's program at most, counted from "
                    f"when it is found (default 6, at most {MAX_SHRINK:g}; 0: no shrinking)")
    ap.add_argument("--seeds", type=int, default=1, metavar="K",
                    help="seeds per bug (a benchmark: catch rate and median seconds)")
    ap.add_argument("--until-caught", action="store_true",
                    help="try the seeds in turn only until one catches the bug (a bug is "
                    "caught when any seed catches it; CI)")
    ap.add_argument("--no-programs", action="store_true",
                    help="do not print each caught bug's failing program")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
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
                progress.update(f"bug {b + 1}/{len(chosen)} {bug.name}, seed {ns.seed + k} "
                                f"({b - missed} caught so far)", force=True)
                runs.append(run(ns.examples, ns.seed + k, SCOPES[ns.scope], bug, ns.shrink,
                                attribute=True))
                if ns.until_caught and runs[-1].failed and not runs[-1].also_unpatched:
                    break
            # a failure the unpatched implementation shares is not the bug's catch
            caught = [r for r in runs if r.failed and not r.also_unpatched]
            if not caught:
                missed += 1
            row = _bug_row(bug, runs, caught, ns.seed, ns.seeds, ns.until_caught)
            rows.append(row)
            if ns.json:
                continue
            progress.done()
            print(str(row["line"]), flush=True)
            if caught and not ns.no_programs:
                shown = min(caught, key=lambda r: len(r.program))
                n = len(shown.program)
                print(f"    {bug.summary}; failing program, {n} step{'s' * (n != 1)}, "
                      f"{_shrink_note(shown)}:")
                print("\n".join(_program(shown, "      ")), flush=True)
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
        print(f"bugs: {len(chosen) - missed} caught of {len(chosen)} "
              f"({cliopts.timing(wall, cpu)})")
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
        med = statistics.median(x.seconds for x in caught) if caught else float("nan")
        r = min(caught, key=lambda x: len(x.program)) if caught else runs[-1]
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
