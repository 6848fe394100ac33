"""The server's life and records: loopback only, stops by itself, records every request,
its command line (``lernie-check serve-model``)."""

from __future__ import annotations

import json
import signal
import socket
import struct
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import anthropic
import openai
import pytest
from lernie_stateful.conform.adapter import load
from lernie_stateful.conform.model_server import HOST, ModelServer, served, split_delivered
from openai.types.chat import ChatCompletionMessageFunctionToolCall

from tests.support.model_talk import AGENT, Address, Step, Talk, delivered
from tests.support.runners import CHECK_CLI

SERVE = [*CHECK_CLI, "serve-model"]


def test_every_request_is_recorded_with_its_agent_tools_messages_and_status(
        tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    with ModelServer(record=record) as server:
        named = Talk(server, "anthropic", stream=True)
        named.deliver(delivered("@fail 429\n@message b hi\nx"))
        with pytest.raises(anthropic.RateLimitError):
            named.ask()
        named.run()
        soul = Talk(server, "openai", stream=False, system="you are a worker")
        soul.deliver(delivered("first words", sender="boss"))
        soul.run()
        soul.deliver(delivered("again", sender="boss"))
        soul.run()
        served_list = server.requests
    assert [(r.seq, r.api, r.stream, r.status) for r in served_list] == [
        (1, "anthropic", True, 429), (2, "anthropic", True, 200),
        (3, "anthropic", True, 200), (4, "openai", False, 200), (5, "openai", False, 200)]
    # The reference's system prompt names the agent; otherwise the first message keys it.
    assert [r.agent for r in served_list[:3]] == [AGENT] * 3
    assert served_list[3].agent == served_list[4].agent
    assert served_list[3].agent.startswith("conv-") and len(served_list[3].agent) == 17
    assert all(r.tools == ("message", "dispatch") for r in served_list)
    assert served_list[0].reply is None
    assert served_list[1].reply == {"type": "tool_use", "id": "kit-1", "name": "message",
                                    "input": {"agent": "b", "content": "hi"}}
    assert served_list[2].reply == {"type": "text", "text": "kit reply: x"}
    assert served_list[4].messages == tuple(soul.messages[:-1])
    assert served_list[4].system == "you are a worker"
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert lines == [r.as_json() for r in served_list]


def test_a_conversation_key_tells_agents_apart() -> None:
    with ModelServer() as server:
        for sender in ("a", "b"):
            talk = Talk(server, "anthropic", stream=False, system="soul")
            talk.deliver(delivered("same words", sender=sender))
            talk.run()
        first, second = server.requests
    assert first.agent != second.agent


def test_delivered_messages_joined_by_blank_lines_are_split_at_frontmatter() -> None:
    one = delivered("body one\n\nwith a blank line\n\n---\nnot: frontmatter")
    two = delivered("two", sender="kid", result=True)
    assert split_delivered(one + "\n\n" + two) == [one, two]
    assert split_delivered("plain text") == ["plain text"]


def test_it_binds_the_loopback_interface_only() -> None:
    with ModelServer() as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}"
        assert server.openai_url == server.base_url + "/v1"
        assert server._httpd.socket.getsockname()[0] == "127.0.0.1"


def test_it_stops_by_itself_when_idle_or_past_its_lifetime() -> None:
    idle = ModelServer(idle=2.0)  # bound, not serving yet: the client is built first
    talk = Talk(idle, "anthropic", stream=False)
    talk.deliver(delivered("hi"))
    idle.start()
    talk.ask()  # its connection stays open (keep-alive) ...
    assert idle.wait(60) and idle.stopped
    with pytest.raises(anthropic.APIConnectionError):  # ... and is not served after the stop
        talk.ask()
    with pytest.raises(anthropic.APIConnectionError):
        Talk(idle, "anthropic", stream=False).ask()
    old = ModelServer(lifetime=0.2, idle=3600).start()
    assert old.wait(60)


