"""Pure parts of the driver: counter, names, wire history, warrant, scripted model, reply JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lernie_ref.adapters import (
    ModelRequest,
    ScriptedModel,
    parse_reply,
    parse_script,
    select_model,
)
from lernie_ref.cli.log import render_entry
from lernie_ref.core.entry import (
    Entry,
    render_model_entry,
    render_tool_entry,
    text_block,
    tool_result_block,
)
from lernie_ref.core.errors import ModelError
from lernie_ref.core.warrant import Warrant, unanswered_tail, warrant_of
from lernie_ref.substrate.transcript import (
    commit_subject,
    entry_name,
    load,
    next_seq,
    wire_messages,
)

USE: dict[str, object] = {"type": "tool_use", "id": "t1", "name": "message", "input": {}}
RESULT = tool_result_block("t1", "ok", False)


def test_r_tr_2_counter_starts_at_one_and_continues_from_the_largest(tmp_path: Path) -> None:
    assert next_seq(tmp_path) == 1
    (tmp_path / "messages").mkdir()
    assert next_seq(tmp_path) == 1
    for name in ("001-user.md", "007-x.json", "+9-odd.md", "noseq.md", "12", "abc-1.md"):
        (tmp_path / "messages" / name).write_text("x")
    assert next_seq(tmp_path) == 13
    (tmp_path / "messages" / "999-tool.json").write_text("[]")
    assert next_seq(tmp_path) == 1000
    assert entry_name(1000, "user", True) == "1000-user.md"


def test_r_tr_1_3_names_and_commit_subjects() -> None:
    assert entry_name(1, "user", True) == "001-user.md"
    assert entry_name(42, "scripted", False) == "042-scripted.json"
    assert commit_subject(3, "tool", "a-b") == "transcript 003: tool [a-b]"


def _entry(seq: int, origin: str, delivered: bool, data: bytes) -> Entry[str]:
    name = entry_name(seq, origin, delivered)
    return Entry(seq, origin, delivered, name, data)


def test_r_tr_5_wire_history_roles_and_merging() -> None:
    history = [
        _entry(1, "user", True, b"---\nfrom: user\n---\nhi"),
        _entry(2, "p", True, b"more"),
        _entry(3, "scripted", False, render_model_entry([USE], None)),
        _entry(4, "tool", False, render_tool_entry(RESULT)),
    ]
    wire = wire_messages(history)
    assert [m.role for m in wire] == ["user", "assistant", "tool"]
    assert wire[0].content == [text_block("---\nfrom: user\n---\nhi"), text_block("more")]


def test_r_tr_1_load_orders_numerically_and_skips_non_entries(tmp_path: Path) -> None:
    messages = tmp_path / "messages"
    messages.mkdir()
    for name in ("1000-user.md", "002-user.md", "notes.txt", "003-.md", "x-user.md"):
        (messages / name).write_text("x")
    assert [e.name for e in load(tmp_path)] == ["002-user.md", "1000-user.md"]


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([], Warrant.NOTHING_DUE),
        ([("user", [text_block("q")])], Warrant.MODEL_CALL_DUE),
        ([("user", [text_block("q")]), ("assistant", [text_block("a")])], Warrant.NOTHING_DUE),
        ([("assistant", [USE]), ("tool", [RESULT])], Warrant.MODEL_CALL_DUE),
        ([("assistant", [USE])], Warrant.UNPAIRED),
        # bl-15f0: delivered mail after an orphan does not hide it
        ([("assistant", [USE]), ("user", [text_block("later")])], Warrant.UNPAIRED),
    ],
)
def test_r_step_3_warrant_from_the_transcript_alone(
    history: list[tuple[str, list[dict[str, object]]]], expected: Warrant
) -> None:
    assert warrant_of(history) is expected  # type: ignore[arg-type]


def test_r_step_2_open_tool_window_is_the_tail_after_the_newest_model_entry() -> None:
    two: dict[str, object] = {"type": "tool_use", "id": "t2", "name": "dispatch", "input": {}}
    assert unanswered_tail([("assistant", [USE, two])]) == ["t1", "t2"]
    assert unanswered_tail([("assistant", [USE, two]), ("tool", [RESULT])]) == ["t2"]
    assert unanswered_tail([("assistant", [USE]), ("user", [text_block("x")])]) == []
    assert unanswered_tail([("assistant", [text_block("done")])]) == []
    assert unanswered_tail([]) == []


def test_scripted_directives_parse_in_order() -> None:
    script = parse_script(
        "@dispatch name=kid build it\nplease\n  @message sib hello there\n@tools 2\n"
        "@silent\n@sleep 0.5\n@bogus x\n@tools many"
    )
    assert script.actions == (
        ("dispatch", {"name": "kid", "goal": "build it"}),
        ("message", {"agent": "sib", "content": "hello there"}),
        ("noop", {}),
        ("noop", {}),
    )
    assert script.silent and script.sleep_s == 0.5
    assert script.first_line == "please"
    assert parse_script("").first_line == ""


def _request(*items: tuple[str, bool, bytes]) -> ModelRequest:
    history = [_entry(i + 1, o, d, b) for i, (o, d, b) in enumerate(items)]
    return ModelRequest("me", history, wire_messages(history))


def _plain(sender: str, text: str) -> bytes:
    return f"---\nfrom: {sender}\ndeposited_at: 2026-07-11T00:00:00Z\n---\n{text}".encode()


def _result(sender: str, text: str) -> bytes:
    return (
        f"---\nfrom: {sender}\ndeposited_at: 2026-07-11T00:00:00Z\nepitaph: final-response\n"
        f"terminal_ref: abc\n---\n{text}"
    ).encode()


def test_scripted_model_quotes_the_prompt_and_runs_directives_one_step_each() -> None:
    model = ScriptedModel()
    plain = _request(("user", True, _plain("user", "what is up\nmore")))
    assert model.call(plain, lambda: False).blocks == [
        text_block("scripted reply to user: what is up")
    ]
    first = model.call(_request(("p", True, _plain("p", "@message b hi\ngo"))), lambda: False)
    assert first.blocks[0]["name"] == "message"
    assert first.blocks[0]["input"] == {"agent": "b", "content": "hi"}
    after = _request(
        ("p", True, _plain("p", "@message b hi\ngo")),
        ("scripted", False, render_model_entry(first.blocks, None)),
        (
            "tool",
            False,
            render_tool_entry(tool_result_block(str(first.blocks[0]["id"]), "ok", False)),
        ),
    )
    assert model.call(after, lambda: False).blocks == [text_block("scripted reply to p: go")]


def test_scripted_model_never_reruns_an_answered_prompts_directives() -> None:
    """A reply after the agent's own terminal response is acknowledged; nothing is re-sent."""
    model = ScriptedModel()
    request = _request(
        ("p", True, _plain("p", "@message b hi")),
        ("scripted", False, render_model_entry([USE], None)),
        ("tool", False, render_tool_entry(RESULT)),
        ("scripted", False, render_model_entry([text_block("done")], None)),
        ("b", True, _result("b", "thanks")),
    )
    blocks = model.call(request, lambda: False).blocks
    assert blocks == [text_block("noted final-response from b: thanks")]


