"""Each actor's documented points against what it yields on real runs (real files, git, flock).

An actor's docstring lists every :class:`Point` it may pass (nested actors' included)
under ``Points:`` and the ones every run passes under ``Always:``. Each scenario below
runs the production actor over a real workspace with :class:`Stepper`; every run must
stay within the list and pass the always-points, and the scenarios together must reach
every listed point, so a list can neither miss a point nor claim a dead one.
"""

from __future__ import annotations

import inspect
import re
import shutil
from collections.abc import Callable
from typing import TypeVar

import pytest

from lernie_ref.actors.drain import deliver_actor, drain_actor
from lernie_ref.actors.exit_protocol import conclude_actor
from lernie_ref.actors.hop import HopResult, hop_actor
from lernie_ref.actors.probe import probe_actor, writer_probe_actor
from lernie_ref.actors.release import release_actor
from lernie_ref.actors.sweep import scan_actor
from lernie_ref.actors.writer import dispatch_actor, message_actor, prompt_actor
from lernie_ref.core.actor import Actor, Passed
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.entry import text_block
from lernie_ref.core.stepper import Stepper
from lernie_ref.core.vocab import Epitaph, Point
from lernie_ref.inbox import cli_dispatch, cli_prompt, deposit, pending
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.deposit import deposit_actor, deposit_result_actor
from lernie_ref.substrate.lock import ExecutorLock, try_acquire
from lernie_ref.substrate.transcript import model_entry_actor, tool_entry_actor, write_entry_actor
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Inline, RecordingLauncher

Runs = list[frozenset[str]]
R = TypeVar("R")


def documented(fn: Callable[..., object]) -> tuple[frozenset[str], frozenset[str]]:
    """The ``Points:`` and ``Always:`` sets of ``fn``'s docstring."""
    doc = inspect.getdoc(fn) or ""
    points = re.search(r"^Points:(.*?)(?=^Always:|\n\n|\Z)", doc, re.S | re.M)
    always = re.search(r"^Always:(.*?)(?=\n\n|\Z)", doc, re.S | re.M)
    assert points is not None and always is not None, f"{fn.__name__}: no Points/Always list"

    def members(text: str) -> frozenset[str]:
        return frozenset(getattr(Point, name) for name in re.findall(r"Point\.([A-Z_]+)", text))

    return members(points.group(1)), members(always.group(1))


def check(fn: Callable[..., object], runs: Runs) -> None:
    points, always = documented(fn)
    assert points, f"{fn.__name__} documents no points"
    for seen in runs:
        assert seen <= points, f"{fn.__name__} yielded undocumented {sorted(seen - points)}"
        assert always <= seen, f"{fn.__name__} skipped always-points {sorted(always - seen)}"
    reached = frozenset().union(*runs)
    assert reached == points, f"{fn.__name__}: never reached {sorted(points - reached)}"


def names(stepper: Stepper[R]) -> frozenset[str]:
    return frozenset(p.name for p in stepper.points)


def finish(actor: Actor[object]) -> frozenset[str]:
    stepper: Stepper[object] = Stepper(actor)
    stepper.finish()
    return names(stepper)


def crash_after(actor: Actor[object], point: Point) -> frozenset[str]:
    """Run to ``point`` and die there (the generator is closed: its lease goes)."""
    stepper: Stepper[object] = Stepper(actor)
    stepper.run_to(point)
    actor.close()
    return names(stepper)


def held(ws: Workspace, agent: str) -> ExecutorLock:
    lock = try_acquire(ws.inbox_dir(agent))
    assert lock is not None
    return lock


def test_the_docstring_parser_sees_a_wrong_list() -> None:
    def liar() -> None:
        """Points: ``Point.PROBE_BUSY``.
        Always: ``Point.PROBE_BUSY``.
        """

    with pytest.raises(AssertionError, match="undocumented"):
        check(liar, [frozenset({Point.PROBE_BUSY, Point.PROBE_LAUNCHED})])
    with pytest.raises(AssertionError, match="always-points"):
        check(liar, [frozenset()])
    with pytest.raises(AssertionError, match="no Points"):
        documented(check)


