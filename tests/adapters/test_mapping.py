"""R-STEP-8 mapping, in process: a transcript with every block kind, both ways.

The oracle (``dialects.expected_messages``) is checked against the adapters and
shown to catch a wrong mapping (planted mutations of the adapter's output).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from lernie_ref.adapters import ModelRequest, anthropic, openai
from lernie_ref.core.entry import render_model_entry, render_tool_entry, tool_result_block
from lernie_ref.core.errors import ModelError
from lernie_ref.substrate.config import ProviderSettings
from lernie_ref.substrate.transcript import load, wire_messages
from tests.support.dialects import DIALECTS, Dialect, transcript_files

THINK = {"type": "thinking", "text": "let me see", "signature": "sig-1"}
USE = {"type": "tool_use", "id": "t1", "name": "message", "input": {"agent": "b", "content": "hi"}}


def _transcript(tmp_path: Path) -> Path:
    folder = tmp_path / "messages"
    folder.mkdir()
    (folder / "001-user.md").write_bytes(b"---\nfrom: user\n---\nfirst")
    (folder / "002-user.md").write_bytes(b"---\nfrom: user\n---\nsecond")
    (folder / "003-anthropic.json").write_bytes(
        render_model_entry([THINK, {"type": "text", "text": "on it"}, USE], None)
    )
    (folder / "004-tool.json").write_bytes(
        render_tool_entry(tool_result_block("t1", '{"status":"deposited"}', False))
    )
    (folder / "005-b.md").write_bytes(b"---\nfrom: b\nepitaph: final-response\n---\nthanks")
    return tmp_path


def _body(dialect: Dialect, worktree: Path) -> dict[str, object]:
    entries = load(worktree)
    request = ModelRequest("a", entries, wire_messages(entries))
    settings = ProviderSettings(model="m")
    module = anthropic if dialect.name == "anthropic" else openai
    return module.request_body(request, settings, "sys")


@pytest.mark.parametrize("dialect", DIALECTS, ids=[d.name for d in DIALECTS])
def test_r_step_8_request_matches_the_oracle_and_the_oracle_catches_mutants(
    tmp_path: Path, dialect: Dialect
) -> None:
    worktree = _transcript(tmp_path)
    body = _body(dialect, worktree)
    messages = dialect.conversation(body)
    expected = dialect.expected_messages(transcript_files(worktree))
    assert messages == expected
    mutants = []
    swapped = copy.deepcopy(messages)
    swapped[0], swapped[1] = swapped[1], swapped[0]
    mutants.append(swapped)
    dropped = copy.deepcopy(messages)
    content = dropped[1].get("content")
    if isinstance(content, list):
        content.pop(0)  # the thinking block
    else:
        dropped[1]["tool_calls"] = []
    mutants.append(dropped)
    mutants.append(messages[:-1])
    for mutant in mutants:
        assert mutant != expected


def test_r_step_8_anthropic_alternates_and_round_trips_thinking(tmp_path: Path) -> None:
    body = _body(DIALECTS[0], _transcript(tmp_path))
    messages = body["messages"]
    assert isinstance(messages, list)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][0] == {
        "type": "thinking",
        "thinking": "let me see",
        "signature": "sig-1",
    }
    assert [b["type"] for b in messages[2]["content"]] == ["tool_result", "text"]
    reply = anthropic.parse_message(
        {
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s2"},
                {"type": "text", "text": "done"},
            ],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 1, "service_tier": "standard"},
        },
        "req_1",
        {"t1"},
    )
    assert reply.blocks == [
        {"type": "thinking", "text": "hmm", "signature": "s2"},
        {"type": "text", "text": "done"},
    ]
    assert reply.usage == {"input_tokens": 3, "output_tokens": 1}


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"content": [], "stop_reason": "refusal"}, "refused"),
        ({"content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]}, "already used"),
        ({"content": [{"type": "server_tool_use", "id": "s"}]}, "not a content block"),
        (
            {
                "content": [{"type": "tool_use", "id": "t9", "name": "x", "input": {}}],
                "stop_reason": "max_tokens",
            },
            "cut off at max_tokens",
        ),
    ],
)
def test_r_step_8_anthropic_answers_that_are_not_a_step_fail(
    answer: dict[str, object], message: str
) -> None:
    with pytest.raises(ModelError, match=message) as caught:
        anthropic.parse_message(answer, "req_7", {"t1"})
    assert str(caught.value).startswith("anthropic reply (request id req_7): ")


def _choice(message: dict[str, object], finish: str = "stop") -> dict[str, object]:
    return {"id": "chatcmpl-9", "choices": [{"message": message, "finish_reason": finish}]}


def test_r_step_8_openai_answers_ids_arguments_refusals() -> None:
    call = {"id": "t1", "type": "function", "function": {"name": "dispatch", "arguments": "{}"}}
    reply = openai.parse_completion(
        _choice({"content": None, "reasoning_content": "r", "tool_calls": [call, call]}),
        None,
        {"t1"},
    )
    ids = [b["id"] for b in reply.blocks if b["type"] == "tool_use"]
    assert ids == ["call-2", "call-3"]  # reused ids replaced, unique in the transcript
    assert reply.blocks[0] == {"type": "thinking", "text": "r", "signature": None}
    bad = {**call, "function": {"name": "dispatch", "arguments": "[1]"}}
    with pytest.raises(ModelError, match="not a JSON object"):
        openai.parse_completion(_choice({"content": None, "tool_calls": [bad]}), "r1", set())
    with pytest.raises(ModelError, match=r"request id chatcmpl-9\): the model refused"):
        openai.parse_completion(_choice({"content": None, "refusal": "no"}), None, set())
    with pytest.raises(ModelError, match="content_filter"):
        openai.parse_completion(_choice({"content": "x"}, "content_filter"), "r1", set())
