"""``lernie scan`` at the library level (R-SCAN-*): the sweep's verdicts, the flush, races.

Disk states come from the driver's own hops run in-process with a recording
launcher; a death is the hop closed at a named protocol point (its lease goes, as
at process death, and nothing more is written). The end-to-end version with real
processes and SIGKILL is in ``test_operator_processes.py``.
"""

from __future__ import annotations

import json

from lernie_ref.actors.hop import Outcome, hop_actor
from lernie_ref.actors.sweep import Condition, ScanReport, condition_of, scan, scan_actor
from lernie_ref.core.actor import run
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.stepper import Stepper
from lernie_ref.core.vocab import Point
from lernie_ref.core.warrant import Warrant
from lernie_ref.inbox import (
    Epitaph,
    ProbeOutcome,
    RecordingLauncher,
    cli_dispatch,
    cli_message,
    cli_prompt,
    deposit,
    deposit_result,
    pending,
)
from lernie_ref.reply_debt import read_entries
from lernie_ref.substrate.lock import try_acquire
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Inline, drive
from tests.support.readers import mark, results_from

QUIET = (
    "silent deaths: 0; died deposits swept: 0; drivers launched: 0; inboxes with no agent branch: 0"
)


def family(ws: Workspace, goal: str = "work on it") -> tuple[str, str]:
    """A root that has answered its operator, and a freshly dispatched child (not yet run)."""
    rec = RecordingLauncher()
    root = cli_prompt(ws, "lead the work", "", rec)
    drive(ws, root)
    child = cli_dispatch(ws, root, goal, "", rec)
    return root, child


def died_results(ws: Workspace, parent: str, child: str) -> list[tuple[str, str]]:
    return [r for r in results_from(ws, parent, child) if r[0] == Epitaph.DIED]


# --------------------------------------------------------------------- the pure verdict


def test_r_scan_4_condition_table() -> None:
    due, nothing, unpaired = Warrant.MODEL_CALL_DUE, Warrant.NOTHING_DUE, Warrant.UNPAIRED
    assert condition_of(driven=True, pending_count=0, due=due, budget_at_tip=False) is (
        Condition.DRIVEN
    )
    assert condition_of(driven=False, pending_count=1, due=due, budget_at_tip=False) is (
        Condition.MAIL
    )
    assert condition_of(driven=False, pending_count=0, due=nothing, budget_at_tip=False) is (
        Condition.AT_REST
    )
    assert condition_of(driven=False, pending_count=0, due=due, budget_at_tip=True) is (
        Condition.AT_REST
    )
    for owing in (due, unpaired):
        assert condition_of(driven=False, pending_count=0, due=owing, budget_at_tip=False) is (
            Condition.DIED_MID_WORK
        )


def test_r_scan_3_report_line_is_upstreams_shape() -> None:
    report = ScanReport(
        silent_deaths=["A-B", "C-D"], swept=["A-B"], launched=["A"], busy=["X"], debris=["g"]
    )
    assert report.line() == (
        "silent deaths: 2 (A-B, C-D); died deposits swept: 1; drivers launched: 1; "
        "inboxes with no agent branch: 1"
    )
    assert ScanReport().line() == QUIET
    assert json.loads(report.json_text()) == {
        "silent_deaths": ["A-B", "C-D"],
        "swept": ["A-B"],
        "resent": [],
        "launched": ["A"],
        "busy": ["X"],
        "debris": ["g"],
        "driven": [],
        "revived": [],
        "given_up": [],
        "abandoned": [],
    }


# --------------------------------------------------------------------- real deaths


