"""`lernie-check conform --impl ADAPTER`: run the exact-interface scenarios through an
implementation's command line and print a scorecard per SPEC rule area.

Theory of operation. A scenario file (``scenarios/*.toml``, language-neutral data)
holds cases; each case cites the rule ids it checks and is a list of steps: run a
verb through the adapter's argv template as a subprocess (expected exit code,
stdout and stderr, exact or as a regular expression; ``parallel = N`` starts N
copies at once, for writers that race), write a file by hand, wait for a file to
appear (a point inside a run), make a symbolic link, or wait for quiescence. After
the last step the kit waits for quiescence (no flock held on any inbox, no process
naming the workspace; a timeout, ``quiescence`` seconds for a case that sets it, is
itself a failure), compares files, directories, file counts, refs and commit
subjects, the tool results an agent's transcript holds and the files at the tip of
its branch (the tool programs, ``scenarios/tools.toml``), and finally runs the
workspace audit (:mod:`lernie_stateful.audit`) on what is left. A case needing a
verb the adapter does not give is *not applicable*.

The scorecard groups cases by rule area (``R-DEP-5`` counts for ``R-DEP``; every
invariant for ``I``): passed / failed / not applicable, with the first failing
case and its first difference.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from lernie_spec.cliopts import Progress

from lernie_stateful.audit import AuditError, audit
from lernie_stateful.conform.adapter import Adapter, AdapterError, fill
from lernie_stateful.conform.flood import flood
from lernie_stateful.conform.outcome import Verdict, all_programs, check, load_programs
from lernie_stateful.conform.quiescence import (
    QUIESCENCE_TIMEOUT,
    Failed,
    kill_naming,
    wait_quiescent,
)
from lernie_stateful.conform.session import prepared

STEP_TIMEOUT = 120.0


@dataclass
class CaseResult:
    id: str
    file: str
    rules: list[str]
    status: str  # "passed" | "failed" | "n/a"
    difference: str = ""
    seconds: float = 0.0


@dataclass
class Scorecard:
    adapter: str
    results: list[CaseResult] = field(default_factory=list)
    seconds: float = 0.0

    def areas(self) -> dict[str, dict[str, object]]:
        out: dict[str, dict[str, object]] = {}
        for r in self.results:
            for area in sorted({area_of(rule) for rule in r.rules}):
                row = out.setdefault(area, {"passed": 0, "failed": 0, "n/a": 0,
                                            "first_failure": None})
                row[r.status] = int(str(row[r.status])) + 1
                if r.status == "failed" and row["first_failure"] is None:
                    row["first_failure"] = f"{r.id}: {r.difference}"
        return dict(sorted(out.items(), key=lambda kv: _area_key(kv[0])))

    @property
    def applicable(self) -> int:
        return sum(r.status != "n/a" for r in self.results)

    @property
    def passed(self) -> int:
        return sum(r.status == "passed" for r in self.results)

    @property
    def percent(self) -> float:
        return 100.0 * self.passed / self.applicable if self.applicable else 0.0

    def as_json(self) -> dict[str, object]:
        return {"adapter": self.adapter, "passed": self.passed, "applicable": self.applicable,
                "cases": len(self.results), "percent": round(self.percent, 1),
                "seconds": round(self.seconds, 1), "areas": self.areas(),
                "results": [r.__dict__ for r in self.results]}

    def text(self) -> str:
        rows = [("area", "passed", "failed", "n/a", "first failure")]
        for area, row in self.areas().items():
            rows.append((area, str(row["passed"]), str(row["failed"]), str(row["n/a"]),
                         str(row["first_failure"] or "-")))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [f"conformance of {self.adapter}: {len(self.results)} cases, "
                 f"wall time {self.seconds:.1f}s", ""]
        for r in rows:
            lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False))
                         + "  " + r[4])
        lines.append("")
        lines.append(f"score: {self.passed}/{self.applicable} applicable cases "
                     f"({self.percent:.0f}%)"
                     + (f", {len(self.results) - self.applicable} not applicable"
                        if self.applicable < len(self.results) else ""))
        return "\n".join(lines)

    def markdown(self) -> str:
        lines = [f"**Conformance of {self.adapter}**: {self.passed}/{self.applicable} "
                 f"cases ({self.percent:.0f}%)", "",
                 "| Area | Passed | Failed | N/A | First failure |", "|---|---|---|---|---|"]
        for area, row in self.areas().items():
            first = str(row["first_failure"] or "—").replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {area} | {row['passed']} | {row['failed']} | {row['n/a']} "
                         f"| {first} |")
        return "\n".join(lines)


def area_of(rule: str) -> str:
    if rule.startswith("R-"):
        return rule.rsplit("-", 1)[0]
    return rule.split("-", 1)[0]


def _area_key(area: str) -> tuple[int, str]:
    return (1 if area in ("I", "D") else 0, area)


# ---------------------------------------------------------------------------


def scenario_files(directory: Path | None = None) -> list[tuple[str, str]]:
    """(name, TOML text) of every scenario file, sorted by name."""
    if directory is not None:
        return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.toml"))]
    root = resources.files("lernie_stateful.conform").joinpath("scenarios")
    return sorted((p.name, p.read_text(encoding="utf-8")) for p in root.iterdir()
                  if p.name.endswith(".toml"))


def cases_of(files: Sequence[tuple[str, str]]) -> list[tuple[str, dict[str, object]]]:
    out = []
    for name, text in files:
        for case in tomllib.loads(text).get("case", []):
            out.append((name, case))
    return out


class CaseRunner:
    def __init__(self, adapter: Adapter, ws: Path,
                 quiescence: float = QUIESCENCE_TIMEOUT) -> None:
        self.adapter = adapter
        self.ws = ws
        self.quiescence = quiescence
        lay = adapter.layout
        self.vars: dict[str, str] = {
            "ws": str(ws), "prog": adapter.program, "repo": lay.repo, "inbox": lay.inbox,
            "steps": lay.steps, "agents": lay.agents, "messages": lay.messages,
            "agent_ref": lay.agent_ref_prefix, "mark_ref": lay.mark_ref_prefix,
            "model": lay.model_origin,
        }

    def text(self, value: object) -> str:
        return fill(str(value), self.vars)

    def pattern(self, value: object) -> re.Pattern[str]:
        escaped = {k: re.escape(v) for k, v in self.vars.items()}
        return re.compile(fill(str(value), escaped), re.DOTALL)

    def run(self, case: Mapping[str, object]) -> None:
        if not case.get("fresh"):
            self.verb({"verb": "new", "exit": 0})
        for step in _tables(case.get("step")):
            if step.get("wait"):
                wait_quiescent(self.ws, self.adapter.layout, self.quiescence)
            elif "wait_for" in step:
                self.wait_for(self.text(step["wait_for"]))
            elif "write" in step:
                spec = step["write"]
                assert isinstance(spec, dict)
                path = self.ws / self.text(spec["path"])
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(self.text(spec["text"]), encoding="utf-8")
            elif "symlink" in step:
                spec = step["symlink"]
                assert isinstance(spec, dict)
                path = self.ws / self.text(spec["path"])
                path.parent.mkdir(parents=True, exist_ok=True)
                path.symlink_to(self.text(spec["target"]))
            else:
                self.verb(step)
        wait_quiescent(self.ws, self.adapter.layout, self.quiescence)
        expect = case.get("expect", {})
        assert isinstance(expect, dict)
        self.expect(expect)
        self.expect_work(expect)
        if self.adapter.layout.repo and (self.ws / self.adapter.layout.repo).is_dir():
            try:
                report = audit(self.ws, self.adapter.layout)
            except AuditError as exc:
                raise Failed(f"audit: {exc}") from None
            bad = report.violations()
            if bad:
                raise Failed(f"audit: {bad[0].line()}")

    def wait_for(self, rel: str, timeout: float = QUIESCENCE_TIMEOUT) -> None:
        """Poll until ``rel`` (a glob allowed in its last part) names a file in the workspace:
        a point inside a run that the implementation shows on disk."""
        path = self.ws / rel
        deadline = time.monotonic() + timeout
        while not any(True for _ in path.parent.glob(path.name)):
            if time.monotonic() > deadline:
                raise Failed(f"{rel} did not appear within {timeout:.0f}s")
            time.sleep(0.05)

    def verb(self, step: Mapping[str, object]) -> None:
        verb = str(step["verb"])
        args = step.get("args", {})
        assert isinstance(args, dict)
        values = {"ws": str(self.ws), **{str(k): self.text(v) for k, v in args.items()}}
        argv = self.adapter.argv(verb, values)
        env_extra = step.get("env", {})
        assert isinstance(env_extra, dict)
        env = self.adapter.env({str(k): self.text(v) for k, v in env_extra.items()}, os.environ)
        copies = int(str(step.get("parallel", 1)))
        if copies > 1:
            procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      env=env, stdin=subprocess.DEVNULL)
                     for _ in range(copies)]
            for p in procs:
                out_b, err_b = p.communicate(timeout=STEP_TIMEOUT)
                self.check(step, argv, subprocess.CompletedProcess(argv, p.returncode,
                                                                   out_b, err_b))
            return
        deadline = time.monotonic() + QUIESCENCE_TIMEOUT
        while True:
            proc = subprocess.run(argv, capture_output=True, env=env, timeout=STEP_TIMEOUT,
                                  check=False, stdin=subprocess.DEVNULL)
            if not step.get("until_stderr_empty") or not proc.stderr:
                break
            if time.monotonic() > deadline:
                raise Failed(f"`{verb}` kept printing {proc.stderr.decode(errors='replace')!r}")
            time.sleep(0.05)
        self.check(step, argv, proc)

    def check(self, step: Mapping[str, object], argv: Sequence[str],
              proc: subprocess.CompletedProcess[bytes]) -> None:
        out = proc.stdout.decode("utf-8", "replace")
        err = proc.stderr.decode("utf-8", "replace")
        words = [a.replace(str(self.ws), "<ws>") for a in argv[len(self.adapter.command):]]
        shown = "`" + " ".join(words) + "`"
        if "exit" in step and proc.returncode != step["exit"]:
            raise Failed(f"{shown} exited {proc.returncode}, expected {step['exit']} "
                         f"(stderr {_short(err)})")
        for stream, got in (("stdout", out), ("stderr", err)):
            if stream in step and got != self.text(step[stream]):
                raise Failed(f"{shown} {stream} {_short(got, 200)}, expected "
                             f"{_short(self.text(step[stream]), 200)}")
            key = f"{stream}_match"
            if key in step and not self.pattern(step[key]).fullmatch(got):
                raise Failed(f"{shown} {stream} {_short(got, 200)} does not match "
                             f"{self.text(step[key])!r}")
        if "capture" in step:
            self.vars[str(step["capture"])] = out.strip()

    def expect(self, expect: Mapping[str, object]) -> None:
        for d in _strs(expect.get("dirs")):
            if not (self.ws / self.text(d)).is_dir():
                raise Failed(f"directory {self.text(d)} missing")
        for d in _strs(expect.get("empty_dirs")):
            path = self.ws / self.text(d)
            if path.is_dir() and os.listdir(path):
                raise Failed(f"{self.text(d)} holds {sorted(os.listdir(path))}, expected nothing")
        for p in _strs(expect.get("absent")):
            if (self.ws / self.text(p)).exists():
                raise Failed(f"{self.text(p)} exists, expected nothing there")
        files = expect.get("files", {})
        assert isinstance(files, dict)
        for p, want in files.items():
            got = self.read(self.text(p))
            if got != self.text(want):
                raise Failed(f"{self.text(p)} holds {got!r}, expected {self.text(want)!r}")
        matches = expect.get("files_match", {})
        assert isinstance(matches, dict)
        for p, want in matches.items():
            got = self.read(self.text(p))
            if not self.pattern(want).fullmatch(got):
                raise Failed(f"{self.text(p)} holds {got!r}, which does not match "
                             f"{self.text(want)!r}")
        counts = expect.get("counts", {})
        assert isinstance(counts, dict)
        for p, want in counts.items():
            path = self.ws / self.text(p)
            found = len(list(path.parent.glob(path.name)))
            if found != int(want):
                raise Failed(f"{self.text(p)}: {found} files, expected {want}")
        for ref in _strs(expect.get("refs")):
            if not self.git("rev-parse", "--verify", "--quiet", self.text(ref)):
                raise Failed(f"ref {self.text(ref)} missing")
        subjects = expect.get("subjects", {})
        assert isinstance(subjects, dict)
        for var, patterns in subjects.items():
            agent = self.vars.get(str(var), str(var))
            log = self.git("log", "--first-parent", "--reverse", "--format=%s",
                           self.adapter.layout.agent_ref_prefix + agent)
            own = [s for s in log.splitlines() if s.endswith(f" [{agent}]")]
            for i, pat in enumerate(_strs(patterns)):
                if i >= len(own) or not self.pattern(pat).fullmatch(own[i]):
                    got = own[i] if i < len(own) else "nothing"
                    raise Failed(f"commit {i + 1} of {agent} is {got!r}, expected "
                                 f"{self.text(pat)!r}")

    def expect_work(self, expect: Mapping[str, object]) -> None:
        """The tool programs' expectations (``results``, ``committed``, ``uncommitted``):
        the agent's tool results as its transcript holds them, and its branch's tree."""
        results = expect.get("results", {})
        assert isinstance(results, dict)
        for var, wanted in results.items():
            agent = self.vars.get(str(var), str(var))
            got = self.tool_results(agent)
            wants = _tables(wanted)
            if len(got) != len(wants):
                shown = "; ".join(("error " if e else "ok ") + _short(t, 80) for e, t in got)
                raise Failed(f"{agent}'s transcript holds {len(got)} tool result(s), expected "
                             f"{len(wants)}: {shown or 'none'}")
            problems = [p for k, (want, got_k) in enumerate(zip(wants, got, strict=True), 1)
                        for p in self.result_problems(k, len(got), want, *got_k)]
            if problems:
                raise Failed("; ".join(problems))
        committed = expect.get("committed", {})
        assert isinstance(committed, dict)
        for var, paths in committed.items():
            agent = self.vars.get(str(var), str(var))
            assert isinstance(paths, dict)
            for rel, want in paths.items():
                found = self.git_file(agent, str(rel))
                if found != self.text(want):
                    raise Failed(f"{rel} at the tip of {agent}'s branch is "
                                 f"{'missing' if found is None else repr(found)}, expected "
                                 f"{self.text(want)!r}")
        uncommitted = expect.get("uncommitted", {})
        assert isinstance(uncommitted, dict)
        for var, paths in uncommitted.items():
            agent = self.vars.get(str(var), str(var))
            for rel in _strs(paths):
                if self.git_file(agent, rel) is not None:
                    raise Failed(f"{rel} is in the tree at the tip of {agent}'s branch, "
                                 "expected nothing there")

    def result_problems(self, k: int, n: int, want: Mapping[str, object], error: bool,
                        text: str) -> list[str]:
        """How tool result ``k`` of ``n`` differs from what the case expects of it."""
        what = f"tool result {k} of {n} ({_short(text, 160)})"
        out: list[str] = []
        if "error" in want and error != bool(want["error"]):
            out.append(f"{what} is {'an error' if error else 'a success'}, expected "
                       f"{'an error' if want['error'] else 'a success'}")
        out += [f"{what} does not hold {self.text(part)!r}"
                for part in _strs(want.get("contains")) if self.text(part) not in text]
        out += [f"{what} holds {self.text(part)!r}"
                for part in _strs(want.get("lacks")) if self.text(part) in text]
        if "search" in want and not self.pattern(want["search"]).search(text):
            out.append(f"{what} has no match for {self.text(want['search'])!r}")
        size = len(text.encode("utf-8"))
        if "max_bytes" in want and size > int(str(want["max_bytes"])):
            out.append(f"{what} is {size} bytes, expected at most {want['max_bytes']}")
        return out

    def tool_results(self, agent: str) -> list[tuple[bool, str]]:
        """(is_error, text) of every tool result in the agent's transcript, in entry order:
        the blocks of its ``NNN-tool.json`` entries, text blocks joined."""
        lay = self.adapter.layout
        out: list[tuple[bool, str]] = []
        folder = self.ws / lay.agents / agent / lay.messages
        for path in sorted(folder.glob("*-tool.json")):
            try:
                blocks = json.loads(path.read_bytes())
            except (OSError, ValueError) as exc:
                raise Failed(f"{path.name} of {agent} is no tool entry: {exc}") from None
            for block in blocks if isinstance(blocks, list) else [blocks]:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    raise Failed(f"{path.name} of {agent} holds {_short(str(block))}, "
                                 "not a tool_result block")
                content = block.get("content")
                text = content if isinstance(content, str) else "".join(
                    str(c.get("text", "")) for c in content if isinstance(c, dict)
                ) if isinstance(content, list) else ""
                out.append((block.get("is_error") is True, text))
        return out

    def git_file(self, agent: str, rel: str) -> str | None:
        """The file ``rel`` (relative to the worktree) in the tree at the tip of the agent's
        branch, or None where the tree has no such file."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        ref = self.adapter.layout.agent_ref_prefix + agent
        proc = subprocess.run(["git", "-C", str(self.ws / self.adapter.layout.repo), "show",
                               f"{ref}:{rel}"], capture_output=True, env=env, check=False)
        return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None

    def read(self, rel: str) -> str:
        path = self.ws / rel
        if "*" in rel:
            found = sorted(p for p in path.parent.glob(path.name)
                           if fnmatch.fnmatch(p.name, path.name))
            if len(found) != 1:
                raise Failed(f"{rel}: {len(found)} files match, expected one")
            path = found[0]
        try:
            return path.read_bytes().decode("utf-8", "replace")
        except OSError as exc:
            raise Failed(f"{rel}: {exc.strerror}") from None

    def git(self, *args: str) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        proc = subprocess.run(["git", "-C", str(self.ws / self.adapter.layout.repo), *args],
                              capture_output=True, text=True, env=env, check=False)
        return proc.stdout if proc.returncode == 0 else ""


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _tables(value: object) -> list[dict[str, object]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _strs(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _verbs_of(case: Mapping[str, object]) -> set[str]:
    verbs = {str(s["verb"]) for s in _tables(case.get("step")) if "verb" in s}
    return verbs | (set() if case.get("fresh") else {"new"})


def conform(adapter: Adapter, files: Sequence[tuple[str, str]] | None = None,
            only: str | None = None, keep: Path | None = None,
            progress: Progress | None = None) -> Scorecard:
    card = Scorecard(adapter.name)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lernie-conform-") as tmp:
        base = keep or Path(tmp)
        cases = cases_of(files if files is not None else scenario_files())
        for k, (name, case) in enumerate(cases):
            cid = str(case.get("id"))
            if only and only not in cid and only != name:
                continue
            if progress is not None:
                failed = sum(r.status == "failed" for r in card.results)
                progress.update(f"case {k + 1}/{len(cases)} {cid} ({failed} failed so far)")
            rules = _strs(case.get("rules"))
            if not all(adapter.has(v) for v in _verbs_of(case)):
                card.results.append(CaseResult(cid, name, rules, "n/a",
                                               "the adapter does not give "
                                               + ", ".join(sorted(v for v in _verbs_of(case)
                                                                  if not adapter.has(v)))))
                continue
            ws = base / cid / "ws"
            ws.parent.mkdir(parents=True, exist_ok=True)
            t0 = time.monotonic()
            try:
                with prepared(adapter, ws.parent,
                              keep and ws.parent / "model-requests.jsonl") as live:
                    CaseRunner(live, ws, float(str(case.get("quiescence",
                                                            QUIESCENCE_TIMEOUT)))).run(case)
                result = CaseResult(cid, name, rules, "passed")
            except (Failed, AdapterError) as exc:
                result = CaseResult(cid, name, rules, "failed", str(exc))
            except subprocess.TimeoutExpired as exc:
                result = CaseResult(cid, name, rules, "failed", f"timed out: {exc.cmd!r}")
            finally:
                kill_naming(ws)  # a failed case's drivers
            result.seconds = round(time.monotonic() - t0, 2)
            card.results.append(result)
            if keep is None:
                shutil.rmtree(ws.parent, ignore_errors=True)
    card.seconds = time.monotonic() - start
    return card


def outcome_check(adapter: Adapter, card: Scorecard, examples: int, seed: int,
                  program_file: Path | None = None, keep: Path | None = None,
                  progress: Progress | None = None,
                  verdicts: list[Verdict] | None = None) -> list[str]:
    """Run the outcome programs (docs/conformance.md, "Outcome conformance"); each joins
    the scorecard as a case of the area ``outcome``. Returns the failure reports;
    ``verdicts`` collects the failing programs' verdicts (for the HTML report)."""
    start = time.monotonic()
    programs = (load_programs(program_file.read_text(encoding="utf-8")) if program_file
                else all_programs(examples, seed))
    reports: list[str] = []
    with tempfile.TemporaryDirectory(prefix="lernie-outcome-") as tmp:
        base = keep or Path(tmp)
        for k, p in enumerate(programs):
            if progress is not None:
                bad = len(reports)
                progress.update(f"outcome program {k + 1}/{len(programs)} {p.id} "
                                f"({k} scored, {bad} failed)", force=True)
            ws = base / f"outcome-{p.id}" / "ws"
            ws.parent.mkdir(parents=True, exist_ok=True)
            try:
                with prepared(adapter, ws.parent,
                              keep and ws.parent / "model-requests.jsonl") as live:
                    v = check(p, live, ws)
            finally:
                kill_naming(ws)  # a failed case's drivers
            status = "passed" if v.passed else "n/a" if v.inconclusive else "failed"
            card.results.append(CaseResult(f"outcome:{p.id}", "outcome", ["outcome"], status,
                                           v.one_line(),
                                           round(v.seconds, 2)))
            if status == "failed":
                reports.append(v.text)
                if verdicts is not None:
                    verdicts.append(v)
            if keep is None:
                shutil.rmtree(ws.parent, ignore_errors=True)
    card.seconds += time.monotonic() - start
    return reports


def flood_check(adapter: Adapter, card: Scorecard, writers: int, per_writer: int,
                keep: Path | None = None) -> None:
    """The same-sender flood (:mod:`lernie_stateful.conform.flood`) as one case of the area
    ``accounting``."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lernie-flood-") as tmp:
        ws = (keep or Path(tmp)) / f"flood-{writers}x{per_writer}" / "ws"
        ws.parent.mkdir(parents=True, exist_ok=True)
        try:
            with prepared(adapter, ws.parent) as live:
                result = flood(live, ws, writers, per_writer)
        finally:
            kill_naming(ws)
        card.results.append(CaseResult(
            f"accounting:same-sender-flood-{writers}x{per_writer}", "accounting",
            ["accounting"], "passed" if result.passed else "failed", result.one_line(),
            round(result.seconds, 2)))
    card.seconds += time.monotonic() - start


def program_file(spec: str) -> Path:
    """A TOML file of outcome programs: a path, or the name of a set installed with the kit
    (``predictions/<name>.toml``: the programs built from a profile's counterexamples)."""
    path = Path(spec)
    if path.exists() or "/" in spec or spec.endswith(".toml"):
        return path
    root = resources.files("lernie_stateful.conform").joinpath("predictions")
    found = root.joinpath(f"{spec}.toml")
    if not found.is_file():
        names = sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))
        raise AdapterError(f"no program file {spec} and no installed program set of that "
                           f"name (installed: {', '.join(names)})")
    return Path(str(found))
