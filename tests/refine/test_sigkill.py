"""A real SIGKILL leaves what the refinement machine's in-process crash leaves (issue #11 (3)).

The refinement machine crashes an actor by abandoning its generator without closing it
and closing the descriptors it opened (``RefinementMachine.crash``): no ``finally``, no
``except``, no ``with`` exit runs. This test checks that reading against the real thing.
A production driver (``lernie advance``, started detached by the production launcher) is
paused at a chosen protocol point by a test harness hook (``tests.support.pause``), which
checks that the paused driver holds the executor lock and kills it with SIGKILL; the
test compares the
workspace it leaves (every file's bytes, the refs, each worktree's index, git lock files,
the executor lock) with the workspace the in-process crash at the same point leaves,
starting from the same workspace (fixed agent ids and fixed clock; commit hashes and
times, which differ between any two runs, are compared through what they name).

The points: a delivery renamed but not committed (R-DRAIN-2), an executor entry renamed
but not committed (R-TR-3), inside the tool window before and after the tool ran
(R-STEP-2), a result's dot-temp written (R-DEP-9), a final response renamed before its
commit (R-DRAIN-8) and a result published before its returned mark (R-DEP-8). The full
set is ``slow``; a CI variant runs two of them by default.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from lernie_stateful.refinement import _bury, _open_fds

from lernie_ref.actors.hop import HopDeps, Outcome, hop_actor
from lernie_ref.adapters import ScriptedModel
from lernie_ref.core.clock import FixedClock, SystemClock
from lernie_ref.core.vocab import Point
from lernie_ref.inbox import deposit
from lernie_ref.substrate.config import load
from lernie_ref.substrate.launcher import RecordingLauncher
from lernie_ref.substrate.workspace import Workspace, create_workspace
from lernie_ref.testing import Inline
from tests.support.pause import lock_held as held
from tests.support.pause import sigkill_at as kill_paused

PARENT = "20260101T000000Z-00000001"
CHILD = PARENT + "-00000002"
PROMPT = "@tools 1\ngo"
"""The child's first prompt: one tool step (an exec'd successor hop), then a final
response whose result goes to its parent."""


class Case(NamedTuple):
    point: str
    detail: str | None  # narrows the point (the first pass of it otherwise)
    hops_before: int  # hops of the chain before the one that passes it


CASES: dict[str, Case] = {
    "drain-renamed": Case(Point.DRAIN_RENAMED, None, 0),
    "model-entry-renamed": Case(Point.TRANSCRIPT_RENAMED, "002-scripted.json", 0),
    "tool-window-open": Case(Point.HOP_ASSISTANT_COMMITTED, None, 0),
    "tool-ran": Case(Point.HOP_TOOL_RAN, None, 0),
    "final-response-renamed": Case(Point.TRANSCRIPT_RENAMED, "004-scripted.json", 1),
    "result-temp-written": Case(Point.DEPOSIT_TEMP_WRITTEN, None, 1),
    "result-published-before-mark": Case(Point.DEPOSIT_PUBLISHED, None, 1),
}
CI_CASES = ("drain-renamed", "result-published-before-mark")

def setup_workspace(root: Path) -> Workspace:
    """A parent and its child, the child's prompt pending; ids and deposit times fixed."""
    ws = create_workspace(root / "ws")
    ws.create_root_agent(PARENT, "p", "root")
    ws.create_child_agent(PARENT, CHILD, "c", "child goal")
    deposit(ws.root, CHILD, PARENT, PROMPT, FixedClock(1_767_225_600_000_000_000))
    return ws


# ------------------------------------------------------------------ the two crashes


