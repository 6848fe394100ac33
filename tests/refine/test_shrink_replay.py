"""A bounded shrink replays a program the child process stored, never nothing.

The budget of ``--shrink`` starts at the run's first failure. Hypothesis abandons an
example that runs out of room to draw (its ``StopTest``, an overrun): whatever the
teardown raises then, Hypothesis raises the ``StopTest`` again in its place and stores
nothing. Counting such a teardown as the first failure started the budget before any
failing program was stored; a child cut then left nothing to replay, and the parent
reported the run as non-deterministic (seed 0 of ``no-reply-debt``, whose third program
overruns, in ``test_bugs_cli``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import strategies as st
from hypothesis.errors import StopTest
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule
from lernie_stateful.refine_cli import _FailuresOnly, run
from lernie_stateful.refinement import Divergence, RefinementMachine
from lernie_stateful.seeded_bugs import BY_NAME

from tests.support.scenarios import crash_in_the_delivery_window

VERDICT = "the teardown's verdict"


def _room_or_not(log: Path) -> type[RuleBasedStateMachine]:
    """A machine whose every example fails in its teardown; an example that draws "no
    room" first draws more than Hypothesis's buffer holds (8 KiB), so Hypothesis abandons
    it. Each example writes what it drew to ``log`` (1: room), the oracle of which example
    is the first that fails."""

    class RoomOrNot(RuleBasedStateMachine):
        @initialize(data=st.data())
        def begin(self, data: st.DataObject) -> None:
            room = data.draw(st.booleans(), label="room")
            with log.open("a") as f:
                f.write("1" if room else "0")
            if not room:
                data.draw(st.binary(min_size=10_000, max_size=10_000))

        @rule()
        def idle(self) -> None:
            pass

        def teardown(self) -> None:
            raise AssertionError(VERDICT)

    return RoomOrNot


@pytest.mark.parametrize("shrink", [0, 0.01, 60])
def test_an_abandoned_example_is_not_the_first_failure(tmp_path: Path, shrink: float) -> None:
    """Hypothesis's first example, the simplest (no room), overruns and its teardown
    raises: the run's first failure is the first example with room, the one Hypothesis
    stores; and the program shown, in process, replayed from a child cut at once, or
    shrunk to the end, is a failing one."""
    log = tmp_path / "drawn"
    out = run(examples=10, seed=0, steps=2, shrink=shrink, machine=_room_or_not(log))
    drawn = log.read_text()
    assert drawn.startswith("0") and "1" in drawn
    assert out.failed and out.message == VERDICT
    assert out.first_at == drawn.index("1") + 1
    assert out.program[0].endswith("# room: True")


def test_a_kill_inside_a_shrink_step_leaves_a_program_to_replay(tmp_path: Path) -> None:
    """A shrink step is two writes: Hypothesis moves the best program so far out of the
    test's key, then saves the shorter one. A child killed between the two still leaves
    the longer one; once the shorter is saved, it alone is replayed."""
    db = _FailuresOnly(str(tmp_path / "db"))
    key = b"the test"
    db.save(key, b"long")
    db.move(key, key + b".secondary", b"long")
    assert set(db.fetch(key)) == {b"long"}  # a kill here: the long one is replayed
    db.save(key, b"short")
    assert set(db.fetch(key)) == {b"short"}
    assert not set(db.fetch(key + b".secondary"))  # the private database keeps failures only


def _crashed_in_the_delivery_window(machine: RefinementMachine) -> None:
    """`lernie prompt`; its driver killed between its delivery's rename and its commit
    (the teardown's scan and run to the end must recover the stray)."""
    crash_in_the_delivery_window(machine.world)


def test_the_teardown_of_an_abandoned_example_checks_nothing() -> None:
    """The refinement machine's teardown runs the world to its end and checks what is
    left only for an example Hypothesis will judge: with its ``StopTest`` in flight, it
    only closes the world (a stray that is never recovered raises nothing), and removes
    the workspace all the same; with nothing in flight the same world diverges."""
    with BY_NAME["no-stray-recovery"].apply():
        abandoned = RefinementMachine()
        _crashed_in_the_delivery_window(abandoned)
        try:
            raise StopTest(0)
        except StopTest:
            abandoned.teardown()
        assert not Path(abandoned.world.ws.root).exists()

        judged = RefinementMachine()
        _crashed_in_the_delivery_window(judged)
        with pytest.raises(Divergence, match="recover strays"):
            judged.teardown()
        assert not Path(judged.world.ws.root).exists()
