"""R-SCAN-10, R-STATUS-5: after a dead driver, one `lernie scan` gets the work done.

Deaths are made in-process at a named protocol point (the hop's generator closed:
the lease goes, nothing more is written, as at SIGKILL); the recovery is the real
`lernie scan` command launching real drivers.
"""

from __future__ import annotations

import json

from conftest import run_cli, wait_quiescent

from lernie_ref.actors.sweep import REVIVE_LIMIT, scan, scan_actor
from lernie_ref.core.actor import run
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.frontmatter import split_frontmatter
from lernie_ref.inbox import RecordingLauncher, cli_dispatch, cli_prompt
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Inline, Point, drive
from tests.driver.util import entries, worktree_clean


def status_rows(ws: Workspace) -> tuple[dict[str, dict[str, object]], str]:
    proc = run_cli(["status", str(ws.root), "--json"])
    assert proc.returncode == 0, proc.stderr
    return {r["id"]: r for r in json.loads(proc.stdout)["agents"]}, proc.stderr


def answered(ws: Workspace, agent: str) -> bool:
    tail = entries(ws, agent)[-1]
    return tail.role == "assistant" and worktree_clean(ws, agent)


def test_r_scan_10_a_root_killed_mid_step_is_revived_by_one_scan(ws: Workspace) -> None:
    root = cli_prompt(ws, "hello", "", RecordingLauncher())
    Inline(ws).crash_at(root, Point.HOP_WARRANT)  # delivered, model call due, driver gone
    rows, hint = status_rows(ws)
    assert rows[root]["died_mid_work"] is True
    assert hint == (
        f"lernie status: {root} died mid-work with work due; `lernie scan {ws.root}` "
        "relaunches it (R-SCAN-10)\n"
    )
    proc = run_cli(["scan", str(ws.root), "--json"])
    assert json.loads(proc.stdout)["revived"] == [root]
    wait_quiescent(ws)
    assert answered(ws, root)
    rows, hint = status_rows(ws)
    assert rows[root]["died_mid_work"] is False and hint == ""


def test_r_scan_10_a_dead_child_gets_its_obituary_and_then_answers_its_goal(
    ws: Workspace,
) -> None:
    rec = RecordingLauncher()
    root = cli_prompt(ws, "lead", "", rec)
    drive(ws, root)
    child = cli_dispatch(ws, root, "build it", "", rec)
    Inline(ws).crash_at(child, Point.HOP_WARRANT)
    proc = run_cli(["scan", str(ws.root)])
    assert proc.stdout.startswith(f"silent deaths: 1 ({child}); died deposits swept: 1;")
    wait_quiescent(ws)
    assert answered(ws, child) and answered(ws, root)
    from_child = [
        split_frontmatter(e.text)[0] for e in entries(ws, root) if e.origin == child
    ]
    assert sorted(from_child) == ["died", "final-response"]


def test_r_scan_10_a_kill_between_tool_steps_is_finished_by_the_scan(ws: Workspace) -> None:
    root = cli_prompt(ws, "work\n@tools 3", "", RecordingLauncher())
    Inline(ws).crash_at(root, Point.DRAIN_LISTED, hops_before=1)  # one tool step done, two to go
    run_cli(["scan", str(ws.root)])
    wait_quiescent(ws)
    assert answered(ws, root)
    assert [e.role for e in entries(ws, root)].count("tool") == 3


def test_r_scan_10_crash_loop_guard_gives_up_and_status_says_what_to_do(
    ws: Workspace,
) -> None:
    root = cli_prompt(ws, "hello", "", RecordingLauncher())
    tip = None
    for attempt in range(REVIVE_LIMIT):
        Inline(ws).crash_at(root, Point.HOP_WARRANT)  # every relaunch dies at the same point
        tip = tip or ws.branch_tip(root)
        rec = RecordingLauncher()
        report = scan(ws, rec, SystemClock())
        assert report.revived == [root], attempt
        assert rec.launches == [(ws.root, root)]
    assert ws.branch_tip(root) == tip  # no progress at all
    Inline(ws).crash_at(root, Point.HOP_WARRANT)
    rec = RecordingLauncher()
    report = scan(ws, rec, SystemClock())
    assert report.given_up == [root] and report.revived == [] and rec.launches == []
    _, hint = status_rows(ws)
    assert f"died mid-work {REVIVE_LIMIT} times after `lernie scan` revived it" in hint
    assert f"`lernie advance {ws.root} {root}` by hand" in hint
    # The operator's hand-run hop makes progress; the guard no longer applies.
    assert run_cli(["advance", str(ws.root), root]).returncode == 0
    wait_quiescent(ws)
    assert answered(ws, root)
    assert scan(ws, RecordingLauncher(), SystemClock()).given_up == []


def entries_per_commit(ws: Workspace, agent: str) -> list[list[str]]:
    """For each commit of the agent's branch that adds entries, the entries it adds (git log)."""
    out = ws.git.run(
        ws.repo_git,
        ["log", "--format=format:@", "--name-only", "--diff-filter=A", f"agents/{agent}", "--",
         "messages/"],
    ).stdout
    groups = [g.split() for g in out.split("@")]
    return [g for g in groups if g]


def test_r_drain_2_a_model_entry_left_uncommitted_before_an_open_window_gets_its_own_commit(
    ws: Workspace,
) -> None:
    """Found by the chaos run: a driver killed between the rename of a model entry that calls
    a tool and its commit; the next hop committed that entry inside the settlement's tool
    commit. The stray recovery now runs before the crash settlement (R-STEP-2, R-TR-3)."""
    root = cli_prompt(ws, "work\n@tools 1", "", RecordingLauncher())
    Inline(ws).crash_at(root, Point.TRANSCRIPT_RENAMED)
    assert not worktree_clean(ws, root)
    inline = Inline(ws)
    report = run(scan_actor(ws, inline.launcher, SystemClock()))
    assert report.revived == [root]
    assert inline.settle()
    assert [len(g) for g in entries_per_commit(ws, root)] == [1] * len(entries(ws, root))
    assert answered(ws, root)