def sigkill_at(ws: Workspace, case: Case, hook: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Launch the child's real driver, wait for it at the point, check it holds the
    executor lock there, SIGKILL it and reap it (``tests.support.pause``)."""
    kill_paused(ws, CHILD, case.point, case.detail, hook, monkeypatch)


def abandon_at(ws: Workspace, case: Case) -> None:
    """The refinement machine's crash, in this process: run the production hop chain
    (successors adopting the lease, as the exec baton does) to the point, then abandon
    the generator unclosed and close only the descriptors it opened."""
    deps = HopDeps(ScriptedModel(), RecordingLauncher(), SystemClock(), load(ws.root, {}),
                   lambda: False)
    before = _open_fds()
    env: dict[str, str] = {}
    while True:
        actor = hop_actor(ws, CHILD, env, deps)
        while True:
            try:
                passed = next(actor)
            except StopIteration as stop:
                result = stop.value
                break
            if passed.name == case.point and case.detail in (None, passed.detail):
                _bury(actor)
                for fd in sorted(_open_fds() - before):
                    os.close(fd)
                return
        assert result.outcome is Outcome.TOOLS_RAN, f"the chain ended before {case.point}"
        env = result.lock.hand_off({})


def close_at(ws: Workspace, case: Case) -> None:
    """``Inline.crash_at``: the chain dies at the point by closing its generator."""
    inline = Inline(ws, model=ScriptedModel(), config=load(ws.root, {}))
    inline.crash_at(CHILD, case.point, hops_before=case.hops_before, detail=case.detail)


# ------------------------------------------------------------------ what is left


def lock_held(ws: Workspace) -> bool:
    return held(ws, CHILD)


def _git(where: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=where, check=True, capture_output=True,
                          text=True).stdout


_SHA = re.compile(r"\b[0-9a-f]{40}\b")
_TEMP = re.compile(r"\.(?:\d+\.)?[0-9a-f]{12}\.tmp$")  # the writer's pid and random part
_TEMP_NAME = re.compile(r"/\.[^/]*\.<random>\.tmp$")
_STAMP = re.compile(rb"^deposited_at: .*$", re.M)


class Leftover(NamedTuple):
    files: dict[str, str]
    refs: dict[str, str]
    history: dict[str, str]
    index: dict[str, str]
    git_locks: list[str]
    executor_lock_held: bool


def leftover(ws: Workspace) -> Leftover:
    """The workspace as files, refs, indexes and locks, with what differs between any two
    runs named by what it stands for: a commit hash by its subject and tree, a deposit's
    time by a placeholder, a dot-temp's random suffix by a placeholder."""
    commits = {line[:40]: line[41:] for line in
               _git(ws.repo_git, "log", "--all", "--format=%H %T %s").splitlines()}

    def named(text: str) -> str:
        return _SHA.sub(lambda m: f"<commit {commits.get(m.group(0), '?')}>", text)

    files: dict[str, str] = {}
    for dirpath, dirs, names in os.walk(ws.root):
        rel = Path(dirpath).relative_to(ws.root)
        if rel.parts[:1] == ("repo.git",):
            dirs[:] = []
            continue
        for name in names:
            if name == "driver.log" or name == ".git":
                continue
            data = _STAMP.sub(b"deposited_at: <time>", (Path(dirpath) / name).read_bytes())
            files[_TEMP.sub(".<random>.tmp", str(rel / name))] = named(data.decode())
    refs = {name: named(sha) for sha, name in
            (line.split(" ") for line in
             _git(ws.repo_git, "for-each-ref", "--format=%(objectname) %(refname)").splitlines())}
    history = {a: _git(ws.repo_git, "log", "--format=%T %s", f"refs/heads/agents/{a}")
               for a in (PARENT, CHILD)}
    index = {a: _git(ws.worktree(a), "ls-files", "-s") for a in (PARENT, CHILD)}
    git_locks = sorted(str(p.relative_to(ws.root)) for p in ws.root.rglob("*.lock"))
    return Leftover(files, refs, history, index, git_locks, lock_held(ws))


@pytest.fixture
def reaped() -> Iterator[None]:
    """Drivers this test launched are reaped (none is left running: each was killed)."""
    yield
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _compare(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    real = setup_workspace(tmp_path / "real")
    sigkill_at(real, case, tmp_path / "hook", monkeypatch)
    killed = leftover(real)
    model = setup_workspace(tmp_path / "model")
    abandon_at(model, case)
    assert leftover(model) == killed
    assert not killed.executor_lock_held  # the kernel dropped the flock
    # ``Inline.crash_at`` closes the generator instead: the deposit's ``finally`` then
    # removes its dot-temp, which a SIGKILL leaves (R-DEP-9 makes it harmless). Apart
    # from dot-temps, it leaves the same workspace.
    closed = setup_workspace(tmp_path / "closed")
    close_at(closed, case)
    temps = {f for f in killed.files if _TEMP_NAME.search(f)}
    assert bool(temps) == (case.point in (Point.DEPOSIT_TEMP_WRITTEN, Point.DEPOSIT_PUBLISHED))
    without = killed._replace(files={f: b for f, b in killed.files.items() if f not in temps})
    assert leftover(closed) == without


@pytest.mark.parametrize("name", CI_CASES)
def test_sigkill_at_a_point_leaves_what_the_in_process_crash_leaves(
        tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch, reaped: None) -> None:
    _compare(tmp_path, name, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(CASES) - set(CI_CASES)))
def test_sigkill_at_every_crash_window_leaves_what_the_in_process_crash_leaves(
        tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch, reaped: None) -> None:
    _compare(tmp_path, name, monkeypatch)


def test_the_comparison_sees_a_crash_one_point_late(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reaped: None) -> None:
    """The oracle can fail: a real driver killed at ``deposit.published`` and an in-process
    crash one point later (``deposit.marked``) leave different workspaces."""
    real = setup_workspace(tmp_path / "real")
    sigkill_at(real, CASES["result-published-before-mark"], tmp_path / "hook", monkeypatch)
    model = setup_workspace(tmp_path / "model")
    abandon_at(model, Case(Point.DEPOSIT_MARKED, None, 1))
    late, killed = leftover(model), leftover(real)
    assert late != killed
    assert late.refs != killed.refs  # the returned mark moved

