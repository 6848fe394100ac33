"""``model = "anthropic"``: the Messages API through the official SDK (R-STEP-8).

The wire history (R-TR-5) becomes ``messages`` with strictly alternating roles:
delivered entries are ``user`` text, tool results are ``user`` content of type
``tool_result`` (first in their message, as the API wants), the model's entries
are ``assistant`` with ``thinking`` blocks sent back with their signatures. The
two tools are declared as they are (R-STEP-7). One non-streamed call per step;
retries, stops and errors are :mod:`lernie_ref.adapters.provider`'s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lernie_ref.adapters.protocol import ModelReply, ModelRequest
from lernie_ref.adapters.provider import (
    ProviderModel,
    check_json,
    default_system,
    invalid,
    read_usage,
)
from lernie_ref.core.entry import Block, text_block, thinking_block, tool_use_block
from lernie_ref.substrate.config import ProviderSettings
from lernie_ref.substrate.transcript import WireMessage

PROVIDER = "anthropic"
KEY_VAR = "ANTHROPIC_API_KEY"
BASE_URL_VAR = "ANTHROPIC_BASE_URL"
USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def _assistant_block(block: Block) -> Block | None:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return {"type": "text", "text": text} if isinstance(text, str) and text else None
    if kind == "tool_use":
        return {
            "type": "tool_use",
            "id": block.get("id"),
            "name": block.get("name"),
            "input": block.get("input"),
        }
    if kind == "thinking" and isinstance(block.get("signature"), str):
        # Without its signature the API cannot check a thinking block; such a block
        # (written by another adapter) stays in the transcript but is not sent.
        return {"type": "thinking", "thinking": block.get("text"), "signature": block["signature"]}
    return None


def _user_block(block: Block) -> Block | None:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return {"type": "text", "text": text} if isinstance(text, str) and text else None
    if kind == "tool_result":
        return {
            "type": "tool_result",
            "tool_use_id": block.get("tool_use_id"),
            "content": block.get("content"),
            "is_error": bool(block.get("is_error")),
        }
    return None


def wire_to_messages(history: Sequence[WireMessage]) -> list[dict[str, object]]:
    """R-STEP-8: the wire history as Messages API ``messages`` (roles strictly alternate)."""
    out: list[tuple[str, list[Block]]] = []
    for message in history:
        role = "assistant" if message.role == "assistant" else "user"
        convert = _assistant_block if role == "assistant" else _user_block
        blocks = [b for b in (convert(block) for block in message.content) if b is not None]
        if not blocks:
            continue
        if out and out[-1][0] == role:
            out[-1][1].extend(blocks)
        else:
            out.append((role, blocks))
    result: list[dict[str, object]] = []
    for role, blocks in out:
        if role == "user":  # tool results lead their message
            blocks.sort(key=lambda b: b.get("type") != "tool_result")
        result.append({"role": role, "content": blocks})
    return result


def request_body(
    request: ModelRequest, settings: ProviderSettings, system: str | None
) -> dict[str, object]:
    """The JSON body of one Messages API call."""
    body: dict[str, object] = {
        "model": settings.model,
        "max_tokens": settings.max_tokens,
        "system": system if system is not None else default_system(request),
        "messages": wire_to_messages(request.messages),
    }
    if request.tools:  # an agent offered no tools (``tools = []``) declares none
        body["tools"] = [
            {"name": t["name"], "description": t["description"], "input_schema": t["input_schema"]}
            for t in request.tools
        ]
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    return body


def parse_message(body: object, request_id: str | None, used: set[str]) -> ModelReply:
    """A Messages API answer as content blocks and usage; anything else fails the hop."""
    message = check_json(PROVIDER, request_id, body)
    stop_reason = message.get("stop_reason")
    if stop_reason == "refusal":
        raise invalid(PROVIDER, request_id, "the model refused to answer (stop_reason refusal)")
    content = message.get("content")
    if not isinstance(content, list):
        raise invalid(PROVIDER, request_id, "no content array")
    blocks: list[Block] = []
    seen = set(used)
    for item in content:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "text" and isinstance(item.get("text"), str):
            blocks.append(text_block(item["text"]))
        elif (
            kind == "tool_use"
            and isinstance(item.get("id"), str)
            and isinstance(item.get("name"), str)
            and isinstance(item.get("input"), dict)
        ):
            if not item["id"] or item["id"] in seen:
                raise invalid(PROVIDER, request_id, f"tool_use id {item['id']!r} already used")
            seen.add(item["id"])
            blocks.append(tool_use_block(item["id"], item["name"], item["input"]))
        elif kind == "thinking" and isinstance(item.get("thinking"), str):
            signature = item.get("signature")
            blocks.append(
                thinking_block(item["thinking"], signature if isinstance(signature, str) else None)
            )
        else:
            shown = json.dumps(item, ensure_ascii=False)[:200]
            raise invalid(PROVIDER, request_id, f"not a content block lernie can keep: {shown}")
    if stop_reason == "max_tokens" and any(b["type"] == "tool_use" for b in blocks):
        raise invalid(PROVIDER, request_id, "a tool call was cut off at max_tokens")
    return ModelReply(blocks, read_usage(message.get("usage"), {k: k for k in USAGE_KEYS}))


class AnthropicModel(ProviderModel):
    """The ``anthropic`` adapter. Building it checks the extra, the key and the settings."""

    PROVIDER = PROVIDER
    KEY_VAR = KEY_VAR
    BASE_URL_VAR = BASE_URL_VAR
    CLIENT = "Anthropic"
    REQUEST_ID_HEADER = "request-id"

    def request_body(self, request: ModelRequest) -> dict[str, object]:
        return request_body(request, self._settings, self._system)

    def create(self, body: dict[str, object]) -> Any:
        return self._client.messages.with_raw_response.create(**body)

    def parse(self, answer: object, request_id: str | None, used: set[str]) -> ModelReply:
        return parse_message(answer, request_id, used)
