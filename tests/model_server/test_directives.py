"""The kit's model server plays every directive over both APIs, streamed and not, as the
official ``anthropic`` and ``openai`` client libraries see it (docs/model-server.md)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import anthropic
import openai
import pytest
from lernie_stateful.conform.adapter import AdapterError, parse_tools
from lernie_stateful.conform.model_server import ModelServer

from tests.support.model_talk import Step, Talk, delivered

MODES = [("anthropic", False), ("anthropic", True), ("openai", False), ("openai", True)]
IDS = ["anthropic", "anthropic-stream", "openai", "openai-stream"]


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as s:
        yield s


@pytest.fixture(params=MODES, ids=IDS)
def talk(request: pytest.FixtureRequest, server: ModelServer) -> Talk:
    api, stream = request.param
    return Talk(server, api, stream)


def test_a_prompt_without_directives_is_answered_with_its_first_line(talk: Talk) -> None:
    talk.deliver(delivered("hello there\nsecond line"))
    assert talk.run() == [Step(text="kit reply: hello there")]


def test_message_calls_the_message_tool_then_answers(talk: Talk) -> None:
    talk.deliver(delivered("@message bob please check the sum of all these numbers\ntotal"))
    assert talk.run() == [
        Step(name="message", input={"agent": "bob",
                                    "content": "please check the sum of all these numbers"},
             id="kit-1"),
        Step(text="kit reply: total")]


def test_dispatch_with_and_without_a_name(talk: Talk) -> None:
    talk.deliver(delivered("@dispatch name=kid build the thing\n@dispatch other work\nlead"))
    assert talk.run() == [
        Step(name="dispatch", input={"goal": "build the thing", "name": "kid"}, id="kit-1"),
        Step(name="dispatch", input={"goal": "other work"}, id="kit-2"),
        Step(text="kit reply: lead")]


def test_tools_makes_that_many_noop_calls(talk: Talk) -> None:
    talk.deliver(delivered("@tools 3\nbusy"))
    steps = talk.run()
    assert [(s.name, s.input) for s in steps] == [("noop", {})] * 3 + [(None, {})]
    assert [s.id for s in steps[:3]] == ["kit-1", "kit-2", "kit-3"]
    assert steps[-1].text == "kit reply: busy"


def test_silent_answers_with_no_text(talk: Talk) -> None:
    talk.deliver(delivered("@silent\nquiet please"))
    assert talk.run() == [Step(text="")]


def test_directives_run_in_order_and_a_new_prompt_starts_its_own_script(talk: Talk) -> None:
    talk.deliver(delivered("@message a one\n@tools 1\nfirst"))
    assert [s.name for s in talk.run()] == ["message", "noop", None]
    talk.deliver(delivered("@dispatch name=c two\nsecond"))
    assert talk.run() == [Step(name="dispatch", input={"goal": "two", "name": "c"},
                               id="kit-3"),
                          Step(text="kit reply: second")]


def test_results_are_noted_and_an_empty_window_is_done(talk: Talk) -> None:
    talk.deliver(delivered("hi"))
    talk.run()
    talk.deliver(delivered("the child's answer", sender="kid", result=True))
    assert talk.run() == [Step(text="kit noted")]
    assert talk.ask() == Step(text="kit done")


def test_the_newest_delivered_prompt_is_the_one_played(talk: Talk) -> None:
    """Two deliveries in one turn (the OpenAI adapter joins them into one user message): the
    newer one is the prompt, and a result after it does not hide it."""
    talk.deliver(delivered("@message x old\nolder"), delivered("@tools 1\nnewer"),
                 delivered("done", sender="kid", result=True))
    assert [s.name for s in talk.run()] == ["noop", None]
    assert talk.messages[-1]["content"] in ("kit reply: newer",
                                            [{"type": "text", "text": "kit reply: newer"}])


@pytest.mark.parametrize(("status", "anthropic_error", "openai_error"), [
    (429, anthropic.RateLimitError, openai.RateLimitError),
    (500, anthropic.InternalServerError, openai.InternalServerError),
    (529, anthropic.OverloadedError, openai.InternalServerError),
])
def test_fail_answers_the_status_n_times_then_plays_on(
        server: ModelServer, status: int, anthropic_error: type[Exception],
        openai_error: type[Exception]) -> None:
    for api, stream in MODES:
        talk = Talk(server, api, stream)
        talk.deliver(delivered(f"@fail {status} 2\n@message bob hi\nok", sender=api + str(stream)))
        error = anthropic_error if api == "anthropic" else openai_error
        for _ in range(2):
            with pytest.raises(error) as caught:
                talk.ask()
            assert getattr(caught.value, "status_code", None) == status
        assert talk.run() == [Step(name="message", input={"agent": "bob", "content": "hi"},
                                   id="kit-1"), Step(text="kit reply: ok")]
    statuses = [r.status for r in server.requests]
    assert statuses == [status, status, 200, 200] * 4


def test_a_429_then_success_through_the_clients_own_retries(server: ModelServer) -> None:
    for api in ("anthropic", "openai"):
        talk = Talk(server, api, stream=False, max_retries=2)
        talk.deliver(delivered("@fail 429 1\nretry me", sender=api))
        assert talk.run() == [Step(text="kit reply: retry me")]
    assert [(r.api, r.status) for r in server.requests] == [
        ("anthropic", 429), ("anthropic", 200), ("openai", 429), ("openai", 200)]


def test_the_anthropic_errors_carry_the_api_error_types(server: ModelServer) -> None:
    talk = Talk(server, "anthropic", stream=True)
    for status, kind in ((429, "rate_limit_error"), (500, "api_error"),
                         (529, "overloaded_error")):
        talk.messages = []
        talk.deliver(delivered(f"@fail {status}\nx", sender=str(status)))
        with pytest.raises(anthropic.APIStatusError) as caught:
            talk.ask()
        assert caught.value.body == {"type": "error", "error": {
            "type": kind, "message": f"the script asks for failure 1 of 1 with HTTP {status}"}}
        assert caught.value.request_id is not None


def test_fail_counts_per_conversation(server: ModelServer) -> None:
    """Another agent's conversation with the same prompt has failures of its own."""
    first = Talk(server, "anthropic", stream=False)
    first.deliver(delivered("@fail 429\nsame"))
    with pytest.raises(anthropic.RateLimitError):
        first.ask()
    assert first.ask() == Step(text="kit reply: same")
    other = Talk(server, "anthropic", stream=False, system="soul")
    other.deliver(delivered("before", sender="someone"))
    other.run()
    other.deliver(delivered("@fail 429\nsame"))
    with pytest.raises(anthropic.RateLimitError):
        other.ask()
    assert other.ask() == Step(text="kit reply: same")


