"""Transcript entry JSON: the bytes of model and tool entries, and the one reader (R-TR-4).

Writers reproduce serde_json's compact output: no whitespace, non-ASCII kept
raw, block keys in the block's own field order, and the keys of free-form JSON
values (a tool call's ``input``, ``usage``) sorted, as a ``BTreeMap`` prints them.
The reader accepts both on-disk shapes: an object with a ``content`` array
(other keys ignored) and a bare array; a bare string element reads as text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from lernie_ref.core.errors import EntryError

Block = dict[str, object]

# Keys whose values are free-form JSON (serde_json::Value): printed with sorted keys.
_FREE_FORM = frozenset({"input"})


def _dump(value: object, *, sort: bool) -> str:
    """Compact JSON; ``sort`` sorts object keys in this value and everything below it."""
    if isinstance(value, Mapping):
        items = sorted(value.items()) if sort else list(value.items())
        inner = ",".join(
            json.dumps(str(k), ensure_ascii=False) + ":" + _dump(v, sort=sort or k in _FREE_FORM)
            for k, v in items
        )
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_dump(v, sort=sort) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def render_model_entry(blocks: Sequence[Block], usage: Mapping[str, int] | None) -> bytes:
    """``{"content":[…]}`` plus ``,"usage":{sorted}`` when a counter was reported; no newline."""
    out = '{"content":[' + ",".join(_dump(b, sort=False) for b in blocks) + "]"
    if usage:
        out += ',"usage":' + _dump(dict(usage), sort=True)
    return _bytes(out + "}")


def render_tool_entry(block: Block) -> bytes:
    """A tool entry: a bare one-element array holding the ``tool_result`` block."""
    return _bytes("[" + _dump(block, sort=False) + "]")


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def tool_use_block(block_id: str, name: str, input: object) -> Block:
    return {"type": "tool_use", "id": block_id, "name": name, "input": input}


def tool_result_block(tool_use_id: str, text: str, is_error: bool) -> Block:
    """The tool result the harness writes: one text block of content."""
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": [text_block(text)],
        "is_error": is_error,
    }


def thinking_block(text: str, signature: str | None = None) -> Block:
    """``signature`` is always written, as ``null`` when absent."""
    return {"type": "thinking", "text": text, "signature": signature}


def entry_blocks(data: bytes) -> list[Block]:
    """Read an entry's blocks; :class:`EntryError` on anything that is not entry JSON."""
    try:
        parsed: object = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EntryError(f"transcript entry is not JSON: {exc}") from None
    if isinstance(parsed, dict) and isinstance(parsed.get("content"), list):
        items: list[object] = parsed["content"]
    elif isinstance(parsed, list):
        items = parsed
    else:
        raise EntryError('transcript entry is neither {"content":[…]} nor an array of blocks')
    blocks: list[Block] = []
    for item in items:
        if isinstance(item, str):
            blocks.append(text_block(item))
        elif isinstance(item, dict) and isinstance(item.get("type"), str):
            blocks.append({str(k): v for k, v in item.items()})
        else:
            raise EntryError(
                f"transcript entry holds a block that is not a content block: {item!r}"
            )
    return blocks


def _is_tool_use(block: Block) -> bool:
    return (
        block.get("type") == "tool_use"
        and isinstance(block.get("id"), str)
        and isinstance(block.get("name"), str)
        and "input" in block
    )


def has_tool_use(blocks: Sequence[Block]) -> bool:
    """A model entry is a terminal response iff this is false (R-DEBT-2, R-STEP-4)."""
    return any(_is_tool_use(b) for b in blocks)


def tool_use_ids(blocks: Sequence[Block]) -> list[str]:
    return [str(b["id"]) for b in blocks if _is_tool_use(b)]


def tool_result_ids(blocks: Sequence[Block]) -> list[str]:
    return [
        str(b["tool_use_id"])
        for b in blocks
        if b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)
    ]


def text_of(blocks: Sequence[Block]) -> str | None:
    """Every text block's text concatenated with no separator; ``None`` if that is empty."""
    text = "".join(
        str(b["text"]) for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
    )
    return text or None