def test_r_scan_5_died_before_the_model_call_gets_one_obituary_and_i15_idempotent(
    ws: Workspace,
) -> None:
    root, child = family(ws)
    Inline(ws).crash_at(child, Point.HOP_WARRANT)
    tip = ws.branch_tip(child)
    rec = RecordingLauncher()
    report = scan(ws, rec, SystemClock())
    assert report.silent_deaths == [child]
    assert report.swept == [child]
    assert died_results(ws, root, child) == [("died", tip)]
    assert mark(ws, "returned", child) == tip
    # The child is revived (R-SCAN-10) in the sweep, the parent launched by the flush.
    assert report.revived == [child] and report.launched == [child, root]
    assert rec.launches == [(ws.root, child), (ws.root, root)]

    again = scan(ws, RecordingLauncher(), SystemClock())
    assert again.swept == [] and again.silent_deaths == []
    assert died_results(ws, root, child) == [("died", tip)]

    drive(ws, child)  # the revived child answers its goal
    drive(ws, root)  # the launched parent delivers the obituary and the reply
    assert pending(ws.inbox_dir(root)) == []
    assert scan(ws, RecordingLauncher(), SystemClock()).line() == QUIET


def test_r_scan_4_died_with_an_open_tool_window(ws: Workspace) -> None:
    root, child = family(ws, goal="@tools 1")
    Inline(ws).crash_at(child, Point.HOP_ASSISTANT_COMMITTED)
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.swept == [child]
    assert died_results(ws, root, child) == [("died", ws.branch_tip(child))]


def test_r_scan_4_died_between_tool_results_and_the_successor(ws: Workspace) -> None:
    root, child = family(ws, goal="@tools 1")
    Inline(ws).crash_at(child, Point.HOP_TOOLS_RAN)
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.swept == [child]
    assert len(died_results(ws, root, child)) == 1


def test_r_scan_4_dead_child_with_pending_mail_is_flushed_not_obituarised(ws: Workspace) -> None:
    """Mail under a free lock is work a launch picks up (crash settlement, then delivery):
    the flush's case, not a death."""
    root, child = family(ws)
    Inline(ws).crash_at(child, Point.HOP_WARRANT)
    deposit(ws.root, child, "user", "still there?")
    rec = RecordingLauncher()
    report = scan(ws, rec, SystemClock())
    assert report.silent_deaths == [] and results_from(ws, root, child) == []
    assert rec.launches == [(ws.root, child)]


def test_d_12_revived_and_dead_again_is_reported_again(ws: Workspace) -> None:
    root, child = family(ws)
    Inline(ws).crash_at(child, Point.HOP_WARRANT)
    scan(ws, RecordingLauncher(), SystemClock())
    first_tip = ws.branch_tip(child)
    deposit(ws.root, child, "user", "try again")
    Inline(ws).crash_at(child, Point.HOP_WARRANT)
    second_tip = ws.branch_tip(child)
    assert second_tip != first_tip
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.swept == [child]
    assert died_results(ws, root, child) == [("died", first_tip), ("died", second_tip)]


def test_r_scan_1_a_dead_root_is_named_but_never_deposited_for(ws: Workspace) -> None:
    root = cli_prompt(ws, "work", "", RecordingLauncher())
    Inline(ws).crash_at(root, Point.HOP_WARRANT)
    for _ in range(2):
        report = scan(ws, RecordingLauncher(), SystemClock())
        assert report.silent_deaths == [root]
        assert report.swept == []
        assert sorted(p.name for p in ws.inbox_root.iterdir()) == [root]
        assert pending(ws.inbox_dir(root)) == []


def test_r_scan_1_missing_parent_makes_a_root_and_the_pass_goes_on(ws: Workspace) -> None:
    root_a, child_a = family(ws)
    root_b, child_b = family(ws)
    Inline(ws).crash_at(child_a, Point.HOP_WARRANT)
    Inline(ws).crash_at(child_b, Point.HOP_WARRANT)
    ws.git.run(ws.repo_git, ["update-ref", "-d", f"refs/heads/agents/{root_a}"])
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.silent_deaths == sorted([child_a, child_b])
    assert report.swept == [child_b]
    assert results_from(ws, root_a, child_a) == []
    assert len(died_results(ws, root_b, child_b)) == 1


def test_r_scan_1_a_live_executor_is_skipped(ws: Workspace) -> None:
    root, child = family(ws)
    Inline(ws).crash_at(child, Point.HOP_WARRANT)
    lock = try_acquire(ws.inbox_dir(child))
    assert lock is not None
    try:
        report = scan(ws, RecordingLauncher(), SystemClock())
    finally:
        lock.release()
    assert report.driven == [child]
    assert report.swept == [] and results_from(ws, root, child) == []


