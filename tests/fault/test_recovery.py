"""R-SCAN-10, R-STATUS-5: after a dead driver, one `lernie scan` gets the work done.

Deaths are made in-process at a named protocol point (the hop's generator closed:
the lease goes, nothing more is written, as at SIGKILL); the recovery is the real
`lernie scan` command launching real drivers.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from lernie_stateful.audit import audit

from lernie_ref.actors.readings import mark_value
from lernie_ref.actors.sweep import REVIVE_LIMIT, scan, scan_actor
from lernie_ref.core.actor import run
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.frontmatter import split_frontmatter
from lernie_ref.core.stepper import Stepper
from lernie_ref.core.vocab import MarkKind
from lernie_ref.inbox import RecordingLauncher, cli_dispatch, cli_message, cli_prompt
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Inline, Point, drive
from tests.support.readers import entries, worktree_clean
from tests.support.runners import run_cli
from tests.support.scenarios import reply_published_mark_left_behind
from tests.support.waits import wait_quiescent

RETURNED = MarkKind.RETURNED.value


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


def _commit_adding(ws: Workspace, agent: str, name: str) -> str:
    """The commit of the agent's branch that added ``messages/<name>`` (git log)."""
    return ws.git.run(
        ws.repo_git,
        ["log", "--format=%H", "--diff-filter=A", f"agents/{agent}", "--", f"messages/{name}"],
    ).stdout


def _replies_reaching(ws: Workspace, to: str, sender: str) -> list[str]:
    """``terminal_ref`` of every final response from ``sender`` in ``to``'s transcript (read
    from the entries' front matter with a regular expression of its own)."""
    refs = []
    for path in sorted((ws.worktree(to) / "messages").glob(f"*-{sender}.md")):
        head = path.read_text().split("\n---\n", 1)[0]
        if re.search(r"^epitaph: *final-response *$", head, re.M):
            found = re.search(r"^terminal_ref: *([0-9a-f]{40}) *$", head, re.M)
            refs.append(found.group(1) if found else "")
    return refs


@pytest.mark.parametrize("touch", ["message", "advance"])
@pytest.mark.parametrize(
    "death", [Point.HOP_ASSISTANT_COMMITTED, Point.TRANSCRIPT_RENAMED],
    ids=["after-commit", "before-commit"],
)
def test_r_drain_8_a_lost_reply_leaves_before_new_mail_buries_it(
    ws: Workspace, death: str, touch: str
) -> None:
    """Found by the chaos run (process-group kills): an agent owes a reply to another agent,
    and its driver dies after the final response reached ``messages/`` but before the
    deposit. The next touch was a message: its hop delivered the message after the final
    response, so the sweep's re-send (R-SCAN-9, which only looks at the newest entry) no
    longer applied and the reply was lost for good. The hop now sends it first."""
    rec = RecordingLauncher()
    root = cli_prompt(ws, "lead", "", rec)
    drive(ws, root)
    child = cli_dispatch(ws, root, "help", "", rec)
    inline = Inline(ws)
    inline.hop(child)
    assert inline.settle()
    cli_message(ws, root, "a question from the child", child, RecordingLauncher())
    Inline(ws).crash_at(root, death)
    final = sorted(os.listdir(ws.worktree(root) / "messages"))[-1]
    assert final.endswith("-scripted.json")
    assert _replies_reaching(ws, child, root) == []

    inline = Inline(ws)
    if touch == "message":  # the operator writes before anyone runs a scan
        cli_message(ws, root, "and now this", "user", inline.launcher)
    else:
        inline.launcher.launch(ws.root, root)
    assert inline.settle()
    assert run(scan_actor(ws, inline.launcher, SystemClock())).resent == []
    assert inline.settle()

    assert _replies_reaching(ws, child, root) == [_commit_adding(ws, root, final)]
    assert [len(g) for g in entries_per_commit(ws, root)] == [1] * len(entries(ws, root))
    report = audit(ws.root)
    assert report.violations(True) == [], report.text(True)


def test_r_scan_5_a_scan_killed_between_an_obituary_and_its_mark_does_not_repeat_it(
    ws: Workspace,
) -> None:
    """Found by the crash enumeration (its audit check): a scan killed after publishing a
    dead child's `died` obituary and before moving the returned mark left the mark behind,
    and the next scan reported the same death again, so the parent got it twice (I-5, I-15)."""
    rec = RecordingLauncher()
    root = cli_prompt(ws, "lead", "", rec)
    drive(ws, root)
    child = cli_dispatch(ws, root, "build it", "", rec)
    Inline(ws).crash_at(child, Point.HOP_WARRANT)
    actor = scan_actor(ws, RecordingLauncher(), SystemClock())
    Stepper(actor).run_to(Point.DEPOSIT_PUBLISHED)
    actor.close()  # killed: the obituary is published, the mark not moved
    died = [p for p in os.listdir(ws.inbox_dir(root)) if not p.startswith(".")]
    assert len(died) == 1
    tip = ws.branch_tip(child)
    assert mark_value(ws, RETURNED, child) != tip
    assert [f.check for f in audit(ws.root).violations()] == ["marks"]
    inline = Inline(ws)
    report = run(scan_actor(ws, inline.launcher, SystemClock()))
    assert report.swept == []
    assert mark_value(ws, RETURNED, child) == tip  # R-SCAN-11: repaired, not re-sent
    assert inline.settle()
    obituaries = [
        p for p in (ws.worktree(root) / "messages").glob(f"*-{child}.md")
        if re.search(r"^epitaph: *died *$", p.read_text(), re.M)
    ]
    assert len(obituaries) == 1
    assert answered(ws, child)
    report_after = audit(ws.root)
    assert report_after.violations() == [], report_after.text()


def _replies(ws: Workspace, root: str, child: str) -> int:
    return sum(
        1 for p in (ws.worktree(root) / "messages").glob(f"*-{child}.md")
        if re.search(r"^epitaph: *final-response *$", p.read_text(), re.M)
    )


def test_r_scan_11_a_reply_whose_mark_a_kill_left_behind_is_repaired_by_the_next_scan(
    ws: Workspace, capfd: pytest.CaptureFixture[str]
) -> None:
    root, child, tip = reply_published_mark_left_behind(ws)
    inline = Inline(ws)
    report = run(scan_actor(ws, inline.launcher, SystemClock()))
    assert report.resent == [] and report.swept == [] and report.revived == []
    assert mark_value(ws, RETURNED, child) == tip
    assert "(R-SCAN-11)" in capfd.readouterr().err
    assert inline.settle()
    assert _replies(ws, root, child) == 1
    report_after = audit(ws.root)
    assert report_after.violations() == [], report_after.text()


def test_r_scan_11_a_reply_whose_mark_a_kill_left_behind_is_repaired_by_the_next_hop(
    ws: Workspace,
) -> None:
    root, child, tip = reply_published_mark_left_behind(ws)
    # The operator's mail: its answer goes to nobody, so no later result moves the mark.
    cli_message(ws, child, "one more thing", "user", RecordingLauncher())
    inline = Inline(ws)
    inline.hop(child)  # repairs the mark before its drain moves the tip
    assert mark_value(ws, RETURNED, child) == tip
    assert ws.branch_tip(child) != tip
    inline.hop(root)  # the reply the kill left pending is delivered once
    assert inline.settle()
    assert _replies(ws, root, child) == 1
    report_after = audit(ws.root)
    assert report_after.violations() == [], report_after.text()
