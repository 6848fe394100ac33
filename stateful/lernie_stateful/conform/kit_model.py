"""The kit's deterministic command model (the JSON of docs/models.md, both ways).

An implementation without a scripted model of its own points its model command
at ``<python> -m lernie_stateful.conform.kit_model`` (the adapter's ``{kit_model}``).
It speaks the directive language of the reference's scripted model (docs/models.md),
so the outcome check's programs script both alike:

- The *window* is everything after the agent's newest final answer (an assistant
  message with no ``tool_use``); the *prompt* is the newest delivered message in it
  that is not a result (no ``terminal_ref:`` in its frontmatter).
- The prompt's directives run in order, one tool call per model call; the number of
  tool-calling answers since the prompt says which comes next:
  ``@message <agent> <text>`` calls ``message``; ``@dispatch [name=<n>] <goal>`` calls
  ``dispatch``; ``@tools <n>`` makes n calls of a tool named ``noop`` (no such harness
  tool: each gets an error result). ``@sleep <seconds>`` makes every call for the prompt
  take that long.
- Then it answers ``kit reply: <first line that is not a directive>`` (the first line when
  every line is one); a window holding only results gets ``kit noted``; a request with
  no delivered message at all gets ``kit done``.
"""

from __future__ import annotations

import json
import sys
import time

_DIRECTIVES = ("@message", "@dispatch", "@tools", "@sleep", "@silent")


def _blocks(message: object) -> list[dict[str, object]]:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return []
    return [b for b in message["content"] if isinstance(b, dict)]


def _body(text: str) -> tuple[str, bool]:
    """(body after the frontmatter, whether it is a result)."""
    if text.startswith("---\n") and "\n---\n" in text[3:]:
        head, _, body = text[4:].partition("\n---\n")
        return body, any(line.startswith("terminal_ref:") for line in head.split("\n"))
    return text, False


def _steps(body: str) -> tuple[list[tuple[str, dict[str, object]]], float]:
    """The tool calls a prompt's directives make, in order, and its sleep."""
    calls: list[tuple[str, dict[str, object]]] = []
    sleep = 0.0
    for line in body.splitlines():
        words = line.strip().split(" ", 2)
        if words[0] == "@message" and len(words) == 3:
            calls.append(("message", {"agent": words[1], "content": words[2]}))
        elif words[0] == "@dispatch" and len(words) > 1:
            rest = line.strip().split(" ", 1)[1]
            args: dict[str, object] = {}
            if rest.startswith("name=") and " " in rest:
                name, rest = rest.split(" ", 1)
                args["name"] = name[len("name="):]
            args["goal"] = rest
            calls.append(("dispatch", args))
        elif words[0] == "@tools" and len(words) > 1 and words[1].isdigit():
            calls += [("noop", {})] * int(words[1])
        elif words[0] == "@sleep" and len(words) > 1 and \
                words[1].replace(".", "", 1).isdigit():
            sleep = float(words[1])
    return calls, sleep


def _text_line(body: str) -> str:
    lines = body.splitlines()
    plain = [ln for ln in lines if ln.strip().split(" ", 1)[0] not in _DIRECTIVES]
    return (plain or lines or [""])[0]


def answer(request: dict[str, object]) -> dict[str, object]:
    messages = request.get("messages")
    messages = messages if isinstance(messages, list) else []
    start = 0
    for k, m in enumerate(messages):
        if isinstance(m, dict) and m.get("role") == "assistant" and not any(
                b.get("type") == "tool_use" for b in _blocks(m)):
            start = k + 1
    prompt: str | None = None
    at = -1
    results = 0
    for k in range(start, len(messages)):
        m = messages[k]
        if isinstance(m, dict) and m.get("role") == "user":
            for b in _blocks(m):
                body, is_result = _body(str(b.get("text", "")))
                if is_result:
                    results += 1
                else:
                    prompt, at = body, k
    if prompt is None:
        text = "kit noted" if results else "kit done"
        return {"content": [{"type": "text", "text": text}]}
    calls, sleep = _steps(prompt)
    if sleep:
        time.sleep(sleep)
    done = sum(1 for m in messages[at + 1:] if isinstance(m, dict)
               and m.get("role") == "assistant"
               and any(b.get("type") == "tool_use" for b in _blocks(m)))
    if done < len(calls):
        name, args = calls[done]
        used = sum(1 for m in messages for b in _blocks(m) if b.get("type") == "tool_use")
        return {"content": [{"type": "tool_use", "id": f"kit-{used + 1}",
                             "name": name, "input": args}]}
    return {"content": [{"type": "text", "text": "kit reply: " + _text_line(prompt)}]}


def main() -> None:
    json.dump(answer(json.load(sys.stdin)), sys.stdout)


if __name__ == "__main__":
    main()
