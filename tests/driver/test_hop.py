"""The hop in process: drain, warrant, step, terminal tail (real git and flock)."""

from __future__ import annotations

import os
import time

import pytest

from lernie_ref.actors.drain import drain_actor
from lernie_ref.actors.hop import Outcome, hop_actor
from lernie_ref.actors.readings import mark_value
from lernie_ref.actors.sweep import scan
from lernie_ref.adapters import ModelReply, ModelRequest
from lernie_ref.core.actor import run
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.entry import render_model_entry
from lernie_ref.core.errors import LernieError, ModelError, UnpairedToolUse
from lernie_ref.core.stepper import Stepper
from lernie_ref.core.vocab import Point
from lernie_ref.inbox import Epitaph, cli_dispatch, cli_message, cli_prompt, deposit
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.lock import try_acquire
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Inline
from tests.support.readers import (
    entries,
    inbox_names,
    lock_is_free,
    names,
    subjects,
    worktree_clean,
)


def test_r_probe_5_prompt_is_delivered_and_answered(ws: Workspace) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, "hello there", "", inline.launcher)
    assert inline.launcher.launches == [(ws.root, root)]
    assert inline.settle()
    assert names(ws, root) == ["001-user.md", "002-scripted.json"]
    assert (
        entries(ws, root)[1].data
        == b'{"content":[{"type":"text","text":"scripted reply to user: hello there"}]}'
    )
    assert subjects(ws, root)[:2] == [
        f"transcript 002: scripted [{root}]",
        f"transcript 001: user [{root}]",
    ]
    assert inbox_names(ws, root) == []
    assert worktree_clean(ws, root)
    # pin 1: the final-response self-launch found nothing due and launched nothing
    assert inline.hops == [root, root]


def test_r_drain_3_4_order_by_mtime_then_name_plain_before_own_child_results(
    ws: Workspace,
) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, "start", "", inline.launcher)
    assert inline.settle()
    kid = cli_dispatch(ws, root, "@silent", "", inline.launcher)
    inline.launcher.launches.clear()
    inline.hop(kid)  # the kid answers: a result lands in the root's inbox
    inline.launcher.launches.clear()
    late = deposit(ws.root, root, "zed", "z")
    early = deposit(ws.root, root, "amy", "a")
    same = deposit(ws.root, root, "bob", "b")
    base = time.time_ns()
    os.utime(late, ns=(base, base + 2_000_000))
    os.utime(early, ns=(base, base))
    os.utime(same, ns=(base, base))
    result_file = ws.inbox_dir(root) / f"{kid}-001.md"
    os.utime(result_file, ns=(base, base - 1_000_000))  # oldest of all, yet delivered last
    lock = try_acquire(ws.inbox_dir(root))
    assert lock is not None
    try:
        delivery = run(drain_actor(ws, root, lock))
    finally:
        lock.release()
    assert delivery.delivered == 4 and delivery.seen == frozenset()
    assert names(ws, root)[-4:] == ["003-amy.md", "004-bob.md", "005-zed.md", f"006-{kid}.md"]
    assert inbox_names(ws, root) == []


def test_r_drain_4_delivery_moves_bytes_unchanged(ws: Workspace) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, "x", "", inline.launcher)
    assert inline.settle()
    path = deposit(ws.root, root, "user", "bytes \u00e9\n\n  kept")
    data = path.read_bytes()
    inline.hop(root)
    assert entries(ws, root)[2].data == data


def test_r_drain_6_rematerializes_a_torn_down_worktree_only_for_mail(ws: Workspace) -> None:
    import shutil

    inline = Inline(ws)
    root = cli_prompt(ws, "x", "", inline.launcher)
    assert inline.settle()
    shutil.rmtree(ws.worktree(root))
    assert inline.hop(root).outcome is Outcome.NOTHING_TO_DO
    assert not ws.worktree(root).exists()
    deposit(ws.root, root, "user", "wake up")
    assert inline.hop(root).outcome is Outcome.TERMINAL
    assert names(ws, root) == [
        "001-user.md",
        "002-scripted.json",
        "003-user.md",
        "004-scripted.json",
    ]


def test_r_step_1_busy_lock_means_already_driven(ws: Workspace) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, "x", "", inline.launcher)
    lock = try_acquire(ws.inbox_dir(root))
    assert lock is not None
    try:
        assert inline.hop(root).outcome is Outcome.ALREADY_DRIVEN
        assert inbox_names(ws, root) == ["user-001.md"]
    finally:
        lock.release()


