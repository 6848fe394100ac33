"""`lernie-check bugs` and `refine` as tools a person runs: a bounded shrink that never
reaches Hypothesis's own stall limit (whose abort prints "PLEASE REPORT THIS"), and each
caught bug's failing program shown one step a line, with what each step drew."""

from __future__ import annotations

import re

import pytest
from hypothesis.internal.conjecture import engine
from lernie_stateful.refine_cli import MAX_SHRINK, bugs_main, refine_main, run, steps_of
from lernie_stateful.seeded_bugs import BY_NAME


def test_the_shrink_budget_stays_below_hypothesis_own_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Hypothesis aborts a shrink that runs past its limit with a warning asking for a bug
    report; the budget here is enforced by the checker (a child process cut at the budget),
    so the limit is never reached, and a larger budget is refused."""
    assert engine.MAX_SHRINKING_SECONDS == 300
    assert MAX_SHRINK < engine.MAX_SHRINKING_SECONDS
    with pytest.raises(SystemExit) as exit_:
        bugs_main(["--shrink", str(MAX_SHRINK + 1)])
    assert exit_.value.code == 2
    assert "between 0 and" in capsys.readouterr().err


@pytest.mark.parametrize("seed", [0, 1])
def test_a_cut_shrink_replays_the_shortest_program_found(
    capfd: pytest.CaptureFixture[str], seed: int,
) -> None:
    """A budget far below what shrinking needs: the child is cut, and the program shown is
    the shortest failing one it stored, replayed here (it fails again, on the bug). Seed
    0's third program runs out of room to draw before anything fails: its teardown's
    divergence is not a failure Hypothesis stores, so the budget must not start there
    (``test_shrink_replay``)."""
    out = run(examples=40, seed=seed, steps=20, bug=BY_NAME["no-reply-debt"], shrink=0.01,
              attribute=True)
    assert out.failed and out.shrink_cut and not out.also_unpatched
    assert 0 < len(out.program) <= 20
    assert out.first_at >= 1
    assert "divergence" in out.message
    assert "PLEASE REPORT" not in "".join(capfd.readouterr())
    assert engine.MAX_SHRINKING_SECONDS == 300  # nothing patched


def test_bugs_shows_each_caught_bugs_program_one_step_a_line(
    capfd: pytest.CaptureFixture[str],
) -> None:
    assert bugs_main(["--only", "writer-never-probes", "--examples", "10", "--shrink", "5"]) == 0
    text, err = capfd.readouterr()
    assert "PLEASE REPORT" not in text + err
    lines = text.splitlines()
    row = next(line for line in lines if line.startswith("writer-never-probes"))
    assert row.split()[1] == "yes"
    steps = int(row.split()[4])
    start = lines.index("      state = RefinementMachine()")
    program = lines[start:start + steps + 2]
    assert program[-1] == "      state.teardown()"
    assert all(re.match(r" {6}state\.\w+\(", line) for line in program[1:])
    # every step says what it drew (the opening scripts, here)
    assert "script of P:" in program[1]
    assert "bugs: 1 caught of 1" in text


def test_steps_of_attaches_each_draw_to_its_step() -> None:
    notes = ["state = RefinementMachine()", "Draw 1 (step budget): 4",
             "Draw 2 (script of P): ['final']", "state.operator_prompts(data=data(...))",
             "state.settle()", "Draw 3 (agent): 1", "state.step(data=data(...))",
             "state.teardown()"]
    assert [s.split("#")[0].rstrip() for s in steps_of(notes)] == [
        "state.operator_prompts(data)", "state.settle()", "state.step(data)"]
    assert steps_of(notes)[0].endswith("# step budget: 4; script of P: ['final']")
    assert steps_of(notes)[2].endswith("# agent: 1")


def test_refine_prints_a_failing_program_to_run_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with BY_NAME["writer-never-probes"].apply():
        assert refine_main(["--examples", "5", "--shrink", "0"]) == 1
    text = capsys.readouterr().out
    assert text.startswith("refine: DIVERGENCE (example 1,")
    assert "  state = RefinementMachine()\n  state.operator_prompts(data)" in text
