"""Transcript entry JSON, byte for byte (R-TR-4)."""

from __future__ import annotations

import pytest

from lernie_ref.core.entry import (
    entry_blocks,
    has_tool_use,
    render_model_entry,
    render_tool_entry,
    text_block,
    text_of,
    thinking_block,
    tool_result_block,
    tool_result_ids,
    tool_use_block,
    tool_use_ids,
)
from lernie_ref.core.errors import EntryError


def test_r_tr_4_model_entry_is_compact_without_usage() -> None:
    assert render_model_entry([text_block("Task complete.")], None) == (
        b'{"content":[{"type":"text","text":"Task complete."}]}'
    )
    assert render_model_entry([text_block("x")], {}) == b'{"content":[{"type":"text","text":"x"}]}'


def test_r_tr_4_usage_keys_are_sorted() -> None:
    usage = {"output_tokens": 2, "input_tokens": 1, "cache_read_tokens": 0}
    assert render_model_entry([], usage) == (
        b'{"content":[],"usage":{"cache_read_tokens":0,"input_tokens":1,"output_tokens":2}}'
    )


def test_r_tr_4_tool_use_input_keys_sorted_block_keys_in_field_order() -> None:
    block = tool_use_block("t1", "message", {"content": "hi", "agent": "A", "z": {"b": 1, "a": 2}})
    assert render_model_entry([block], None) == (
        b'{"content":[{"type":"tool_use","id":"t1","name":"message",'
        b'"input":{"agent":"A","content":"hi","z":{"a":2,"b":1}}}]}'
    )


def test_r_tr_4_thinking_signature_always_present() -> None:
    assert render_model_entry([thinking_block("hm")], None) == (
        b'{"content":[{"type":"thinking","text":"hm","signature":null}]}'
    )


def test_r_tr_4_tool_entry_is_a_bare_array() -> None:
    assert render_tool_entry(tool_result_block("t1", "ok", False)) == (
        b'[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}],'
        b'"is_error":false}]'
    )


def test_r_tr_4_strings_like_serde_json() -> None:
    # non-ASCII raw, control characters escaped, DEL raw
    assert render_model_entry([text_block('é"\\\n\t\x01\x7f')], None) == (
        '{"content":[{"type":"text","text":"é\\"\\\\\\n\\t\\u0001\x7f"}]}'.encode()
    )


def test_r_tr_4_reader_accepts_both_shapes_and_bare_strings() -> None:
    assert entry_blocks(b'{"content":[{"type":"text","text":"a"}],"usage":{"x":1}}') == [
        {"type": "text", "text": "a"}
    ]
    assert entry_blocks(b'[{"type":"tool_result","tool_use_id":"t","content":"x"}]') == [
        {"type": "tool_result", "tool_use_id": "t", "content": "x"}
    ]
    assert entry_blocks(b'["plain"]') == [{"type": "text", "text": "plain"}]
    round_trip = render_model_entry([text_block("a"), tool_use_block("i", "n", {})], {"k": 1})
    assert has_tool_use(entry_blocks(round_trip))


@pytest.mark.parametrize(
    "data",
    [b"", b"not json", b"{}", b'{"content":"x"}', b"42", b"[1]", b'[{"no":"type"}]', b"\xff"],
)
def test_r_tr_4_garbage_is_an_entry_error(data: bytes) -> None:
    with pytest.raises(EntryError):
        entry_blocks(data)


def test_block_queries() -> None:
    blocks = [
        text_block("a"),
        tool_use_block("t1", "x", {}),
        {"type": "tool_use", "id": "t2", "name": "y"},  # no input: not a tool use
        tool_result_block("t0", "r", True),
        text_block("b"),
    ]
    assert has_tool_use(blocks)
    assert tool_use_ids(blocks) == ["t1"]
    assert tool_result_ids(blocks) == ["t0"]
    assert text_of(blocks) == "ab"
    assert text_of([thinking_block("t")]) is None
    assert text_of([text_block("")]) is None
    assert not has_tool_use([text_block("a")])