def test_r_step_3_unpaired_tool_use_is_declined_lease_released_nothing_launched(
    ws: Workspace,
) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, "x", "", inline.launcher)
    assert inline.settle()
    wt = ws.worktree(root)
    orphan: dict[str, object] = {"type": "tool_use", "id": "lost", "name": "message", "input": {}}
    (wt / "messages" / "003-scripted.json").write_bytes(render_model_entry([orphan], None))
    (wt / "messages" / "004-user.md").write_bytes(b"after the orphan")
    ws.git.run(wt, ["add", "-A"])
    ws.git.run(wt, ["commit", "-q", "-m", "hand-made orphan"])
    deposit(ws.root, root, "user", "more mail")
    inline.launcher.launches.clear()
    with pytest.raises(UnpairedToolUse, match=f"branch {root} tip is an assistant entry"):
        inline.hop(root)
    assert lock_is_free(ws, root)
    assert inline.launcher.launches == []


class FailingModel:
    model_id = "failing"

    def call(self, request: ModelRequest, should_stop: object) -> ModelReply:
        raise ModelError("the model is down")


def test_r_step_5_model_error_commits_nothing_releases_and_launches_nothing(
    ws: Workspace,
) -> None:
    inline = Inline(ws, model=FailingModel())
    root = cli_prompt(ws, "x", "", inline.launcher)
    inline.launcher.launches.clear()
    with pytest.raises(ModelError):
        inline.hop(root)
    assert names(ws, root) == ["001-user.md"]
    assert worktree_clean(ws, root)
    assert lock_is_free(ws, root)
    # mail that raced the failing hop is not launched for (no release rule on error)
    assert inline.launcher.launches == []


def test_r_step_4_reserved_model_id_tool_is_refused(ws: Workspace) -> None:
    class ToolNamed:
        model_id = "tool"

        def call(self, request: ModelRequest, should_stop: object) -> ModelReply:
            return ModelReply([])

    inline = Inline(ws, model=ToolNamed())
    root = cli_prompt(ws, "x", "", inline.launcher)
    with pytest.raises(LernieError, match="reserved transcript origin"):
        inline.hop(root)
    assert names(ws, root) == ["001-user.md"] and lock_is_free(ws, root)


def test_r_step_7_message_tool_is_the_message_verb_with_this_agent_as_sender(
    ws: Workspace,
) -> None:
    inline = Inline(ws)
    other = cli_prompt(ws, "idle", "other", inline.launcher)
    assert inline.settle()
    root = cli_prompt(
        ws, "@message other hi from root\n@message nobody-here x", "", inline.launcher
    )
    inline.launcher.launches.clear()
    result = inline.hop(root)
    assert result.outcome is Outcome.TERMINAL
    assert inbox_names(ws, other) == [f"{root}-001.md"]
    body = (ws.inbox_dir(other) / f"{root}-001.md").read_text()
    assert body.startswith(f"---\nfrom: {root}\n") and body.endswith("\n---\nhi from root")
    assert (ws.root, other) in inline.launcher.launches
    tool_results = [e for e in entries(ws, root) if e.origin == "tool"]
    assert b'"text":"{\\"status\\":\\"deposited\\"}"' in tool_results[0].data
    assert b'"is_error":true' in tool_results[1].data and b"no agent" in tool_results[1].data


def test_r_step_7_dispatch_tool_forks_a_child_that_answers_its_parent(ws: Workspace) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, "@dispatch name=kid do the thing\nplan", "", inline.launcher)
    assert inline.settle()
    (kid,) = [a for a in ws.agent_ids() if a != root]
    assert names(ws, kid) == [f"001-{root}.md", "002-scripted.json"]
    assert ws.agent_name(kid) == "kid"
    root_names = names(ws, root)
    assert f"{root}-" in "".join(root_names)  # the kid's reply woke the root and was delivered
    assert mark_value(ws, "returned", kid) is not None
    assert all(inbox_names(ws, a) == [] for a in ws.agent_ids())


def _kid_with_its_budget_spent(ws: Workspace) -> tuple[Inline, str, str]:
    """A root and its child with a step budget of one, spent on its goal; then a second
    message for the child, not yet driven: (runner, root, child)."""
    inline = Inline(ws, config=Config(step_budget=1))
    root = cli_prompt(ws, "x", "", inline.launcher)
    assert inline.settle()
    kid = cli_dispatch(ws, root, "first", "", inline.launcher)
    assert inline.settle()
    cli_message(ws, kid, "second", "user", inline.launcher)
    inline.launcher.launches.clear()
    return inline, root, kid