def test_r_probe_1_probe_points(ws: Workspace) -> None:
    launcher = RecordingLauncher()
    root = cli_prompt(ws, "x", "", launcher)
    for fn in (probe_actor, writer_probe_actor):
        free = finish(fn(ws.root, root, launcher))
        with held(ws, root):
            busy = finish(fn(ws.root, root, launcher))
        check(fn, [free, busy])


def contested(ws: Workspace, actor: Actor[object], sender: str) -> frozenset[str]:
    """R-DEP-6, R-PROBE-1: between the writer's listing and its link the same sender's next
    name is taken, and by the probe (the creator released the new agent's lock once its
    branch was made, R-PROBE-6) a driver holds the new agent's lock."""
    stepper: Stepper[object] = Stepper(actor)
    agent = stepper.run_to(Point.DEPOSIT_LISTED).agent
    deposit(ws.root, agent, sender, "first")
    stepper.run_to(Point.DISPATCH_CREATED)
    with held(ws, agent):
        stepper.finish()
    return names(stepper)


def test_r_dep_6_deposit_points(ws: Workspace) -> None:
    """The plain and the result deposit, free and with the same sender's name taken
    between the listing and the link (R-DEP-6), each against its docstring list."""
    clock = SystemClock()
    root = cli_prompt(ws, "x", "", RecordingLauncher())
    kid = cli_dispatch(ws, root, "goal", "", RecordingLauncher())
    free = finish(deposit_actor(ws.root, root, "user", "hi", clock))
    stepper: Stepper[object] = Stepper(deposit_actor(ws.root, root, "user", "again", clock))
    stepper.run_to(Point.DEPOSIT_LISTED)
    deposit(ws.root, root, "user", "racer")
    stepper.finish()
    check(deposit_actor, [free, names(stepper)])
    tip = ws.branch_tip(kid)
    result = finish(
        deposit_result_actor(ws.root, root, kid, Epitaph.DIED, tip, None, clock, ws.git)
    )
    raced: Stepper[object] = Stepper(
        deposit_result_actor(ws.root, root, kid, Epitaph.DIED, tip, None, clock, ws.git)
    )
    raced.run_to(Point.DEPOSIT_LISTED)
    deposit(ws.root, root, kid, "racer")
    raced.finish()
    check(deposit_result_actor, [result, names(raced)])


def test_r_tr_3_transcript_entry_points(ws: Workspace) -> None:
    """A model entry and a tool entry, each renamed into ``messages/`` then committed."""
    root = cli_prompt(ws, "x", "", RecordingLauncher())
    wt, staging = ws.worktree(root), ws.steps_dir(root) / "staging.json"
    ws.steps_dir(root).mkdir(parents=True, exist_ok=True)
    model = finish(
        model_entry_actor(wt, root, "scripted", [text_block("hi")], None, staging, ws.git)
    )
    tool = finish(tool_entry_actor(wt, root, {"type": "tool_result"}, staging, ws.git))
    for fn in (write_entry_actor, model_entry_actor, tool_entry_actor):
        check(fn, [model, tool])


def test_r_scan_1_scan_points(ws: Workspace) -> None:
    """One pass over a workspace with a driven agent, a dead child, an agent with no inbox,
    fresh mail, debris and the remains of a creation killed before its ref passes only
    documented points and reaches every one of them but ``scan.resent`` and
    ``deposit.collided`` (races of their own: tests/fault and test_r_dep_6_deposit_points)."""
    launcher = RecordingLauncher()
    clock = SystemClock()
    root = cli_prompt(ws, "lead", "", launcher)
    Inline(ws).hop(root)
    kid = cli_dispatch(ws, root, "goal", "", launcher)
    Inline(ws).crash_at(kid, Point.HOP_WARRANT)  # dead with work due: swept and revived
    busy = cli_prompt(ws, "busy", "", launcher)
    ws.create_root_agent("20260101T000000Z-0000000e", "quiet", "no inbox yet")
    deposit(ws.root, "20260101T000000Z-0000dead", "user", "for nobody")  # debris
    ws.prepare_root_agent("20260101T000000Z-0000000f", "", "killed")  # never published
    with held(ws, busy):
        seen = finish(scan_actor(ws, launcher, clock))
    points, always = documented(scan_actor)
    assert always == frozenset()
    assert seen <= points, sorted(seen - points)
    assert points - seen == {Point.SCAN_RESENT, Point.DEPOSIT_COLLIDED}, sorted(points - seen)


