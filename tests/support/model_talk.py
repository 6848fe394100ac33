"""A conversation with the kit's model server through an official client library.

:class:`Talk` speaks one API (``anthropic`` or ``openai``), streamed or not, and keeps the
conversation in that API's own shape, the way a harness would: a tool call is answered with
a tool result and the model is asked again, until it answers with text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

import anthropic
import openai


class Endpoint(Protocol):
    """Where the server answers (a :class:`ModelServer`, or its address alone)."""

    @property
    def base_url(self) -> str: ...

    @property
    def openai_url(self) -> str: ...


@dataclass(frozen=True)
class Address:
    base_url: str

    @property
    def openai_url(self) -> str:
        return self.base_url + "/v1"

TOOLS = [
    {"name": "message", "description": "write to an agent",
     "input_schema": {"type": "object", "properties": {"agent": {"type": "string"},
                                                       "content": {"type": "string"}},
                      "required": ["agent", "content"]}},
    {"name": "dispatch", "description": "start a child",
     "input_schema": {"type": "object", "properties": {"goal": {"type": "string"},
                                                       "name": {"type": "string"}},
                      "required": ["goal"]}},
]
AGENT = "20260711T000000Z-0a1b2c3d"
SYSTEM = f"You are agent {AGENT} in a lernie workspace."


def delivered(body: str, sender: str = "user", result: bool = False) -> str:
    """A delivered message as the reference sends it: the whole file, frontmatter first."""
    head = f"from: {sender}\ndeposited_at: 2026-07-11T00:00:00Z\n"
    if result:
        head += "epitaph: final-response\nterminal_ref: 0123abcd\n"
    return f"---\n{head}---\n{body}"


@dataclass(frozen=True)
class Step:
    """One answer: a tool call (``name``, ``input``, ``id``) or a text (``name`` None)."""

    text: str = ""
    name: str | None = None
    input: dict[str, Any] = field(default_factory=dict)
    id: str = ""


class Talk:
    def __init__(self, server: Endpoint, api: str, stream: bool, system: str = SYSTEM,
                 max_retries: int = 0) -> None:
        self.api = api
        self.stream = stream
        self.system = system
        self.messages: list[dict[str, Any]] = []
        if api == "anthropic":
            self.anthropic = anthropic.Anthropic(base_url=server.base_url, api_key="k",
                                                 max_retries=max_retries, timeout=20)
        else:
            self.openai = openai.OpenAI(base_url=server.openai_url, api_key="k",
                                        max_retries=max_retries, timeout=20)
            self.messages.append({"role": "system", "content": system})

    # ------------------------------------------------------------ the conversation

    def deliver(self, *texts: str) -> None:
        """Delivered messages arrive (one user message, as the reference merges them)."""
        if self.api == "anthropic":
            blocks = [{"type": "text", "text": t} for t in texts]
            last = self.messages[-1] if self.messages else None
            if last is not None and last["role"] == "user":
                last["content"] += blocks
            else:
                self.messages.append({"role": "user", "content": blocks})
        else:
            self.messages.append({"role": "user", "content": "\n\n".join(texts)})

    def said(self, step: Step) -> None:
        """The model's answer joins the conversation (a tool call gets its result)."""
        if self.api == "anthropic":
            if step.name is None:
                self.messages.append({"role": "assistant", "content": [
                    {"type": "text", "text": step.text or "."}]})
                return
            self.messages.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": step.id, "name": step.name, "input": step.input}]})
            self.messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": step.id,
                 "content": [{"type": "text", "text": "{\"status\":\"ok\"}"}]}]})
        else:
            if step.name is None:
                self.messages.append({"role": "assistant", "content": step.text})
                return
            self.messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": step.id, "type": "function", "function": {
                    "name": step.name, "arguments": json.dumps(step.input)}}]})
            self.messages.append({"role": "tool", "tool_call_id": step.id,
                                  "content": "{\"status\":\"ok\"}"})

    def run(self, limit: int = 10) -> list[Step]:
        """Ask until the model answers with text; every answer, in order."""
        steps: list[Step] = []
        for _ in range(limit):
            step = self.ask()
            steps.append(step)
            self.said(step)
            if step.name is None:
                return steps
        raise AssertionError(f"no final answer after {limit} calls: {steps}")

    # ------------------------------------------------------------ one call

    def ask(self) -> Step:
        return self._ask_anthropic() if self.api == "anthropic" else self._ask_openai()

    def _ask_anthropic(self) -> Step:
        args: dict[str, Any] = {"model": "kit", "max_tokens": 64, "system": self.system,
                                "messages": self.messages, "tools": TOOLS}
        if self.stream:
            with self.anthropic.messages.stream(**args) as events:
                kinds = [event.type for event in events]
                message = events.get_final_message()
            assert kinds[0] == "message_start" and kinds[-1] == "message_stop", kinds
            assert "message_delta" in kinds
        else:
            message = self.anthropic.messages.create(**args)
        assert message.stop_reason in ("end_turn", "tool_use")
        calls = [b for b in message.content if b.type == "tool_use"]
        if calls:
            assert message.stop_reason == "tool_use" and len(calls) == 1
            return Step(name=calls[0].name, input=dict(calls[0].input), id=calls[0].id)
        return Step(text="".join(b.text for b in message.content if b.type == "text"))

    def _ask_openai(self) -> Step:
        tools = [{"type": "function", "function": {"name": t["name"],
                                                    "description": t["description"],
                                                    "parameters": t["input_schema"]}}
                 for t in TOOLS]
        args: dict[str, Any] = {"model": "kit", "messages": self.messages, "tools": tools}
        if not self.stream:
            choice = self.openai.chat.completions.create(**args).choices[0]
            calls = choice.message.tool_calls or []
            if calls:
                assert choice.finish_reason == "tool_calls" and len(calls) == 1
                call = calls[0]
                return Step(name=call.function.name, input=json.loads(call.function.arguments),
                            id=call.id)
            assert choice.finish_reason == "stop"
            return Step(text=choice.message.content or "")
        text = ""
        parts: dict[int, dict[str, str]] = {}
        finish = None
        usage = None
        for chunk in self.openai.chat.completions.create(
                **args, stream=True, stream_options={"include_usage": True}):
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                text += choice.delta.content or ""
                for delta in choice.delta.tool_calls or []:
                    part = parts.setdefault(delta.index, {"id": "", "name": "", "args": ""})
                    part["id"] += delta.id or ""
                    if delta.function is not None:
                        part["name"] += delta.function.name or ""
                        part["args"] += delta.function.arguments or ""
                finish = choice.finish_reason or finish
        assert usage is not None and usage.total_tokens > 0
        if parts:
            assert finish == "tool_calls" and list(parts) == [0]
            return Step(name=parts[0]["name"], input=json.loads(parts[0]["args"]),
                        id=parts[0]["id"])
        assert finish == "stop"
        return Step(text=text)
