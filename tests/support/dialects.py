"""Each provider's JSON as the stub speaks it, and the test's own reading of a transcript.

``expected_messages`` is the oracle for the request bodies: it maps the files in
an agent's ``messages/`` folder straight to the provider's ``messages``, written
here from the provider's documented format, without the adapter's code.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from tests.support.provider_stub import Answer

KEY = "sk-test-5d1e2a9c0b7f44a1b3c8e6f2"
"""A made-up key; the tests check it never lands in a log, an error or a transcript."""


def transcript_files(worktree: Path) -> list[tuple[str, bytes]]:
    folder = worktree / "messages"
    names = sorted(os.listdir(folder), key=lambda n: (int(n.split("-", 1)[0]), n))
    return [(n, (folder / n).read_bytes()) for n in names]


def _assistant_blocks(data: bytes) -> list[dict[str, object]]:
    parsed = json.loads(data)
    return list(parsed["content"] if isinstance(parsed, dict) else parsed)


@dataclass(frozen=True)
class Dialect:
    name: str
    key_var: str
    base_var: str
    path: str

    def base_url(self, url: str) -> str:
        return url + ("/v1" if self.name == "openai" else "")

    def env(self, url: str) -> dict[str, str]:
        return {
            "LERNIE_MODEL": self.name,
            self.key_var: KEY,
            self.base_var: self.base_url(url),
        }

    def key_header(self, headers: dict[str, str]) -> str:
        """The key the request carried (the Anthropic SDK sends ``x-api-key`` or a bearer)."""
        if self.name == "anthropic" and "x-api-key" in headers:
            return headers["x-api-key"]
        return headers.get("authorization", "").removeprefix("Bearer ")

    # -- answers ---------------------------------------------------------------

    def text(self, text: str, n: int = 0) -> Answer:
        usage_in, usage_out = 100 + n, 10 + n
        if self.name == "anthropic":
            return Answer(
                200,
                {
                    "id": f"msg_{n}",
                    "type": "message",
                    "role": "assistant",
                    "model": "stub",
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": usage_in, "output_tokens": usage_out},
                },
                {"request-id": f"req_{n}"},
            )
        return Answer(
            200,
            {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": 0,
                "model": "stub",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": usage_in,
                    "completion_tokens": usage_out,
                    "total_tokens": usage_in + usage_out,
                },
            },
            {"x-request-id": f"req_{n}"},
        )

    def tool(self, call_id: str, name: str, arguments: dict[str, object], n: int = 0) -> Answer:
        if self.name == "anthropic":
            return Answer(
                200,
                {
                    "id": f"msg_{n}",
                    "type": "message",
                    "role": "assistant",
                    "model": "stub",
                    "content": [
                        {"type": "text", "text": f"calling {name}"},
                        {"type": "tool_use", "id": call_id, "name": name, "input": arguments},
                    ],
                    "stop_reason": "tool_use",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 100 + n, "output_tokens": 10 + n},
                },
                {"request-id": f"req_{n}"},
            )
        return Answer(
            200,
            {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": 0,
                "model": "stub",
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": f"calling {name}",
                            "tool_calls": [
                                {
                                    "id": call_id,
                                    "type": "function",
                                    "function": {"name": name, "arguments": json.dumps(arguments)},
                                }
                            ],
                        },
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 100 + n, "completion_tokens": 10 + n},
            },
            {"x-request-id": f"req_{n}"},
        )

    def error(self, status: int, kind: str, message: str, request_id: str) -> Answer:
        header = "request-id" if self.name == "anthropic" else "x-request-id"
        if self.name == "anthropic":
            body: dict[str, object] = {
                "type": "error",
                "error": {"type": kind, "message": message},
            }
        else:
            body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        return Answer(status, body, {header: request_id})

    # -- reading requests ------------------------------------------------------

    def conversation(self, body: dict[str, object]) -> list[dict[str, object]]:
        messages = body["messages"]
        assert isinstance(messages, list)
        return [m for m in messages if m.get("role") != "system"]

    def first_user_text(self, body: dict[str, object]) -> str:
        first = self.conversation(body)[0]
        content = first["content"]
        if isinstance(content, str):
            return content
        assert isinstance(content, list)
        return str(content[0]["text"])

    def results(self, body: dict[str, object]) -> list[str]:
        """The texts of every tool result in the request, in order."""
        out: list[str] = []
        for message in self.conversation(body):
            content = message["content"]
            if message["role"] == "tool":
                out.append(str(content))
            elif isinstance(content, list):
                out.extend(
                    str(b["content"][0]["text"]) for b in content if b.get("type") == "tool_result"
                )
        return out

    def last_user_text(self, body: dict[str, object]) -> str:
        content = self.conversation(body)[-1]["content"]
        if isinstance(content, str):
            return content
        assert isinstance(content, list)
        return str([b for b in content if b.get("type") == "text"][-1]["text"])

    # -- the oracle --------------------------------------------------------------

    def expected_messages(self, files: list[tuple[str, bytes]]) -> list[dict[str, object]]:
        if self.name == "anthropic":
            return self._anthropic(files)
        return self._openai(files)

    def _anthropic(self, files: list[tuple[str, bytes]]) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for name, data in files:
            blocks: list[dict[str, object]]
            if name.endswith(".md"):
                role, blocks = "user", [{"type": "text", "text": data.decode()}]
            elif name.endswith("-tool.json"):
                role, blocks = "user", _assistant_blocks(data)
            else:
                role, blocks = "assistant", []
                for b in _assistant_blocks(data):
                    if b["type"] == "thinking":
                        blocks.append(
                            {"type": "thinking", "thinking": b["text"], "signature": b["signature"]}
                        )
                    else:
                        blocks.append(b)
            if out and out[-1]["role"] == role:
                content = out[-1]["content"]
                assert isinstance(content, list)
                content.extend(blocks)
            else:
                out.append({"role": role, "content": blocks})
        return out

    def _openai(self, files: list[tuple[str, bytes]]) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        previous = ""
        for name, data in files:
            if name.endswith(".md"):
                if previous == "md":
                    out[-1]["content"] = f"{out[-1]['content']}\n\n{data.decode()}"
                else:
                    out.append({"role": "user", "content": data.decode()})
                previous = "md"
                continue
            previous = "json"
            blocks = _assistant_blocks(data)
            if name.endswith("-tool.json"):
                for b in blocks:
                    text = "\n".join(c["text"] for c in cast(list[dict[str, str]], b["content"]))
                    out.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": text})
                continue
            text = "".join(cast(str, b["text"]) for b in blocks if b["type"] == "text")
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
                }
                for b in blocks
                if b["type"] == "tool_use"
            ]
            message: dict[str, object] = {"role": "assistant", "content": text or None}
            if calls:
                message["tool_calls"] = calls
            elif not text:
                message["content"] = ""
            out.append(message)
        return out


ANTHROPIC = Dialect("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "/v1/messages")
OPENAI = Dialect("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1/chat/completions")
DIALECTS = [ANTHROPIC, OPENAI]