def test_scripted_silent_answers_with_no_text() -> None:
    reply = ScriptedModel().call(_request(("u", True, _plain("u", "@silent"))), lambda: False)
    assert reply.blocks == []


def test_command_reply_json_both_shapes_and_validation() -> None:
    ok = parse_reply(
        b'{"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"c1","name":"message",'
        b'"input":{"agent":"a","content":"x"}}],"usage":{"output_tokens":2}}',
        [],
    )
    assert ok.usage == {"output_tokens": 2}
    assert [b["type"] for b in ok.blocks] == ["text", "tool_use"]
    assert parse_reply(b'[{"type":"text","text":"bare"}]', []).blocks == [text_block("bare")]
    for bad in (b"not json", b'{"nope":1}', b'[{"type":"image"}]', b'[{"type":"text"}]'):
        with pytest.raises(ModelError):
            parse_reply(bad, [])
    with pytest.raises(ModelError, match="already used"):
        parse_reply(b'[{"type":"tool_use","id":"t1","name":"m","input":{}}]', ["t1"])


def test_r_step_5_command_reply_with_a_lone_surrogate_is_a_model_error() -> None:
    # JSON can spell text no transcript entry or deposit can hold: one clear error, no crash.
    with pytest.raises(ModelError, match="lone surrogate"):
        parse_reply(b'[{"type":"text","text":"bad \\ud800 text"}]', [])
    with pytest.raises(ModelError, match="lone surrogate"):
        parse_reply(
            b'[{"type":"tool_use","id":"c1","name":"message",'
            b'"input":{"agent":"a","content":"\\udfff"}}]',
            [],
        )


def test_r_step_6_model_selection() -> None:
    assert select_model("scripted").model_id == "scripted"
    assert select_model("command", "echo").model_id == "command"
    with pytest.raises(Exception, match="unknown model"):
        select_model("gpt")


def test_request_json_shape() -> None:
    request = _request(("user", True, b"hello"))
    data = json.loads(json.dumps(request.to_json()))
    assert data["agent"] == "me"
    assert data["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    assert [t["name"] for t in data["tools"]] == [
        "message", "dispatch", "read_file", "cd", "apply_patch"
    ]


def test_r_log_1_entries_render_readably() -> None:
    lines = render_entry(1, "user", True, _plain("user", "hello\nworld"))
    assert lines == ["001 user", "    hello", "    world"]
    result = render_entry(4, "kid", True, _result("kid", "all done"))
    assert result[0].startswith("004 kid · result final-response")
    assert result[1] == "    all done"
    call = render_entry(2, "scripted", False, render_model_entry([USE], None))
    assert call == ["002 scripted", "    → message({}) [t1]"]
    tool = render_entry(3, "tool", False, render_tool_entry(tool_result_block("t1", "boom", True)))
    assert tool == ["003 tool result error for t1", "    boom"]
    assert render_entry(5, "scripted", False, render_model_entry([], None))[1].startswith(
        "    (no text"
    )


def test_r_step_6_a_model_command_that_cannot_be_split_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="cannot be split into words"):
        select_model("command", '"unclosed')
