"""``model = "openai"``: Chat Completions through the official SDK (R-STEP-8).

Works with OpenAI and with any server that speaks the same API (vLLM,
llama.cpp's server, Ollama): set ``OPENAI_BASE_URL``. The wire history (R-TR-5)
becomes a ``system`` message, then ``user`` messages (a merged run of delivered
entries is one message, its texts joined by a blank line), ``assistant``
messages with ``tool_calls`` (arguments as JSON text), and one ``tool`` message
per tool result. Thinking blocks are not sent. The tools are declared as
functions. A ``reasoning_content`` string in an answer (servers of reasoning
models send one) is kept as a ``thinking`` block without a signature. Usage is
recorded under the transcript's names: ``prompt_tokens`` as ``input_tokens``,
``completion_tokens`` as ``output_tokens``.
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

PROVIDER = "openai"
KEY_VAR = "OPENAI_API_KEY"
BASE_URL_VAR = "OPENAI_BASE_URL"
USAGE_KEYS = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}


def _texts(blocks: Sequence[object]) -> list[str]:
    return [
        str(b["text"])
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(_texts(content)) if isinstance(content, list) else ""


def wire_to_messages(history: Sequence[WireMessage], system: str) -> list[dict[str, object]]:
    """R-STEP-8: the wire history as Chat Completions ``messages``."""
    out: list[dict[str, object]] = [{"role": "system", "content": system}]
    for message in history:
        if message.role == "user":
            out.append({"role": "user", "content": "\n\n".join(_texts(message.content))})
        elif message.role == "tool":
            for block in message.content:
                if block.get("type") == "tool_result":
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": block.get("tool_use_id"),
                            "content": _result_text(block.get("content")),
                        }
                    )
        else:
            calls = [
                {
                    "id": b.get("id"),
                    "type": "function",
                    "function": {
                        "name": b.get("name"),
                        "arguments": json.dumps(b.get("input"), ensure_ascii=False),
                    },
                }
                for b in message.content
                if b.get("type") == "tool_use"
            ]
            text = "".join(_texts(message.content))
            assistant: dict[str, object] = {"role": "assistant", "content": text or None}
            if calls:
                assistant["tool_calls"] = calls
            elif not text:
                assistant["content"] = ""
            out.append(assistant)
    return out


def request_body(
    request: ModelRequest, settings: ProviderSettings, system: str | None
) -> dict[str, object]:
    """The JSON body of one Chat Completions call."""
    body: dict[str, object] = {
        "model": settings.model,
        "max_tokens": settings.max_tokens,
        "messages": wire_to_messages(
            request.messages, system if system is not None else default_system(request)
        ),
    }
    if request.tools:  # an agent offered no tools (``tools = []``) declares none
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t["description"],
                    "parameters": t["input_schema"],
                },
            }
            for t in request.tools
        ]
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    return body


def _fresh_id(seen: set[str]) -> str:
    n = len(seen) + 1
    while f"call-{n}" in seen:
        n += 1
    return f"call-{n}"


def parse_completion(body: object, request_id: str | None, used: set[str]) -> ModelReply:
    """A Chat Completions answer as content blocks and usage; anything else fails the hop.

    A tool call whose id is missing or already used in the transcript (some local
    servers number calls afresh every turn) gets a fresh id ``call-<n>``.
    """
    completion = check_json(PROVIDER, request_id, body)
    if request_id is None and isinstance(completion.get("id"), str):
        request_id = str(completion["id"])
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise invalid(PROVIDER, request_id, "no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise invalid(PROVIDER, request_id, "the choice has no message")
    finish = choice.get("finish_reason")
    if isinstance(message.get("refusal"), str) and message["refusal"]:
        raise invalid(PROVIDER, request_id, f"the model refused to answer: {message['refusal']}")
    if finish == "content_filter":
        raise invalid(
            PROVIDER, request_id, "the answer was withheld (finish_reason content_filter)"
        )
    blocks: list[Block] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.append(thinking_block(reasoning))
    content = message.get("content")
    if isinstance(content, str) and content:
        blocks.append(text_block(content))
    elif content is not None and not isinstance(content, str):
        raise invalid(PROVIDER, request_id, "message content is not text")
    seen = set(used)
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise invalid(PROVIDER, request_id, "tool_calls is not a list")
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise invalid(PROVIDER, request_id, f"not a function call: {call!r}"[:300])
        arguments = function.get("arguments") or "{}"
        try:
            parsed: object = json.loads(arguments) if isinstance(arguments, str) else arguments
        except json.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, dict):
            if finish == "length":
                raise invalid(PROVIDER, request_id, "a tool call was cut off at max_tokens")
            raise invalid(
                PROVIDER,
                request_id,
                f"arguments of {function['name']} are not a JSON object: {arguments!r}"[:300],
            )
        call_id = call.get("id") if isinstance(call, dict) else None
        if not isinstance(call_id, str) or not call_id or call_id in seen:
            call_id = _fresh_id(seen)
        seen.add(call_id)
        blocks.append(tool_use_block(call_id, function["name"], parsed))
    return ModelReply(blocks, read_usage(completion.get("usage"), USAGE_KEYS))


class OpenAIModel(ProviderModel):
    """The ``openai`` adapter. Building it checks the extra, the key and the settings."""

    PROVIDER = PROVIDER
    KEY_VAR = KEY_VAR
    BASE_URL_VAR = BASE_URL_VAR
    CLIENT = "OpenAI"
    REQUEST_ID_HEADER = "x-request-id"

    def request_body(self, request: ModelRequest) -> dict[str, object]:
        return request_body(request, self._settings, self._system)

    def create(self, body: dict[str, object]) -> Any:
        return self._client.chat.completions.with_raw_response.create(**body)

    def parse(self, answer: object, request_id: str | None, used: set[str]) -> ModelReply:
        return parse_completion(answer, request_id, used)