# --------------------------------------------- upstream's false deaths (D-10, D-11)


def test_d_10_fresh_child_that_has_not_run_is_not_dead(ws: Workspace) -> None:
    """Hazard 1: dispatched, goal pending, no driver yet: upstream deposits `died`."""
    root, child = family(ws)
    rec = RecordingLauncher()
    report = scan(ws, rec, SystemClock())
    assert report.silent_deaths == [] and report.swept == []
    assert results_from(ws, root, child) == []
    assert mark(ws, "returned", child) is None
    assert report.launched == [child]  # its pending goal is flushed instead
    assert rec.launches == [(ws.root, child)]


def test_d_10_child_with_nothing_delivered_and_nothing_pending_is_not_dead(
    ws: Workspace,
) -> None:
    root, _ = family(ws)
    bare = ws.mint_child(root, SystemClock())
    ws.create_child_agent(root, bare, "", "never sent")
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.silent_deaths == [] and results_from(ws, root, bare) == []


def test_d_11_child_that_answered_only_the_operator_is_not_dead(ws: Workspace) -> None:
    """Hazard 2: the operator spoke last before the child ever ran, so its reply went to
    nobody and no returned mark exists: upstream deposits a false `died`."""
    root, child = family(ws)
    deposit(ws.root, child, "user", "a word from the operator")
    result = drive(ws, child)
    assert result.epitaph is Epitaph.FINAL_RESPONSE and result.recipient is None
    assert mark(ws, "returned", child) is None
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.silent_deaths == [] and report.swept == []
    assert results_from(ws, root, child) == []


def test_d_11_child_that_answered_a_sibling_is_not_dead(ws: Workspace) -> None:
    root, child = family(ws)
    sibling = cli_dispatch(ws, root, "sibling work", "", RecordingLauncher())
    deposit(ws.root, child, sibling, "a question from your sibling")
    result = drive(ws, child)
    assert result.recipient == sibling
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.silent_deaths == [] and results_from(ws, root, child) == []


def test_d_11_child_that_owed_nothing_after_a_foreign_reply_is_not_dead(ws: Workspace) -> None:
    """litany's debt: a foreign reply asks nothing, so the answer is not deposited and the
    returned mark stays behind the tip; still not a death."""
    root, child = family(ws)
    drive(ws, child)  # replies to its parent: mark at the tip
    sibling = cli_dispatch(ws, root, "sibling work", "", RecordingLauncher())
    deposit_result(ws.root, child, sibling, Epitaph.FINAL_RESPONSE, ws.branch_tip(sibling), "fyi")
    result = drive(ws, child)
    assert result.epitaph is Epitaph.FINAL_RESPONSE and result.recipient is None
    assert mark(ws, "returned", child) != ws.branch_tip(child)
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.silent_deaths == [] and died_results(ws, root, child) == []


def test_r_scan_9_crash_between_terminal_commit_and_deposit_resends_the_reply(
    ws: Workspace,
) -> None:
    """Hazard 3: the final response is committed, its deposit never made. Upstream writes a
    false `died` (or, once the child had returned before, nothing: the reply is lost).
    Here the sweep deposits the committed reply on the child's behalf, once."""
    root, child = family(ws)
    Inline(ws).crash_at(child, Point.HOP_ASSISTANT_COMMITTED)
    tip = ws.branch_tip(child)
    rec = RecordingLauncher()
    report = scan(ws, rec, SystemClock())
    assert report.silent_deaths == [] and report.swept == []
    assert report.resent == [(child, root)]
    assert results_from(ws, root, child) == [("final-response", tip)]
    (deposit_file,) = pending(ws.inbox_dir(root))
    assert deposit_file.path.read_text().endswith("\nscripted reply to " + root + ": work on it")
    assert mark(ws, "returned", child) == tip
    assert rec.launches == [(ws.root, root)]
    assert scan(ws, RecordingLauncher(), SystemClock()).resent == []
    drive(ws, root)
    assert scan(ws, RecordingLauncher(), SystemClock()).line() == QUIET