def test_r_term_4_budget_exhausted_marks_parks_obituary_and_launches_nobody(
    ws: Workspace,
) -> None:
    inline, root, kid = _kid_with_its_budget_spent(ws)
    before = names(ws, root)
    result = inline.hop(kid)
    assert result.outcome is Outcome.TERMINAL and result.epitaph is Epitaph.BUDGET_EXHAUSTED
    assert mark_value(ws, "budget-exhausted", kid) is not None
    assert inline.launcher.launches == []  # pin 2: neither itself nor the parent
    (obituary,) = inbox_names(ws, root)
    text = (ws.inbox_dir(root) / obituary).read_text()
    assert "epitaph: budget-exhausted\n" in text and text.endswith("---\n")
    assert names(ws, root) == before


def test_r_term_7_budget_exhausted_again_at_one_tip_deposits_no_second_obituary(
    ws: Workspace,
) -> None:
    inline, root, kid = _kid_with_its_budget_spent(ws)
    assert inline.hop(kid).recipient == root
    tip = ws.branch_tip(kid)
    again = inline.hop(kid)  # the model call is still due, the budget still spent
    assert again.epitaph is Epitaph.BUDGET_EXHAUSTED and again.recipient is None
    assert ws.branch_tip(kid) == tip
    assert _obituaries(ws, root) == ["budget-exhausted"]

def _kid_with_work(ws: Workspace) -> tuple[Inline, str, str]:
    """A settled root and its child with its goal pending, not yet driven:
    (runner, root, child)."""
    inline = Inline(ws)
    root = cli_prompt(ws, "x", "", inline.launcher)
    assert inline.settle()
    kid = cli_dispatch(ws, root, "work", "", inline.launcher)
    inline.launcher.launches.clear()
    return inline, root, kid


def test_r_term_1_stop_before_the_model_call_parks_a_stopped_obituary(ws: Workspace) -> None:
    inline, root, kid = _kid_with_work(ws)
    inline.stop = True
    result = inline.hop(kid)
    assert result.epitaph is Epitaph.STOPPED
    assert inline.launcher.launches == []
    assert names(ws, kid) == [f"001-{root}.md"]
    (obituary,) = inbox_names(ws, root)
    assert "epitaph: stopped\n" in (ws.inbox_dir(root) / obituary).read_text()
    # a stop is not a locked door: a later message revives the branch
    inline.stop = False
    cli_message(ws, kid, "go on", "user", inline.launcher)
    assert inline.settle()
    assert names(ws, kid)[-1] == "003-scripted.json"


def _obituaries(ws: Workspace, parent: str) -> list[str]:
    """The epitaphs of the results pending in ``parent``'s inbox, oldest first."""
    return [
        line.removeprefix("epitaph: ")
        for n in inbox_names(ws, parent)
        for line in (ws.inbox_dir(parent) / n).read_text().splitlines()
        if line.startswith("epitaph: ")
    ]


def test_r_term_7_a_second_stop_at_one_tip_deposits_no_second_obituary(
    ws: Workspace, capfd: pytest.CaptureFixture[str]
) -> None:
    """A driver launched before a stop landed takes the lock after the stopped one and is
    stopped in turn, with nothing new on the branch: the parent hears of the stop once."""
    inline, root, kid = _kid_with_work(ws)
    inline.stop = True
    assert inline.hop(kid).epitaph is Epitaph.STOPPED
    tip = ws.branch_tip(kid)
    capfd.readouterr()
    again = inline.hop(kid)
    assert again.epitaph is Epitaph.STOPPED and again.recipient is None
    assert ws.branch_tip(kid) == tip and mark_value(ws, "stopped", kid) == tip
    assert _obituaries(ws, root) == ["stopped"]
    assert f"stopped again at {tip[:12]}, already reported to {root}" in capfd.readouterr().err
    assert inline.launcher.launches == []
    # still no locked door: a later message is answered, and a stop after it is reported
    inline.stop = False
    cli_message(ws, kid, "go on", "user", inline.launcher)
    assert inline.settle()
    cli_message(ws, kid, "and on", "user", inline.launcher)
    inline.stop = True
    assert inline.hop(kid).recipient == root
    assert _obituaries(ws, root) == ["stopped", "stopped"]