def test_r_probe_4_writer_verb_points(ws: Workspace) -> None:
    launcher = RecordingLauncher()
    clock = SystemClock()
    prompted = Stepper(prompt_actor(ws, "x", "", launcher, clock))
    root = prompted.finish()
    dispatched = Stepper(dispatch_actor(ws, root, "goal", "", launcher, clock))
    kid = dispatched.finish()
    contested_prompt = contested(ws, prompt_actor(ws, "y", "", launcher, clock), "user")
    contested_dispatch = contested(ws, dispatch_actor(ws, root, "g", "", launcher, clock), root)
    check(prompt_actor, [names(prompted), contested_prompt])
    check(dispatch_actor, [names(dispatched), contested_dispatch])
    free = finish(message_actor(ws, kid, "a", "user", launcher, clock))
    # R-DEP-6: two writers list the same next name; the second one's link collides.
    first = Stepper(message_actor(ws, kid, "b", "user", launcher, clock))
    second = Stepper(message_actor(ws, kid, "c", "user", launcher, clock))
    first.run_to(Point.DEPOSIT_LISTED)
    second.run_to(Point.DEPOSIT_LISTED)
    first.finish()
    with held(ws, kid):
        second.finish()
    assert Point.DEPOSIT_COLLIDED in names(second) and Point.PROBE_BUSY in names(second)
    check(message_actor, [free, names(first), names(second)])


def test_r_rel_1_release_points(ws: Workspace) -> None:
    launcher = RecordingLauncher()
    root = cli_prompt(ws, "x", "", launcher)
    quiet = finish(release_actor(ws.root, root, held(ws, root), frozenset(), launcher))
    assert launcher.launches[-1] == (ws.root, root)  # the unseen prompt warranted a launch
    lock = held(ws, root)
    seen = frozenset((p.name, p.mtime_ns) for p in pending(ws.inbox_dir(root)))
    launches = len(launcher.launches)
    silent = finish(release_actor(ws.root, root, lock, seen, launcher))
    assert len(launcher.launches) == launches
    # R-REL-1: between the re-read and the probe a driver took the lock
    overtaken = Stepper(release_actor(ws.root, root, held(ws, root), frozenset(), launcher))
    overtaken.run_to(Point.RELEASE_REREAD)
    with held(ws, root):
        overtaken.finish()
    check(release_actor, [quiet, silent, names(overtaken)])


def test_r_drain_1_drain_and_deliver_points(ws: Workspace) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, "x", "", inline.launcher)
    assert inline.settle()
    runs: Runs = []
    empty = held(ws, root)
    runs.append(finish(drain_actor(ws, root, empty)))
    empty.release()
    shutil.rmtree(ws.worktree(root))
    deposit(ws.root, root, "user", "wake up")
    lock = held(ws, root)
    runs.append(finish(drain_actor(ws, root, lock)))
    (ws.worktree(root) / "messages" / "099-user.md").write_text("a stray\n")
    item = deposit(ws.root, root, "user", "more")
    delivered = finish(
        deliver_actor(ws.worktree(root), root, pending(ws.inbox_dir(root))[0], ws.git)
    )
    assert not item.exists()
    deposit(ws.root, root, "user", "and more")
    runs.append(finish(drain_actor(ws, root, lock)))
    lock.release()
    check(drain_actor, runs)
    check(deliver_actor, [delivered])


