"""Outcome conformance (deliverable 2 of the conformance kit): programs of operator inputs run
through an implementation's command line, whose final state must be one the model reaches.

The search and the report are tested on their own (fast); the reference passes the
regression set and a few generated programs as a subprocess CLI; seeded-bug builds fail it
with a readable report (the program, the implementation's state, the nearest model
outcome, the difference).
"""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path

import pytest
from lernie_stateful.conform import kit_model
from lernie_stateful.conform.adapter import load
from lernie_stateful.conform.outcome import (
    Input,
    Program,
    ProgramError,
    Run,
    allowances,
    check_program,
    judge,
    load_programs,
    programs,
    reachable,
    regression_programs,
    run_program,
)

from tests.support.runners import CHECK_CLI


def _program(pid: str) -> Program:
    [p] = [p for p in regression_programs() if p.id == pid]
    return p


def test_r_rel_1_every_model_outcome_of_mail_during_a_stopped_call_delivers_it() -> None:
    search = reachable(_program("mail-during-a-stopped-call-is-delivered"))
    assert search.complete and search.outcomes
    for outcome in search.outcomes:
        (name, (delivered, pending, *_rest)), = outcome
        assert name == "P" and delivered == (("user", "plain"),) * 2 and pending == ()


def test_r_debt_4_the_model_never_answers_a_reply_to_a_reply() -> None:
    search = reachable(_program("a-child-answers-and-a-sibling-reply-is-not-answered-again"))
    assert search.complete
    answers = {dict(outcome)["P"][0].count(("C", "final-response"))
               for outcome in search.outcomes}
    assert answers == {0, 1}  # C answers P once (none: the dispatch call failed)


def test_an_outcome_the_model_cannot_reach_is_reported_with_the_nearest_one() -> None:
    p = _program("mail-during-a-stopped-call-is-delivered")
    search = reachable(p)
    lost = (("P", ((("user", "plain"),), (("user", "plain"),), 0, True, 0, False, True)),)
    verdict = judge(p, Run(lost, [], []), search)
    assert not verdict.passed and not verdict.inconclusive
    text = verdict.text
    assert text.startswith("mail-during-a-stopped-call-is-delivered: the implementation's "
                           "final state is not one the model reaches")
    assert "  message P 'later' after 0.5s" in text
    assert "implementation's final state:\n    P: delivered [user:plain]; pending " \
           "[user:plain]; answers=0; work due; parked@tip" in text
    assert "nearest model outcome:\n    P: delivered [2×user:plain]; pending [-]" in text
    assert text.endswith("difference:\n    P delivered: missing user:plain\n"
                         "    P pending: extra user:plain")
    reached = judge(p, Run(next(iter(search.outcomes)), [], []), search)
    assert reached.passed and reached.text == ""


def test_a_finding_of_the_run_fails_the_program_whatever_its_state() -> None:
    p = _program("mail-during-a-stopped-call-is-delivered")
    search = reachable(p)
    verdict = judge(p, Run(next(iter(search.outcomes)), ["end of program: no quiescence "
                                                         "after 60s"], []), search)
    assert not verdict.passed
    assert verdict.headline().endswith("no quiescence after 60s")


def test_scripts_bound_the_model_per_agent_following_a_message_to_its_reader() -> None:
    p = Program("x", (Input("prompt", "P", "@message S @message P pong\n@tools 2\nping"),
                      Input("prompt", "S", "@dispatch name=C hi")))
    noop, to_p, to_c, to_s, dispatch = range(5)
    allow = allowances(p)
    assert allow[0][noop] == 2 and allow[0][to_s] == 1 and allow[0][dispatch] == 0
    assert allow[2][to_p] == 1  # S runs the directive P's message carries
    assert allow[2][dispatch] == 1 and allow[2][to_c] == 0


@pytest.mark.parametrize(("steps", "error"), [
    ([Input("message", "P", "hi")], "message to P before its prompt"),
    ([Input("prompt", "C", "hi")], "prompt creates a root once"),
    ([Input("prompt", "P", "x"), Input("launch", "P")], "unknown verb 'launch'"),
    ([Input("prompt", "P", "@dispatch a\n@dispatch b")], "one @dispatch at most"),
    ([Input("prompt", "Q", "x")], "agent must be one of P, C, S"),
])
def test_a_bad_program_is_one_clear_error(steps: list[Input], error: str) -> None:
    with pytest.raises(ProgramError, match=error):
        check_program(Program("bad", tuple(steps)))


def test_generated_programs_are_valid_reproducible_and_round_trip_as_data() -> None:
    drawn = list(programs(6, seed=5))
    assert [p.inputs for p in drawn] == [p.inputs for p in programs(6, seed=5)]
    assert len({p.inputs for p in drawn}) > 1
    assert list(programs(0, seed=5)) == []
    for p in drawn:
        check_program(p)
        assert load_programs(p.as_toml()) == [p]


def _user(text: str, result: bool = False) -> dict[str, object]:
    head = "from: x\n" + ("epitaph: final-response\nterminal_ref: abc\n" if result else "")
    return {"role": "user", "content": [{"type": "text", "text": f"---\n{head}---\n{text}"}]}


def _call(name: str) -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": name, "name": name,
                                              "input": {}}]}