def test_r_term_7_a_stop_after_a_died_obituary_at_one_tip_is_reported(ws: Workspace) -> None:
    """Only a parking event repeats one: a death reported at the tip is no stop, so a stop
    of the revived driver before it commits anything still reaches the parent."""
    inline, root, kid = _kid_with_work(ws)
    inline.crash_at(kid, Point.HOP_WARRANT)
    report = scan(ws, inline.launcher, SystemClock())
    assert report.swept == [kid]
    inline.stop = True
    assert inline.hop(kid).recipient == root
    assert _obituaries(ws, root) == ["died", "stopped"]


def test_r_term_1_stop_inside_the_tool_window_settles_unanswered_calls(ws: Workspace) -> None:
    class TwoCalls:
        model_id = "two"

        def call(self, request: ModelRequest, should_stop: object) -> ModelReply:
            calls: list[dict[str, object]] = [
                {"type": "tool_use", "id": f"c{i}", "name": "noop", "input": {}} for i in (1, 2)
            ]
            return ModelReply(calls)

    inline = Inline(ws, model=TwoCalls())
    root = cli_prompt(ws, "x", "", inline.launcher)
    actor = hop_actor(ws, root, {}, inline.deps)
    stepper = Stepper(actor)
    stepper.run_to(Point.HOP_TOOL_RAN)
    inline.stop = True
    assert stepper.finish().epitaph is Epitaph.STOPPED
    tools = [e for e in entries(ws, root) if e.origin == "tool"]
    assert len(tools) == 2
    assert b"interrupted" in tools[1].data and b'"tool_use_id":"c2"' in tools[1].data
    assert lock_is_free(ws, root)


def test_r_step_5_failed_result_deposit_releases_and_launches_nothing(ws: Workspace) -> None:
    import shutil

    inline = Inline(ws)
    root = cli_prompt(ws, "x", "", inline.launcher)
    assert inline.settle()
    kid = cli_dispatch(ws, root, "job", "", inline.launcher)
    inline.launcher.launches.clear()
    shutil.rmtree(ws.inbox_dir(root))
    ws.inbox_dir(root).write_text("not a directory")  # the parent's inbox cannot take mail
    with pytest.raises(LernieError, match=r"^deposit initial user message: inbox i/o at "):
        inline.hop(kid)
    assert lock_is_free(ws, kid)
    assert inline.launcher.launches == []


def test_r_drain_7_unreadable_deposit_fails_the_hop_and_stays_in_the_inbox(ws: Workspace) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, "x", "", inline.launcher)
    assert inline.settle()
    (ws.inbox_dir(root) / "user-001.md").write_bytes(b"---\nfrom: user\n---\n\xff\xfe")
    inline.launcher.launches.clear()
    with pytest.raises(LernieError, match="is not UTF-8 text; it stays in the inbox"):
        inline.hop(root)
    assert inbox_names(ws, root) == ["user-001.md"]
    assert names(ws, root) == ["001-user.md", "002-scripted.json"]
    assert lock_is_free(ws, root) and inline.launcher.launches == []


def test_r_term_6_a_stopped_root_is_recorded_at_rest_not_dead(ws: Workspace) -> None:
    """R-TERM-6, D-19: a root has no parent to tell; its stop mark keeps scan and status
    from reading the deliberate stop as a silent death, on every later scan."""
    from lernie_ref.actors.sweep import scan
    from lernie_ref.inbox import RecordingLauncher
    from lernie_ref.operator.status import status

    inline = Inline(ws)
    root = cli_prompt(ws, "slow question", "", inline.launcher)
    inline.stop = True
    result = inline.hop(root)
    assert result.epitaph is Epitaph.STOPPED
    assert names(ws, root) == ["001-user.md"]  # the prompt waits, unanswered
    assert mark_value(ws, "stopped", root) is not None
    for _ in range(2):
        report = scan(ws, RecordingLauncher(), SystemClock())
        assert report.silent_deaths == [] and report.swept == []
    (row,) = status(ws)
    assert (row.last_epitaph, row.died_mid_work) == ("stopped", False)
    # not a locked door: a later message revives the root and the mark no longer applies
    inline.stop = False
    cli_message(ws, root, "go on", "user", inline.launcher)
    assert inline.settle()
    (row,) = status(ws)
    assert row.last_epitaph == "final-response"