def test_r_term_2_exit_protocol_points(ws: Workspace) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, "x", "", inline.launcher)
    assert inline.settle()
    kid = cli_dispatch(ws, root, "work", "", inline.launcher)
    assert inline.settle()
    clock, launcher = SystemClock(), RecordingLauncher()
    runs: Runs = []
    for agent, epitaph in ((root, Epitaph.FINAL_RESPONSE), (kid, Epitaph.STOPPED)):
        actor = conclude_actor(
            ws,
            agent,
            epitaph,
            held(ws, agent),
            frozenset(),
            response="r",
            launcher=launcher,
            clock=clock,
        )
        runs.append(finish(actor))
    # the kid's final response: its result collides with a plain message it just sent
    actor = conclude_actor(
        ws,
        kid,
        Epitaph.FINAL_RESPONSE,
        held(ws, kid),
        frozenset(),
        response="done",
        launcher=launcher,
        clock=clock,
    )
    stepper: Stepper[object] = Stepper(actor)
    stepper.run_to(Point.DEPOSIT_LISTED)
    deposit(ws.root, root, kid, "an earlier note")
    with held(ws, root):  # the parent is being driven: the revival probe finds it busy
        stepper.finish()
    runs.append(names(stepper))
    deposit(ws.root, kid, root, "one more")
    assert inline.settle()
    runs.append(
        finish(
            conclude_actor(
                ws,
                kid,
                Epitaph.FINAL_RESPONSE,
                held(ws, kid),
                frozenset(),
                response="again",
                launcher=launcher,
                clock=clock,
            )
        )
    )
    check(conclude_actor, runs)


def test_r_step_1_hop_points(ws: Workspace) -> None:
    inline = Inline(ws)
    runs: Runs = []

    def hop(agent: str) -> Stepper[HopResult]:
        return Stepper(hop_actor(ws, agent, {}, inline.deps))

    root = cli_prompt(ws, "x", "", inline.launcher)
    with held(ws, root):
        runs.append(finish(hop_actor(ws, root, {}, inline.deps)))  # busy
    runs.append(finish(hop_actor(ws, root, {}, inline.deps)))  # drained, answered
    runs.append(finish(hop_actor(ws, root, {}, inline.deps)))  # nothing due
    # a crash between the transcript rename and its commit leaves a stray; the next
    # hop's drain commits it
    deposit(ws.root, root, "user", "hello")
    runs.append(crash_after(hop_actor(ws, root, {}, inline.deps), Point.TRANSCRIPT_RENAMED))
    runs.append(finish(hop_actor(ws, root, {}, inline.deps)))
    # a hop dies with a tool call unanswered; the next one settles it
    deposit(ws.root, root, "user", "@tools 1")
    runs.append(crash_after(hop_actor(ws, root, {}, inline.deps), Point.HOP_ASSISTANT_COMMITTED))
    runs.append(finish(hop_actor(ws, root, {}, inline.deps)))  # settles, then runs on
    shutil.rmtree(ws.worktree(root))
    deposit(ws.root, root, "user", "@tools 1")
    tools_ran = hop(root)
    result = tools_ran.finish()
    assert result.lock is not None
    result.lock.release()
    runs.append(names(tools_ran))  # rematerialized, tools ran (the baton is dropped)
    # a child answers; its result collides with a note it sent, and revives the parent
    kid = cli_dispatch(ws, root, "work", "", inline.launcher)
    stepper = hop(kid)
    stepper.run_to(Point.DEPOSIT_LISTED)
    deposit(ws.root, root, kid, "an earlier note")
    with held(ws, root):  # the parent is being driven: the revival probe finds it busy
        stepper.finish()
    runs.append(names(stepper))
    second = cli_dispatch(ws, root, "more work", "", inline.launcher)
    runs.append(finish(hop_actor(ws, second, {}, inline.deps)))  # answers, revives the parent
    inline.stop = True
    deposit(ws.root, kid, "user", "more")
    runs.append(finish(hop_actor(ws, kid, {}, inline.deps)))  # stopped
    inline.stop = False
    tight = Inline(ws, config=Config(step_budget=1))
    deposit(ws.root, kid, "user", "again")
    runs.append(finish(hop_actor(ws, kid, {}, tight.deps)))  # budget exhausted
    check(hop_actor, runs)


def test_points_are_typed_in_every_run(ws: Workspace) -> None:
    """Passed.name is always one of the vocabulary's names (Point.ALL), never a free string."""
    launcher = RecordingLauncher()
    stepper = Stepper(prompt_actor(ws, "x", "", launcher, SystemClock()))
    stepper.finish()
    passed: list[Passed] = stepper.points
    assert passed and all(p.name in Point.ALL for p in passed)
