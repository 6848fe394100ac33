"""I-19 in the refinement: a child that has answered (its returned mark at its tip) gets
new mail, and its driver is killed between the delivery's rename and its commit. The
stray does not move the tip, so the scan owes no `died` (R-SCAN-5) but revives the child
(R-SCAN-10), whose hop commits the stray first (R-DRAIN-2) and answers. The state at rest
after the kill is one I-19 accepts; a stricter I-19 once called it stranded work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lernie_stateful.refinement import RefinementMachine, World

from lernie_ref.core.ids import require_agent_id
from lernie_ref.core.vocab import MESSAGES_DIR, Point
from tests.support.replay import Drawn, discard, teardown_checks

P, C = 0, 1


def _kill_childs_delivery_after_its_answer(world: World, at: str) -> None:
    """`lernie prompt` P, which dispatches C; everything runs out (C answers P). Then
    `lernie message` C, and the driver launched for it is killed right after it passes
    ``at``: the message renamed into C's transcript, or that rename committed."""
    world.script(P, "dispatch")
    world.operator_message(P)
    world.run_all()
    assert world.real_view()[C].returned_at_tip  # C's answer carries its tip
    writer = world.operator_message(C)
    while writer.key in world.actors:
        world.step(writer)
    driver = world.start_launch(0)
    assert driver is not None and driver.agent == C
    while True:
        point = world.step(driver)
        if point is not None and point.name == at:
            break
    world.crash(driver)  # the matched model state at rest must satisfy I-19


def _died_from_c(world: World) -> list[str]:
    """The `died` obituaries from C that reached P (pending or delivered)."""
    pid, cid = require_agent_id(world.ids[P] or ""), world.ids[C] or ""
    places = [world.ws.worktree(pid) / MESSAGES_DIR, world.ws.inbox_dir(pid)]
    return [n.name for where in places if where.is_dir() for n in where.iterdir()
            if cid in n.name and "epitaph: died" in n.read_text()]


def test_i_19_a_child_killed_in_its_delivery_window_after_its_answer_is_revived(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    try:
        _kill_childs_delivery_after_its_answer(world, Point.DRAIN_RENAMED)
        view = world.real_view()[C]
        assert view.uncommitted and view.returned_at_tip and view.call_due
        launches = len(world.launcher.launches)
        world.scan()  # matched to the model's sweep: no obituary, one revival
        assert [aid for _, aid in world.launcher.launches[launches:]] == [world.ids[C]]
        world.run_all()
        assert world.stranded() == []
        assert _died_from_c(world) == []  # the tip never moved past C's answer
        after = world.real_view()[C]
        assert not after.uncommitted and not after.call_due  # committed, then answered
        assert any(f" {Point.DRAIN_STRAY_COMMITTED} " in f"{row} " for row in world.trace)
    finally:
        world.close()


def test_r_scan_5_the_same_kill_after_the_commit_is_reported_and_revived(
    tmp_path: Path,
) -> None:
    """The contrast: killed once the delivery is committed, C's tip has moved past its
    answer, so the scan owes P one `died` obituary as well as C's revival."""
    world = World(tmp_path)
    try:
        _kill_childs_delivery_after_its_answer(world, Point.DRAIN_COMMITTED)
        assert not world.real_view()[C].returned_at_tip
        world.scan()
        world.run_all()
        assert world.stranded() == []
        assert len(_died_from_c(world)) == 1
    finally:
        world.close()


def test_i_19_the_program_found_at_seed_104_refines_the_model() -> None:
    """The program the machine found (with its killed-dispatch rule left out), replayed
    rule by rule with what each rule drew, teardown included."""
    m = RefinementMachine()
    d: Any = Drawn
    m.operator_prompts(d(4, 2, ["dispatch", "dispatch"], [], []))
    m.settle()
    m.model_replies(d(0, ["dispatch"]))
    m.model_replies(d(0, ["dispatch", "dispatch"]))
    m.operator_messages(d(0, False, False))
    m.operator_messages(d(0, False, False))
    m.settle()
    m.model_replies(d(0, ["dispatch"]))
    m.operator_messages(d(2, False, False))
    m.crash(d(False, 12, ("ahead", 4)))  # not "a driver": the actor drawn
    m.model_replies(d(0, ["dispatch"]))
    m.model_replies(d(0, ["dispatch"]))
    m.start_launched_driver(d(0, ("at", Point.DRAIN_RENAMED)))
    assert m.world.graveyard[-1].points[-1].name == Point.DRAIN_RENAMED
    try:
        teardown_checks(m)
    finally:
        discard(m)
