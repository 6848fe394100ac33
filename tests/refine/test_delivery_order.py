"""I-6 and R-DEP-12 in the refinement: a writer paused between its temp write and its
publication. An operator's `lernie message` to P has written its temp and not yet linked it
when C's message to P is published; then the operator's deposit is published and P's
driver drains both. The model's inbox is in publication order, so C's message comes first;
the implementation must deliver it first too. Before R-DEP-12 the link published the
temp's inode with the mtime of its write, so the (mtime, name) listing (R-DRAIN-3) put the
operator's older-stamped deposit first, and the machine found that divergence (seed 102,
with only the no-op tool drawn)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from lernie_stateful.refinement import RefinementMachine, World

from lernie_ref.core.ids import require_agent_id
from lernie_ref.core.vocab import MESSAGES_DIR, USER_SENDER, Point
from tests.support.replay import Drawn, discard, teardown_checks

P, C, S = 0, 1, 2
HOUR_NS = 3600 * 10**9


def _age_temps(inbox: Path) -> None:
    """The writer's pause made long: its temp's times set an hour back (the state a writer
    stopped for an hour leaves), so no clock granularity can make the two stamps equal."""
    old = time.time_ns() - HOUR_NS
    for name in os.listdir(inbox):
        if name.startswith(".") and name.endswith(".tmp"):
            os.utime(inbox / name, ns=(old, old))


def _delivered_order(world: World, a: int) -> list[str]:
    """The senders of agent ``a``'s delivered entries, in transcript order."""
    aid = require_agent_id(world.ids[a] or "")
    names = sorted(n for n in os.listdir(world.ws.worktree(aid) / MESSAGES_DIR)
                   if n.endswith(".md"))
    return [n.split("-", 1)[1][: -len(".md")] for n in names]


def test_i_6_r_dep_12_a_deposit_published_late_is_delivered_after_those_published_first(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    try:
        world.script(P, "dispatch")
        world.operator_message(P)  # `lernie prompt`: P dispatches C, C answers, all rest
        world.run_all()
        world.script(C, "message", P)  # C's next reply: a message to P
        to_c = world.operator_message(C)
        while to_c.key in world.actors:
            world.step(to_c)
        to_p = world.operator_message(P)
        while (point := world.step(to_p)) is not None and point.name != Point.DEPOSIT_TEMP_WRITTEN:
            pass
        assert point is not None  # paused: its temp written, not yet published
        _age_temps(world.ws.inbox_dir(require_agent_id(world.ids[P] or "")))
        driver = world.start_launch(0)  # C's driver: its message to P is published
        assert driver is not None and driver.agent == C
        while driver.key in world.actors:
            world.step(driver)
        assert world.real_view()[P].inbox == ((C, "plain"),)
        while to_p.key in world.actors:  # the paused writer publishes now
            world.step(to_p)
        world.run_all()  # P's driver drains both: matched to the model point by point
        assert world.stranded() == []
        first, second = _delivered_order(world, P)[-2:]
        assert (first, second) == (world.ids[C], USER_SENDER)
    finally:
        world.close()



def test_i_6_r_dep_12_a_result_published_in_the_tick_of_a_message_is_delivered_after_it(
    tmp_path: Path,
) -> None:
    """S's final response to C (its last prompter, a sibling: an ordinary message to C,
    R-DEP-10) has its temp written when the operator's message to C is published; S's
    driver publishes right after, most often within the same tick of the kernel's clock.
    The model delivers the operator's first (published first); so must the code, though
    S's older temp and S's name ("2023…" before "user") would each put S's first."""
    world = World(tmp_path)
    try:
        world.script(P, "dispatch")
        world.script(P, "dispatch")
        world.operator_message(P)  # P dispatches C and S; all rest
        world.run_all()
        world.script(C, "message", S)  # C writes to S: S's next answer goes to C
        to_c = world.operator_message(C)
        while to_c.key in world.actors:
            world.step(to_c)
        c_driver = world.start_launch(0)
        assert c_driver is not None and c_driver.agent == C
        while c_driver.key in world.actors:
            world.step(c_driver)
        waiting = [aid for _, aid in world.launcher.launches[world.started:]]
        s_driver = world.start_launch(waiting.index(world.ids[S]))
        assert s_driver is not None and s_driver.agent == S
        while (point := world.step(s_driver)) is not None and \
                point.name != Point.DEPOSIT_TEMP_WRITTEN:
            pass
        assert point is not None and point.detail.startswith(f".{world.ids[S]}-")
        to_c = world.operator_message(C)
        while (point := world.step(to_c)) is not None and point.name != Point.DEPOSIT_PUBLISHED:
            pass
        point = world.step(s_driver)  # S's result published, most often in the same tick
        assert point is not None and point.name == Point.DEPOSIT_PUBLISHED
        world.run_all()  # C's driver drains both: matched to the model point by point
        assert world.stranded() == []
        first, second = _delivered_order(world, C)[-2:]
        assert (first, second) == (USER_SENDER, world.ids[S])
    finally:
        world.close()

def test_i_6_the_program_found_at_seed_102_refines_the_model() -> None:
    """The program the machine found, shrunk, replayed rule by rule with what each rule
    drew (its writer to P paused at its temp write while C answered P, and dispatches
    killed at their creation points beside it), teardown included."""
    m = RefinementMachine()
    d: Any = Drawn
    try:
        m.operator_prompts(d(4, 1, ["answer", "dispatch", "message", "dispatch"], 1,
                             ["dispatch", "dispatch", "dispatch", "answer"], []))
        m.step(d(0, 9))
        m.operator_messages(d(0, False, False))
        m.step(d(1, 6))
        m.killed_dispatch(d(Point.DISPATCH_PREPARED))
        m.operator_messages(d(0, False, False))
        m.step(d(2, 3))
        m.step(d(2, 11))
        m.operator_messages(d(0, True, 0, ("launch", 0), 2, False))
        m.step(d(3, 10))
        m.operator_messages(d(0, False, False))
        m.operator_messages(d(0, True, 0, ("driver", 3), 2, False))
        m.operator_messages(d(1, False, False))
        m.operator_messages(d(1, True, 1, ("launch", 2), 1, False))
        m.step(d(5, 5))
        m.operator_messages(d(0, False, False))
        m.step(d(10, 7))
        m.operator_messages(d(0, True, 0, ("launch", 0), 0, ("launch", 0), 0, ("driver", 3), 0,
                              False))
        m.step(d(8, 8))
        m.step(d(8, 9))
        m.step(d(8, 12))
        m.killed_dispatch(d(Point.DEPOSIT_LISTED))
        m.operator_messages(d(0, True, 0, ("driver", 3), 0, False))
        m.operator_messages(d(1, False, False))
        m.killed_dispatch(d(Point.DEPOSIT_LISTED))
        m.step(d(3, 4))
        m.step(d(8, 8))
        m.killed_dispatch(d(Point.DEPOSIT_PUBLISHED))
        m.step(d(3, 12))
        m.killed_dispatch(d(Point.DEPOSIT_LISTED))
        m.operator_messages(d(0, False, False))
        m.step(d(16, 2))
        m.step(d(7, 7))
        m.killed_dispatch(d(Point.DISPATCH_PREPARED))
        m.operator_messages(d(1, True, 1, ("driver", 8), 0, False))
        m.step(d(8, 9))
        m.step(d(16, 9))
        m.operator_messages(d(1, True, 1, ("driver", 8), 2, False))
        m.killed_dispatch(d(Point.DEPOSIT_PUBLISHED))
        m.operator_messages(d(1, True, False))
        teardown_checks(m)
    finally:
        discard(m)
