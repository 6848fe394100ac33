"""The one decision both front ends of the kit's model use (kit_model.decide), on the
neutral conversation; the command model's JSON is a thin shell around it."""

from __future__ import annotations

import pytest
from lernie_stateful.conform import kit_model
from lernie_stateful.conform.kit_model import Call, Decision, Turn, decide

from tests.support.model_talk import delivered


def user(*bodies: str) -> Turn:
    return Turn("user", tuple(delivered(b) for b in bodies))


def test_a_script_runs_one_call_per_answer_and_counts_calls_since_its_prompt() -> None:
    prompt = user("@message s hi\n@dispatch name=c go\nend")
    first = decide([prompt])
    assert first.call == Call("message", {"agent": "s", "content": "hi"}, "kit-1")
    second = decide([prompt, Turn("assistant", calls=1), Turn("tool")])
    assert second.call == Call("dispatch", {"name": "c", "goal": "go"}, "kit-2")
    third = decide([prompt, Turn("assistant", calls=1), Turn("tool"),
                    Turn("assistant", calls=1), Turn("tool")])
    assert third == Decision(text="kit reply: end", prompt=prompt.texts[0])


def test_silent_sleep_and_fail_are_directives_and_not_the_answer_line() -> None:
    prompt = user("@sleep 2.5\n@fail 529 3\n@silent\nhidden")
    assert decide([prompt]) == Decision(text="", sleep=2.5, fail=(529, 3),
                                        prompt=prompt.texts[0])
    assert decide([user("@fail 429\nx")]).fail == (429, 1)


@pytest.mark.parametrize("line", ["@fail", "@fail 200", "@fail 600 1", "@fail 429 two",
                                  "@silent please", "@sleep soon"])
def test_a_directive_that_does_not_parse_is_ignored(line: str) -> None:
    decision = decide([user(f"{line}\nbody")])
    assert decision.fail is None and decision.sleep == 0 and decision.text == "kit reply: body"


def test_only_results_are_noted_and_nothing_is_done() -> None:
    result = Turn("user", (delivered("answer", "kid", result=True),))
    assert decide([user("p"), Turn("assistant"), result]).text == "kit noted"
    assert decide([user("p"), Turn("assistant")]) == Decision(text="kit done")
    assert decide([]) == Decision(text="kit done")


def test_the_command_model_answers_silent_with_an_empty_content_array() -> None:
    request: dict[str, object] = {"messages": [{"role": "user", "content": [
        {"type": "text", "text": delivered("@silent\nshh")}]}]}
    assert kit_model.answer(request) == {"content": []}
