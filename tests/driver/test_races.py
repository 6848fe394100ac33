"""The races the project exists to rule out, driven at the actors' protocol points.

- bl-9c8f, the lost wakeup: a deposit racing a driver between its last read and
  its release (R-REL-1, I-7).
- bl-82d8, the endless two-agent exchange (R-DEBT, I-13).
- bl-a96a, reply addressing: an operator's question to a child (R-ADDR-3, I-11).
- crash windows: after a rename before its commit, after the assistant commit
  before the tools (R-DRAIN-2, R-STEP-2, I-5, I-18).

Everything runs the production actors over real files, real git and real flock;
only the launcher records instead of spawning, so the test decides when each
launched hop runs. Seeded historic bugs are hop parts (or a debt reading) with the deciding
function replaced, installed through `lernie_ref.testing.parts_installed` (R-STEP-10).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lernie_ref.actors.hop import Outcome, hop_actor
from lernie_ref.actors.parts import PRODUCTION
from lernie_ref.core.actor import run
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.debt import DebtReading
from lernie_ref.core.stepper import Stepper
from lernie_ref.core.vocab import Point
from lernie_ref.inbox import (
    ProbeOutcome,
    cli_dispatch,
    cli_message,
    cli_prompt,
    deposit_actor,
    probe_actor,
)
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import HopParts, Inline, parts_installed
from tests.support.readers import (
    entries,
    inbox_names,
    lock_is_free,
    names,
    subjects,
    worktree_clean,
)

NO_RELEASE_RULE = HopParts(owed_launch=lambda listing, seen: False)
"""The seeded historic bug bl-9c8f through the hop's parts (R-STEP-10)."""


def _quiet_root(ws: Workspace, inline: Inline) -> str:
    root = cli_prompt(ws, "hello", "", inline.launcher)
    assert inline.settle()
    inline.launcher.launches.clear()
    return root


def _race_deposit_between_last_read_and_release(ws: Workspace, inline: Inline, root: str) -> None:
    hop = Stepper(hop_actor(ws, root, {}, inline.deps))
    hop.run_to(Point.DRAIN_LISTED)  # the hop's one read of the inbox: empty
    writer = Stepper(deposit_actor(ws.root, root, "user", "late news", SystemClock()))
    writer.finish()
    probe = Stepper(probe_actor(ws.root, root, inline.launcher))
    assert probe.finish() is ProbeOutcome.BUSY  # the driver still holds the lock
    assert hop.finish().outcome is Outcome.NOTHING_TO_DO
    # The race was staged as meant: the hop's only listing was empty, and its re-read,
    # the first step after its release, listed exactly the racing deposit (R-REL-1).
    passed = [(p.name, p.detail) for p in hop.points]
    assert [d for n, d in passed if n == Point.DRAIN_LISTED] == ["0"]
    released = passed.index((Point.RELEASE_RELEASED, ""))
    assert passed[released + 1] == (Point.RELEASE_REREAD, "1")


def test_r_rel_1_lost_wakeup_deposit_racing_the_release_is_launched_and_delivered(
    ws: Workspace,
) -> None:
    inline = Inline(ws)
    root = _quiet_root(ws, inline)
    _race_deposit_between_last_read_and_release(ws, inline, root)
    assert inline.launcher.launches == [(ws.root, root)]  # the release rule's launch
    assert inline.settle()  # ... and that driver delivers it: no scan involved
    assert inbox_names(ws, root) == []
    delivered = [e for e in entries(ws, root) if e.delivered]
    assert delivered[-1].text.endswith("late news")


def test_r_rel_1_without_the_release_rule_the_racing_deposit_is_stranded(ws: Workspace) -> None:
    """The seeded historic bug bl-9c8f: a release that does not re-read strands the deposit."""
    with parts_installed(NO_RELEASE_RULE):
        inline = Inline(ws)
    root = _quiet_root(ws, inline)
    _race_deposit_between_last_read_and_release(ws, inline, root)
    assert inline.launcher.launches == []
    assert inline.settle()
    assert inbox_names(ws, root) == ["user-001.md"]  # stranded: nobody will ever deliver it
    assert lock_is_free(ws, root)


def test_r_rel_2_a_racing_stopped_obituary_parks_instead_of_launching(ws: Workspace) -> None:
    inline = Inline(ws)
    root = _quiet_root(ws, inline)
    kid = cli_dispatch(ws, root, "work", "", inline.launcher)
    inline.launcher.launches.clear()
    hop = Stepper(hop_actor(ws, root, {}, inline.deps))
    hop.run_to(Point.DRAIN_LISTED)
    inline.stop = True
    inline.hop(kid)  # the kid stops: its obituary lands in the root's inbox mid-hop
    inline.stop = False
    assert hop.finish().outcome is Outcome.NOTHING_TO_DO
    assert inline.launcher.launches == []
    assert inbox_names(ws, root) == [f"{kid}-001.md"]


def _two_agent_exchange(ws: Workspace, inline: Inline, max_hops: int) -> tuple[bool, str, str]:
    root = _quiet_root(ws, inline)
    b = cli_dispatch(ws, root, "stand by", "b", inline.launcher)
    assert inline.settle()
    a = cli_dispatch(ws, root, "@message b @message a pong\nping b", "a", inline.launcher)
    return inline.settle(max_hops), a, b