def test_r_scan_9_the_reply_is_resent_while_mail_waits_for_the_child(ws: Workspace) -> None:
    """Mail that reached the child after its death does not make the scan leave the lost
    reply to the child's next hop: the agent is at rest (R-SCAN-4), the reply leaves now,
    once, and the flush launches both the parent and the child."""
    root, child = family(ws)
    Inline(ws).crash_at(child, Point.HOP_ASSISTANT_COMMITTED)
    tip = ws.branch_tip(child)
    deposit(ws.root, child, "user", "are you still there?")
    rec = RecordingLauncher()
    report = scan(ws, rec, SystemClock())
    assert report.resent == [(child, root)] and report.silent_deaths == []
    assert results_from(ws, root, child) == [("final-response", tip)]
    assert mark(ws, "returned", child) == tip
    assert sorted(rec.launches) == sorted([(ws.root, root), (ws.root, child)])
    drive(ws, child)  # the hop finds the reply on disk and does not send it again
    assert results_from(ws, root, child)[0] == ("final-response", tip)
    assert len([r for r in results_from(ws, root, child) if r[1] == tip]) == 1


def test_r_scan_9_a_deposited_reply_whose_mark_was_lost_is_not_sent_twice(
    ws: Workspace,
) -> None:
    root, child = family(ws)
    drive(ws, child)
    lose_mark = ["update-ref", "-d", f"refs/lernie/returned/{child}"]
    ws.git.run(ws.repo_git, lose_mark)
    # still pending in the root's inbox
    assert scan(ws, RecordingLauncher(), SystemClock()).resent == []
    drive(ws, root)
    ws.git.run(ws.repo_git, lose_mark)
    # delivered into the root's transcript
    assert scan(ws, RecordingLauncher(), SystemClock()).resent == []
    assert len([e for e in read_entries(ws.worktree(root)) if e.origin == child]) == 1


def test_r_scan_9_an_unowed_or_operator_reply_is_not_resent(ws: Workspace) -> None:
    root, child = family(ws)
    deposit(ws.root, child, "user", "a word from the operator")
    Inline(ws).crash_at(child, Point.HOP_ASSISTANT_COMMITTED)
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.resent == [] and report.silent_deaths == []
    assert results_from(ws, root, child) == []


def test_r_scan_9_an_uncommitted_final_entry_is_left_to_stray_recovery(ws: Workspace) -> None:
    root, child = family(ws)
    Inline(ws).crash_at(child, Point.TRANSCRIPT_RENAMED, detail="002-scripted.json")
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.resent == [] and report.silent_deaths == []
    assert results_from(ws, root, child) == []


def test_r_scan_5_a_stopped_child_is_already_reported(ws: Workspace) -> None:
    root, child = family(ws)
    result = drive(ws, child, stop=True)
    assert result.epitaph is Epitaph.STOPPED
    assert results_from(ws, root, child) == [("stopped", ws.branch_tip(child))]
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.silent_deaths == [] and report.swept == []
    assert report.launched == [root]  # a scan is an explicit touch: the parked obituary flushes


def test_r_scan_4_budget_exhausted_root_is_at_rest(ws: Workspace) -> None:
    root = cli_prompt(ws, "@tools 3", "", RecordingLauncher())
    result = drive(ws, root, budget=1)
    assert result.epitaph is Epitaph.BUDGET_EXHAUSTED
    assert scan(ws, RecordingLauncher(), SystemClock()).silent_deaths == []


# --------------------------------------------------------------------- flush


def test_r_scan_2_pending_under_a_free_lock_gets_one_launch(ws: Workspace) -> None:
    root, child = family(ws)
    drive(ws, child)  # the child answers; the reply waits in the root's inbox
    rec = RecordingLauncher()
    report = scan(ws, rec, SystemClock())
    assert report.launched == [root]
    assert rec.launches == [(ws.root, root)]
    assert len(pending(ws.inbox_dir(root))) == 1  # launched, never drained