@pytest.mark.parametrize(("api", "stream"), MODES, ids=IDS)
def test_a_stop_cuts_a_sleeping_call_short(api: str, stream: bool) -> None:
    server = ModelServer().start()
    talk = Talk(server, api, stream)
    talk.deliver(delivered("@sleep 600\nslow"))
    errors: list[Exception] = []

    def ask() -> None:
        try:
            talk.ask()
        except Exception as exc:  # the connection closes without an answer
            errors.append(exc)

    caller = threading.Thread(target=ask)
    caller.start()
    while not server.busy:
        assert caller.is_alive(), errors
        threading.Event().wait(0.01)
    server.stop()
    caller.join(timeout=60)
    assert not caller.is_alive()
    assert len(errors) == 1 and isinstance(
        errors[0], (anthropic.APIConnectionError, openai.APIConnectionError))
    [record] = server.requests
    assert record.status == 0 and record.reply is None


@pytest.mark.parametrize(("api", "stream"), MODES, ids=IDS)
def test_tool_calls_take_the_names_and_inputs_of_the_tool_map(api: str, stream: bool) -> None:
    tools = parse_tools({"dispatch": {"name": "spawn", "input": {
        "role": "worker", "goal": "{goal}", "label": "{name}"}},
        "message": {"input": {"to": "{agent}", "body": "{content}"}}}, "test")
    with ModelServer(tools=tools) as server:
        talk = Talk(server, api, stream)
        talk.deliver(delivered("@dispatch a goal\n@dispatch name=n b goal\n@message p hi\nx"))
        assert [(s.name, s.input) for s in talk.run()] == [
            ("spawn", {"role": "worker", "goal": "a goal"}),
            ("spawn", {"role": "worker", "goal": "b goal", "label": "n"}),
            ("message", {"to": "p", "body": "hi"}),
            (None, {})]


@pytest.mark.parametrize(("table", "error"), [
    ({"frob": {"name": "x"}}, "unknown tool 'frob' in \\[tools\\]"),
    ({"bash": {"input": {"cmd": "{path}"}}}, "tools.bash.input uses path; the kit "
                                             "gives bash only command"),
    ({"message": {"input": {"to": "{goal}"}}}, "tools.message.input uses goal; the kit "
                                               "gives message only agent, content"),
    ({"noop": {"name": 3}}, "tools.noop must be a table with a string name"),
    ({"dispatch": {"input": {"goal": 1}}}, "tools.dispatch.input must map names to strings"),
])
def test_a_bad_tool_map_is_one_clear_error(table: dict[str, object], error: str) -> None:
    with pytest.raises(AdapterError, match="adapter test: " + error):
        parse_tools(table, "test")