def test_i_13_two_agents_messaging_each_other_reach_quiescence(ws: Workspace) -> None:
    inline = Inline(ws)
    settled, a, b = _two_agent_exchange(ws, inline, max_hops=60)
    assert settled
    assert all(inbox_names(ws, agent) == [] for agent in ws.agent_ids())
    assert all(lock_is_free(ws, agent) for agent in ws.agent_ids())
    assert len(entries(ws, a)) <= 8 and len(entries(ws, b)) <= 8
    # exactly one `message` call each way
    sent = [e for e in entries(ws, a) + entries(ws, b) if b'"name":"message"' in e.data]
    assert len(sent) == 2


def test_i_13_without_the_reply_debt_the_exchange_never_ends(ws: Workspace) -> None:
    """The seeded historic bug bl-82d8 (lernie before the debt): every reply is owed."""
    with parts_installed(DebtReading(owes=lambda *_: True)):
        inline = Inline(ws)
    settled, a, b = _two_agent_exchange(ws, inline, max_hops=60)
    assert not settled
    assert len(entries(ws, a)) + len(entries(ws, b)) > 20


def test_r_addr_3_operator_question_to_a_child_is_answered_to_nobody(ws: Workspace) -> None:
    """bl-a96a: the operator's question is answered in place; the parent is not woken."""
    inline = Inline(ws)
    root = _quiet_root(ws, inline)
    kid = cli_dispatch(ws, root, "job", "", inline.launcher)
    assert inline.settle()
    parent_before = names(ws, root)
    inline.hops.clear()
    cli_message(ws, kid, "operator: how is it going?", "user", inline.launcher)
    assert inline.settle()
    assert names(ws, kid)[-1].endswith("-scripted.json")
    assert names(ws, root) == parent_before
    assert inbox_names(ws, root) == []
    assert set(inline.hops) == {kid}  # the kid and its own pin-1 self-launch, nobody else


def test_i_9_pin_2_stopped_child_obituary_parks_and_wakes_nobody(ws: Workspace) -> None:
    inline = Inline(ws)
    root = _quiet_root(ws, inline)
    kid = cli_dispatch(ws, root, "job", "", inline.launcher)
    inline.launcher.launches.clear()
    inline.stop = True
    inline.hop(kid)
    inline.stop = False
    assert inline.launcher.launches == []
    assert [n for n in inbox_names(ws, root)] == [f"{kid}-001.md"]
    # the parked obituary is delivered at the parent's next touch
    cli_message(ws, root, "status?", "user", inline.launcher)
    assert inline.settle()
    assert f"{kid}.md" in " ".join(names(ws, root))


# ----------------------------------------------------------------- crash windows


def _crash_at(
    ws: Workspace, inline: Inline, agent: str, point: Point, after: Point | None = None
) -> None:
    """Run a hop up to ``point`` (past ``after`` first) and abandon it there.

    Closing the generator releases the lease, as the kernel does for a killed process;
    nothing else of the hop runs.
    """
    actor = hop_actor(ws, agent, {}, inline.deps)
    stepper = Stepper(actor)
    if after is not None:
        stepper.run_to(after)
    stepper.run_to(point)
    actor.close()
    assert lock_is_free(ws, agent)


def test_i_18_crash_after_delivery_rename_before_commit_is_recovered(ws: Workspace) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, "precious", "", inline.launcher)
    inline.launcher.launches.clear()
    _crash_at(ws, inline, root, Point.DRAIN_RENAMED)
    assert inbox_names(ws, root) == [] and not worktree_clean(ws, root)
    inline.hop(root)  # the next touch
    assert f"transcript: recover delivered stray [{root}]" in subjects(ws, root)
    assert names(ws, root) == ["001-user.md", "002-scripted.json"]
    assert entries(ws, root)[0].text.endswith("precious")
    assert worktree_clean(ws, root)


def test_i_18_crash_after_model_entry_rename_before_commit_is_recovered(ws: Workspace) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, "@tools 1\nwork", "", inline.launcher)
    inline.launcher.launches.clear()
    _crash_at(ws, inline, root, Point.TRANSCRIPT_RENAMED, after=Point.HOP_MODEL_RETURNED)
    inline.hop(root)
    got = names(ws, root)
    assert got == [
        "001-user.md",
        "002-scripted.json",
        "003-tool.json",
        "004-scripted.json",
    ]
    assert b"died" in entries(ws, root)[2].data  # the tool never ran: settled as died
    assert worktree_clean(ws, root)


def test_r_step_2_crash_after_assistant_commit_before_tools_is_settled_not_replayed(
    ws: Workspace,
) -> None:
    inline = Inline(ws)
    other = cli_prompt(ws, "idle", "other", inline.launcher)
    assert inline.settle()
    root = cli_prompt(ws, "@message other side effect\ngo", "", inline.launcher)
    inline.launcher.launches.clear()
    _crash_at(ws, inline, root, Point.HOP_ASSISTANT_COMMITTED)
    assert inbox_names(ws, other) == []
    result = inline.hop(root)
    assert result.outcome is Outcome.TERMINAL
    assert inbox_names(ws, other) == []  # never replayed
    tool = entries(ws, root)[2]
    assert tool.origin == "tool" and b'"is_error":true' in tool.data and b"died" in tool.data
    assert names(ws, root)[-1] == "004-scripted.json"


