"""Real tool calls in the refinement machine (``lernie_stateful.worktools``): each call
of the vocabulary played by hand on the unpatched code refines the model with the
result, the files and the commit its prediction says; a crash in the middle of a
hanging ``bash`` call is settled ``died`` with nothing left running; and the seeded
tool bugs make the same programs diverge."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from lernie_stateful.refinement import Divergence, World
from lernie_stateful.seeded_bugs import BY_NAME
from lernie_stateful.worktools import CALLS, NOTES, UPDATED, marked_alive

from lernie_ref.core.vocab import MESSAGES_DIR, Point
from tests.support.scenarios import crash_driver_at

P = 0


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    w.config = dataclasses.replace(w.config, step_budget=20)
    try:
        yield w
    finally:
        w.close()


def _results(world: World) -> list[tuple[bool, str]]:
    """(is_error, text) of every tool result in P's transcript, in order."""
    out = []
    msgs = world.ws.worktree(world.ids[P] or "") / MESSAGES_DIR
    for path in sorted(msgs.glob("*-tool.json")):
        for block in json.loads(path.read_text()):
            out.append((block["is_error"], block["content"][0]["text"]))
    return out


def _play(world: World, *calls: str) -> None:
    for name in calls:
        world.script(P, "noop", tool=name)
    world.operator_message(P)
    world.run_all()
    assert world.stranded() == []


def test_r_tool_5_the_patch_vocabulary_refines_the_model_with_its_files_and_commits(
        world: World) -> None:
    _play(world, "patch-add", "patch-update", "patch-mismatch", "patch-escape", "read-notes")
    results = _results(world)
    assert results[:2] == [(False, "patch applied:\nadded w-P/notes.txt"),
                           (False, "patch applied:\nupdated w-P/notes.txt")]
    assert [r[0] for r in results[2:4]] == [True, True]  # the mismatch, the escape
    assert results[4] == (False, UPDATED.decode())
    wt = world.ws.worktree(world.ids[P] or "")
    assert (wt / "w-P" / "notes.txt").read_bytes() == UPDATED
    assert not (wt / "other-P.txt").exists()  # the failed envelope wrote nothing
    assert not (wt.parent / "escape-P.txt").exists()
    add = _git(wt, "log", "-1", "--format=%H", "--grep", "^transcript 003: tool").strip()
    assert _git(wt, "show", f"{add}:w-P/notes.txt") == NOTES.decode()
    assert _git(wt, "show", f"{add}~1:w-P/notes.txt", check=False) == ""
    # the add's work is in the add's own commit, not before (R-TOOL-8)


def _git(wt: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", "-C", str(wt), *args], capture_output=True, text=True,
                          check=check).stdout


def test_r_tool_4_the_bash_vocabulary_refines_the_model_and_leaves_nothing_running(
        world: World) -> None:
    _play(world, "bash-ok", "bash-exit-3", "bash-flood", "bash-hang")
    results = _results(world)
    assert [r[0] for r in results] == [False, True, False, True]
    assert results[0][1] == "Exit code: 0\nhello\n"
    assert "cut at 64 of 100 bytes" in results[2][1]
    assert results[3][1].startswith("Exit code: none (killed after")
    assert marked_alive(str(world.ws.root)) == []


def test_r_tool_3_cd_moves_the_paths_of_later_calls(world: World) -> None:
    _play(world, "cd-work", "patch-add", "cd-work", "read-notes")
    assert [r[0] for r in _results(world)] == [True, False, False, True]
    wt = world.ws.worktree(world.ids[P] or "")
    assert (wt / "w-P" / "notes.txt").read_bytes() == NOTES


def test_every_call_of_the_vocabulary_is_played_by_these_tests() -> None:
    played = {"patch-add", "patch-update", "patch-mismatch", "patch-escape", "read-notes",
              "bash-ok", "bash-exit-3", "bash-flood", "bash-hang", "cd-work"}
    assert {c.name for c in CALLS} == played


def _crash_in_a_hanging_call(world: World) -> None:
    """P calls the hanging command; its driver is killed in the middle of the call."""
    world.script(P, "noop", tool="bash-hang")
    crash_driver_at(world, lambda p: p.name == Point.HOP_ASSISTANT_COMMITTED, to=P)


def test_r_tool_7_a_crash_mid_call_is_settled_died_and_its_processes_killed(
        world: World) -> None:
    _crash_in_a_hanging_call(world)
    aid = world.ids[P] or ""
    assert marked_alive(str(world.ws.root), aid)  # the dead call's command still runs
    world.scan()
    world.run_all()
    assert world.stranded() == []
    assert marked_alive(str(world.ws.root), aid) == []
    died = _results(world)
    assert len(died) == 1 and died[0][0] and died[0][1].startswith("died:")


def test_r_tool_7_a_settlement_that_kills_nothing_diverges(world: World) -> None:
    with BY_NAME["bash-kills-the-shell-only"].apply(), pytest.raises(Divergence) as err:
        _crash_in_a_hanging_call(world)
        world.scan()
        world.run_all()
    assert "R-TOOL-7" in str(err.value).splitlines()[0]


def test_r_tool_5_a_patch_that_writes_before_checking_diverges(world: World) -> None:
    with BY_NAME["patch-writes-before-checking"].apply(), pytest.raises(Divergence) as err:
        _play(world, "patch-add", "patch-mismatch")
    assert "other-P.txt" in str(err.value).splitlines()[0]


def test_r_tool_4_a_bash_call_that_kills_the_shell_only_diverges(world: World) -> None:
    with BY_NAME["bash-kills-the-shell-only"].apply(), pytest.raises(Divergence) as err:
        _play(world, "bash-hang")
    assert "left processes running" in str(err.value).splitlines()[0]


def _crash_before_a_results_commit(world: World) -> None:
    """P adds a file; its driver is killed between that result's rename and its commit."""
    world.script(P, "noop", tool="patch-add")
    crash_driver_at(world, lambda p: (
        p.name == Point.TRANSCRIPT_RENAMED and p.detail.endswith("-tool.json")), to=P)


def test_r_drain_2_a_result_killed_before_its_commit_is_recovered_with_its_work(
        world: World) -> None:
    _crash_before_a_results_commit(world)
    wt = world.ws.worktree(world.ids[P] or "")
    assert _git(wt, "status", "--porcelain", "--", "w-P") != ""  # the work is uncommitted
    world.scan()
    world.run_all()
    assert world.stranded() == []
    assert any("driver[P] drain.stray-committed" in row for row in world.trace)
    add = _git(wt, "log", "-1", "--format=%H", "--grep", "^transcript 003: tool").strip()
    assert _git(wt, "show", f"{add}:w-P/notes.txt") == NOTES.decode()
    assert _git(wt, "status", "--porcelain") == ""


def test_r_drain_2_a_recovery_that_leaves_the_work_behind_diverges(world: World) -> None:
    with BY_NAME["stray-result-without-its-work"].apply(), pytest.raises(Divergence) as err:
        _crash_before_a_results_commit(world)
        world.scan()
        world.run_all()
    first = str(err.value).splitlines()[0]
    assert "drain.stray-committed" in first and "R-TOOL-8" in first