def test_the_kit_model_runs_the_scripted_directives_one_call_at_a_time() -> None:
    prompt = _user("@message S hello there\n@tools 1\n@dispatch name=C build\ntitle line")
    first = kit_model.answer({"messages": [prompt]})
    assert first["content"] == [{"type": "tool_use", "id": "kit-1", "name": "message",
                                 "input": {"agent": "S", "content": "hello there"}}]
    tool = {"role": "tool", "content": []}
    second = kit_model.answer({"messages": [prompt, _call("a"), tool]})
    assert second["content"] == [{"type": "tool_use", "id": "kit-2", "name": "noop",
                                  "input": {}}]
    third = kit_model.answer({"messages": [prompt, _call("a"), tool, _call("b"), tool]})
    assert third["content"] == [{"type": "tool_use", "id": "kit-3", "name": "dispatch",
                                 "input": {"name": "C", "goal": "build"}}]
    done = [prompt, _call("a"), tool, _call("b"), tool, _call("c"), tool]
    assert kit_model.answer({"messages": done})["content"] == [
        {"type": "text", "text": "kit reply: title line"}]
    answered = {"role": "assistant", "content": [{"type": "text", "text": "kit reply"}]}
    assert kit_model.answer({"messages": [*done, answered, _user("ok", result=True)]})[
        "content"] == [{"type": "text", "text": "kit noted"}]


def test_the_kit_model_scripts_another_implementation_like_the_scripted_one(
        tmp_path: Path) -> None:
    """The reference driven through its command model with the kit's model: a dispatch
    script runs, and the disk reads as the model's observation (P's answer from C).

    Two interleavings are legal: C's result reaches P after P's answer (P answers it
    again: two answers) or before it, at the step boundary after the dispatch's tool
    result (one answer covers both). Which one happens depends on the scheduler."""
    text = resources.files("lernie_stateful.conform").joinpath(
        "adapters", "lernie.toml").read_text(encoding="utf-8")
    adapter_file = tmp_path / "kit.toml"
    adapter_file.write_text(text.replace('MODEL = "scripted"',
                                         'MODEL = "command"\nMODEL_COMMAND = "{kit_model}"'))
    p = Program("kit", (Input("prompt", "P", "@dispatch name=C build it\nlead"),))
    run = run_program(p, load(str(adapter_file)), tmp_path / "ws")
    assert run.findings == []
    p_after, p_before = (((("C", "final-response"), ("user", "plain")), (), answers, False, 0,
                          False, False) for answers in (2, 1))
    c_obs = ((("P", "plain"),), (), 1, False, 0, True, False)
    assert dict(run.observation) in ({"P": p_after, "C": c_obs}, {"P": p_before, "C": c_obs})
    assert run.observation in reachable(p).outcomes


def test_r_scan_10_a_kill_finds_the_holder_and_the_scan_revives_the_root(
        tmp_path: Path) -> None:
    """The kill reads the lock holder from the kernel; the revived root answers its prompt."""
    p = Program("kill", (Input("prompt", "P", "@sleep 4\nslow"), Input("kill", "P", after=1.0),
                         Input("wait"), Input("scan")))
    run = run_program(p, load("lernie"), tmp_path / "ws")
    assert run.findings == [], run
    assert len(run.killed) == 1 and run.killed[0].startswith("P's holder (pid "), run
    assert dict(run.observation) == {"P": ((("user", "plain"),), (), 1, False, 0, False, False)}
    assert run.observation in reachable(p).outcomes


def _conform(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CHECK_CLI, "conform", "--impl", "lernie", "--outcome-only", *args],
                          capture_output=True, text=True, timeout=900, check=False)


def test_the_reference_reaches_only_model_outcomes_cli() -> None:
    """The regression set and two generated programs: 100% as a subprocess CLI."""
    proc = _conform("--examples", "2", "--seed", "1", "--json")
    card = json.loads(proc.stdout)
    assert proc.returncode == 0, card
    assert card["areas"]["outcome"]["failed"] == 0
    assert card["areas"]["outcome"]["passed"] == len(regression_programs()) + 2 - \
        card["areas"]["outcome"]["n/a"]
    assert card["percent"] == 100.0


def _one_program_file(tmp_path: Path, pid: str) -> Path:
    path = tmp_path / "one.toml"
    path.write_text(_program(pid).as_toml())
    return path


@pytest.mark.parametrize(("bug", "pid", "difference"), [
    ("no-reply-debt", "a-child-answers-and-a-sibling-reply-is-not-answered-again",
     "    P delivered: extra C:final-response"),
    ("no-release-rule", "mail-during-a-stopped-call-is-delivered",
     "    P pending: extra user:plain"),
])
def test_seeded_bug_builds_fail_the_outcome_check_readably(tmp_path: Path, bug: str, pid: str,
                                                           difference: str) -> None:
    proc = _conform("--seeded-bug", bug, "--programs", str(_one_program_file(tmp_path, pid)),
                    "--show-program")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("outcome "))
    assert row.split()[1:3] == ["0", "1"]
    assert f"outcome:{pid}: the implementation's final state is not one the model" in row
    assert "; difference: " in row and difference.strip() in row.split("; difference: ")[1]
    assert f"program {pid}:" in proc.stderr
    for part in ("implementation's final state:", "nearest model outcome:", "difference:",
                 difference):
        assert part in proc.stderr


@pytest.mark.slow
def test_racing_writers_of_the_overwriting_deposit_build_lose_a_message(tmp_path: Path) -> None:
    """Needs a real race (two writers list before either publishes): several tries."""
    path = _one_program_file(tmp_path, "racing-writers-lose-nothing")
    for _ in range(5):
        proc = _conform("--seeded-bug", "overwriting-deposit", "--programs", str(path),
                        "--show-program")
        if proc.returncode == 1:
            assert "P delivered: missing user:plain" in proc.stderr
            return
    pytest.fail("five runs of racing writers lost nothing")