def test_r_lock_3_in_process_baton_keeps_the_lease_between_hops(ws: Workspace) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, "@tools 2\nx", "", inline.launcher)
    result = run(hop_actor(ws, root, {}, inline.deps))
    assert result.outcome is Outcome.TOOLS_RAN and result.lock is not None
    assert not lock_is_free(ws, root)  # still held, handed to the successor

    env = result.lock.hand_off({})
    assert not lock_is_free(ws, root)
    second = run(hop_actor(ws, root, env, inline.deps))
    assert second.outcome is Outcome.TOOLS_RAN and second.lock is not None
    result.lock.release()  # handed off: a no-op
    assert not lock_is_free(ws, root)
    second.lock.release()
    assert lock_is_free(ws, root)


@pytest.mark.parametrize("rule", ["on", "patched-out"])
def test_r_rel_1_a_stopping_driver_completes_the_launch_of_mail_that_raced_it(
    ws: Workspace, rule: str
) -> None:
    """Pin 2 forbids the stopped driver's own launches; only the release rule may wake it."""
    with parts_installed(NO_RELEASE_RULE if rule == "patched-out" else PRODUCTION):
        inline = Inline(ws)
    root = cli_prompt(ws, "first", "", inline.launcher)
    inline.launcher.launches.clear()
    hop = Stepper(hop_actor(ws, root, {}, inline.deps))
    hop.run_to(Point.HOP_WARRANT)  # drained the prompt; a model call is due
    inline.stop = True
    Stepper(deposit_actor(ws.root, root, "user", "second", SystemClock())).finish()
    assert Stepper(probe_actor(ws.root, root, inline.launcher)).finish() is ProbeOutcome.BUSY
    result = hop.finish()
    assert result.outcome is Outcome.TERMINAL and result.recipient is None
    inline.stop = False
    if rule == "on":
        assert inline.launcher.launches == [(ws.root, root)]
        assert inline.settle()
        assert inbox_names(ws, root) == []
        assert names(ws, root)[-1] == "003-scripted.json"
    else:
        assert inline.launcher.launches == []
        assert inbox_names(ws, root) == ["user-001.md"]


def _writer_at_every_hop_point(
    make_ws: Callable[..., Workspace], prompt: str, quiet: bool
) -> list[tuple[int, str, list[str], list[str]]]:
    """For each protocol point k of a hop: a fresh workspace, the hop run to its k-th point,
    then a writer's whole deposit and probe, then the hop and every launch to the end.
    Returns (k, point, inbox left over, delivered texts ending in "late") per cut."""
    outcomes: list[tuple[int, str, list[str], list[str]]] = []
    k = 0
    while True:
        ws = make_ws()
        inline = Inline(ws)
        root = cli_prompt(ws, prompt, "", inline.launcher)
        if quiet:  # the prompt is answered first: the hop under test finds nothing due
            assert inline.settle()
        inline.launcher.launches.clear()
        hop = Stepper(hop_actor(ws, root, {}, inline.deps))
        point = None
        for _ in range(k + 1):
            point = hop.step()
            if point is None:
                break
        if point is None:
            return outcomes
        Stepper(deposit_actor(ws.root, root, "user", "late", SystemClock())).finish()
        Stepper(probe_actor(ws.root, root, inline.launcher)).finish()
        inline.successors(root, hop.finish())
        assert inline.settle()
        late = [e.text for e in entries(ws, root) if e.delivered and e.text.endswith("late")]
        outcomes.append((k, point.name, inbox_names(ws, root), late))
        k += 1


@pytest.mark.parametrize(
    ("prompt", "quiet"), [("hello", True), ("hello", False), ("@tools 1\nhello", False)]
)
def test_i_5_i_7_a_writer_at_every_point_of_a_hop_is_delivered_exactly_once(
    make_ws: Callable[..., Workspace], prompt: str, quiet: bool
) -> None:
    """Pin-1 hop, answering hop, tool hop: wherever the writer lands, its mail arrives once."""
    outcomes = _writer_at_every_hop_point(make_ws, prompt, quiet)
    assert len(outcomes) >= 4
    for k, point, left, late in outcomes:
        assert (left, len(late)) == ([], 1), (k, point)


def test_i_7_without_the_release_rule_some_point_of_a_hop_strands_the_writer(
    make_ws: Callable[..., Workspace],
) -> None:
    """bl-9c8f on the pin-1 path: cut after the drain's one read, before the release."""
    with parts_installed(NO_RELEASE_RULE):
        outcomes = _writer_at_every_hop_point(make_ws, "hello", quiet=True)
    stranded = [point for k, point, left, late in outcomes if left == ["user-001.md"]]
    assert stranded == [Point.DRAIN_LISTED, Point.HOP_WARRANT], outcomes