def test_a_client_that_resets_its_connection_prints_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The kit kills the implementations it scores, so a client may vanish mid-request: the
    server says nothing of a reset or a broken pipe, and still reports any other error."""
    with ModelServer() as server:
        client = socket.create_connection((HOST, server.port))
        client.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 99\r\n\r\n{")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # linger 0: a reset, not an orderly close
        deadline = time.monotonic() + 30
        while any(t.name.endswith("(process_request_thread)") for t in threading.enumerate()):
            assert time.monotonic() < deadline, "the request's thread never ended"
            time.sleep(0.01)
        for gone in (ConnectionResetError(104, "reset"), BrokenPipeError(32, "pipe")):
            try:
                raise gone
            except OSError:
                server._httpd.handle_error(None, (HOST, 1))
        assert capsys.readouterr().err == ""
        try:
            raise ValueError("a bug in the handler")
        except ValueError:
            server._httpd.handle_error(None, (HOST, 1))
        assert "ValueError: a bug in the handler" in capsys.readouterr().err


def test_one_api_only_answers_404_on_the_other() -> None:
    with ModelServer(api="anthropic") as server:
        talk = Talk(server, "openai", stream=False)
        talk.deliver(delivered("hi"))
        with pytest.raises(openai.NotFoundError):
            talk.ask()
        assert [(r.api, r.status) for r in server.requests] == [("-", 404)]


@pytest.mark.parametrize("body", [b"not json", b"{\"messages\": 3}", b"[]"])
def test_a_request_it_cannot_read_is_a_400_in_the_api_shape(body: bytes) -> None:
    with ModelServer() as server:
        for path, api in (("/v1/messages", "anthropic"), ("/v1/chat/completions", "openai")):
            request = urllib.request.Request(server.base_url + path, data=body,
                                             headers={"content-type": "application/json"})
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(request, timeout=20)
            assert caught.value.code == 400
            answer = json.loads(caught.value.read())
            error = answer["error"]
            assert error["type"] == "invalid_request_error"
            assert error["message"].startswith("cannot read the request: ")
            assert (answer.get("type") == "error") == (api == "anthropic")


def test_the_kit_runs_a_server_per_case_and_fills_in_its_address(tmp_path: Path) -> None:
    adapter = load("lernie-openai")
    assert adapter.server_api == "openai"
    assert adapter.env({}, {})["OPENAI_BASE_URL"] == "{model_url}/v1"  # no server yet
    record = tmp_path / "requests.jsonl"
    with served(adapter, record) as live:
        env = live.env({}, {})
        url = env["OPENAI_BASE_URL"]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        assert env["LERNIE_MODEL"] == "openai"
        talk = Talk(Address(url.removesuffix("/v1")), "openai", stream=False)
        talk.deliver(delivered("through the kit"))
        assert talk.run() == [Step(text="kit reply: through the kit")]
    assert json.loads(record.read_text())["reply"]["text"] == "kit reply: through the kit"
    with served(load("lernie")) as same:  # no [model_server]: nothing started
        assert same == load("lernie")


def test_the_command_line_serves_until_terminated(tmp_path: Path) -> None:
    tools = tmp_path / "adapter.toml"
    tools.write_text('[tools]\ndispatch = { name = "dispatch", input = '
                     '{ role = "worker", goal = "{goal}" } }\n')
    record = tmp_path / "requests.jsonl"
    proc = subprocess.Popen([*SERVE, "--api", "openai", "--tools-map", str(tools),
                             "--record", str(record), "--lifetime", "300"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        answer = client.chat.completions.create(model="kit", messages=[
            {"role": "user", "content": delivered("@dispatch name=k build\nlead")}])
        [call] = answer.choices[0].message.tool_calls or []
        assert isinstance(call, ChatCompletionMessageFunctionToolCall)
        assert json.loads(call.function.arguments) == {"role": "worker", "goal": "build"}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None and proc.stderr.read() == ""
    assert [json.loads(line)["status"] for line in record.read_text().splitlines()] == [200]


def test_the_command_line_stops_by_itself_when_idle() -> None:
    proc = subprocess.run([*SERVE, "--idle", "0.3"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0 and proc.stdout.startswith("http://127.0.0.1:")


def test_the_command_line_help_and_its_errors(tmp_path: Path) -> None:
    helped = subprocess.run([*SERVE, "--help"], capture_output=True, text=True, timeout=120,
                            check=False)
    assert helped.returncode == 0
    for option in ("--port", "--api", "--tools-map", "--record", "--lifetime", "--idle"):
        assert option in helped.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text('[tools]\nfrob = { name = "frob" }\n')
    proc = subprocess.run([*SERVE, "--tools-map", str(bad)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (f"lernie-check serve-model: adapter {bad}: unknown tool 'frob' in "
                           "[tools] (known: message, dispatch, noop, bash, read_file, cd, "
                           "apply_patch)\n")
    usage = subprocess.run([*SERVE, "--api", "grpc"], capture_output=True, text=True,
                           timeout=120, check=False)
    assert usage.returncode == 2