def test_r_scan_2_pending_under_a_held_lock_is_left_alone(ws: Workspace) -> None:
    _, child = family(ws)
    before = {p.name: p.path.read_bytes() for p in pending(ws.inbox_dir(child))}
    lock = try_acquire(ws.inbox_dir(child))
    assert lock is not None
    try:
        rec = RecordingLauncher()
        report = scan(ws, rec, SystemClock())
    finally:
        lock.release()
    assert report.busy == [child] and report.launched == [] and rec.launches == []
    assert {p.name: p.path.read_bytes() for p in pending(ws.inbox_dir(child))} == before


def test_r_scan_2_debris_is_counted_and_untouched(ws: Workspace) -> None:
    ghost = ws.inbox_root / "ghost"
    ghost.mkdir(parents=True)
    (ghost / "user-001.md").write_bytes(b"---\nfrom: user\n---\nhello")
    (ws.inbox_root / "empty-ghost").mkdir()
    rec = RecordingLauncher()
    report = scan(ws, rec, SystemClock())
    assert report.debris == ["ghost"]
    assert rec.launches == []
    assert (ghost / "user-001.md").read_bytes() == b"---\nfrom: user\n---\nhello"
    assert sorted(p.name for p in ghost.iterdir()) == ["user-001.md"]
    assert report.line().endswith("inboxes with no agent branch: 1")


def test_r_scan_2_agent_created_during_the_pass_is_not_debris(ws: Workspace) -> None:
    root, _ = family(ws)
    rec = RecordingLauncher()
    stepper = Stepper(scan_actor(ws, rec, SystemClock()))
    stepper.step()  # the registry has been read
    late = cli_dispatch(ws, root, "late work", "", RecordingLauncher())
    report = stepper.finish()
    assert report.debris == []
    assert late in report.launched


def test_r_scan_6_the_sweep_creates_no_inbox_directory(ws: Workspace) -> None:
    root = ws.mint_root(SystemClock())
    ws.create_root_agent(root, "", "no mail yet")
    scan(ws, RecordingLauncher(), SystemClock())
    assert not ws.inbox_dir(root).exists()


# --------------------------------------------------------------------- races (Stepper)


def _to_hold(stepper: Stepper[ScanReport], agent: str) -> None:
    while True:
        point = stepper.step()
        assert point is not None, "scan ended before holding the agent"
        if point.name == Point.SCAN_HELD and point.agent == agent:
            return


def test_r_scan_6_writer_busy_during_the_hold_is_launched_by_the_flush(ws: Workspace) -> None:
    """The sweep's hold makes a writer's probe read busy; the flush is its release rule."""
    root, child = family(ws)
    drive(ws, child)
    drive(ws, root)  # everyone at rest, inboxes empty
    scan_rec, writer_rec = RecordingLauncher(), RecordingLauncher()
    stepper = Stepper(scan_actor(ws, scan_rec, SystemClock()))
    _to_hold(stepper, root)
    assert cli_message(ws, root, "are you there?", "user", writer_rec) is ProbeOutcome.BUSY
    assert writer_rec.launches == []
    report = stepper.finish()
    assert report.launched == [root]
    assert scan_rec.launches == [(ws.root, root)]


def test_r_scan_6_a_driver_starting_during_the_hold_steps_aside_and_no_false_death(
    ws: Workspace,
) -> None:
    """The fresh-child race: the child's driver cannot drain under the sweep's hold, so the
    sweep never reads a half-started child as dead; the flush relaunches it."""
    root, child = family(ws)
    rec = RecordingLauncher()
    stepper = Stepper(scan_actor(ws, rec, SystemClock()))
    _to_hold(stepper, child)
    hop = run(hop_actor(ws, child, {}, Inline(ws).deps))
    assert hop.outcome is Outcome.ALREADY_DRIVEN
    report = stepper.finish()
    assert report.silent_deaths == [] and results_from(ws, root, child) == []
    assert report.launched == [child]


def test_r_scan_1_scan_of_an_empty_workspace(ws: Workspace) -> None:
    assert scan(ws, RecordingLauncher(), SystemClock()).line() == QUIET
