"""The kit's deterministic model: one decision, two front ends (docs/model-server.md).

:func:`decide` reads a conversation in a neutral form (:class:`Turn`: who spoke, the
delivered texts, how many tool calls an answer made) and says what the model does next
(:class:`Decision`). Two front ends use it and add nothing to the logic:

- the *command model*: an implementation without a scripted model of its own points its
  model command at ``<python> -m lernie_stateful.conform.kit_model`` (the adapter's
  ``{kit_model}``); the request is the JSON of docs/models.md on stdin (:func:`answer`);
- the *model server* (:mod:`lernie_stateful.conform.model_server`): the same decisions over
  HTTP, as Anthropic Messages or OpenAI Chat Completions.

The language is the reference's scripted model's (docs/models.md), so the outcome check's
programs script both alike:

- The *window* is everything after the agent's newest final answer (an assistant turn with
  no tool call); the *prompt* is the newest delivered message in it that is not a result
  (no ``terminal_ref:`` in its frontmatter).
- The prompt's directives run in order, one tool call per model call; the number of
  tool-calling answers since the prompt says which comes next:
  ``@message <agent> <text>`` calls ``message``; ``@dispatch [name=<n>] <goal>`` calls
  ``dispatch``; ``@tools <n>`` makes n calls of a tool named ``noop`` (no such harness
  tool: each gets an error result); the work tools as docs/models.md has them:
  ``@bash <command>``, ``@read_file <path>``, ``@cd <path>``, and ``@apply_patch`` alone
  on its line, its envelope the lines after it up to ``*** End Patch``.
  ``@sleep <seconds>`` makes every call for the prompt
  take that long. ``@fail <status> [<n>]`` asks the server to fail the first n calls
  (default 1) for the prompt with that HTTP status (the command model has no failures).
- Then it answers ``kit reply: <first line that is not a directive>`` (the first line when
  every line is one), or nothing at all under ``@silent``; a window holding only results
  gets ``kit noted``; a conversation with no delivered message at all gets ``kit done``.

Tool calls are decided under the kit's own names and inputs (``message`` with ``agent`` and
``content``, ``dispatch`` with ``goal`` and maybe ``name``, ``noop``, ``bash`` with
``command``, ``read_file`` and ``cd`` with ``path``, ``apply_patch`` with ``input``);
:class:`ToolSpec` maps them to an implementation's (the adapter file's ``[tools]``). This
module stays small: the command model is one process per model call.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DIRECTIVES = ("@message", "@dispatch", "@tools", "@sleep", "@silent", "@fail", "@bash",
              "@read_file", "@cd", "@apply_patch")
_WORK_TOOLS = {"@bash": ("bash", "command"), "@read_file": ("read_file", "path"),
               "@cd": ("cd", "path")}
_END_PATCH = "*** End Patch"
_FIELD = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Turn:
    """One message of a conversation as the kit's model reads it.

    ``role`` is ``user`` (delivered messages), ``assistant`` (the model's own answers) or
    ``tool`` (tool results). ``texts``: a user turn's delivered messages, each whole
    (frontmatter included). ``calls``: how many tool calls an assistant turn made.
    """

    role: str
    texts: tuple[str, ...] = ()
    calls: int = 0


@dataclass(frozen=True)
class Call:
    """A tool call under the kit's names: ``message``, ``dispatch``, ``noop``, or a work tool
    (``bash``, ``read_file``, ``cd``, ``apply_patch``)."""

    name: str
    input: Mapping[str, str]
    id: str


@dataclass(frozen=True)
class Decision:
    """What the model does next: call a tool (``call``) or answer ``text`` (``""`` under
    ``@silent``: an answer with no content). ``sleep`` seconds first; ``fail`` is the
    ``@fail`` directive's (status, count) and ``prompt`` the whole prompt text it counts
    against (None when there is no prompt)."""

    text: str = ""
    call: Call | None = None
    sleep: float = 0.0
    fail: tuple[int, int] | None = None
    prompt: str | None = None


@dataclass(frozen=True)
class ToolSpec:
    """How one of the kit's tools is called in an implementation: its ``name`` there and its
    ``input`` as templates over the kit's fields (``{agent}``, ``{content}``, ``{goal}``,
    ``{name}``). A template naming a field the call lacks is left out; constants stay."""

    name: str
    input: Mapping[str, str] = field(default_factory=dict)

    def apply(self, call: Call) -> tuple[str, dict[str, str]]:
        out: dict[str, str] = {}
        for key, template in self.input.items():
            names = _FIELD.findall(template)
            if all(n in call.input for n in names):
                out[key] = _FIELD.sub(lambda m: call.input[m.group(1)], template)
        return self.name, out


DEFAULT_TOOLS: Mapping[str, ToolSpec] = {
    "message": ToolSpec("message", {"agent": "{agent}", "content": "{content}"}),
    "dispatch": ToolSpec("dispatch", {"goal": "{goal}", "name": "{name}"}),
    "noop": ToolSpec("noop", {}),
    "bash": ToolSpec("bash", {"command": "{command}"}),
    "read_file": ToolSpec("read_file", {"path": "{path}"}),
    "cd": ToolSpec("cd", {"path": "{path}"}),
    "apply_patch": ToolSpec("apply_patch", {"input": "{input}"}),
}
"""The reference's tool names and inputs (SPEC R-STEP-7), the default of every adapter."""


def body_of(text: str) -> tuple[str, bool]:
    """(body after the frontmatter, whether it is a result)."""
    if text.startswith("---\n") and "\n---\n" in text[3:]:
        head, _, body = text[4:].partition("\n---\n")
        return body, any(line.startswith("terminal_ref:") for line in head.split("\n"))
    return text, False


@dataclass(frozen=True)
class Script:
    calls: tuple[tuple[str, dict[str, str]], ...]
    sleep: float = 0.0
    silent: bool = False
    fail: tuple[int, int] | None = None


def script_of(body: str) -> Script:
    """The tool calls a prompt's directives make, in order, and its other directives."""
    calls: list[tuple[str, dict[str, str]]] = []
    sleep = 0.0
    silent = False
    fail: tuple[int, int] | None = None
    lines = body.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        words = line.strip().split(" ", 2)
        if line.strip() == "@apply_patch":  # the envelope: the lines up to `*** End Patch`
            envelope = _envelope(lines, index)
            index += len(envelope)
            calls.append(("apply_patch", {"input": "\n".join(envelope) + "\n"}))
        elif words[0] in _WORK_TOOLS and line.strip() != words[0]:
            tool, key = _WORK_TOOLS[words[0]]
            calls.append((tool, {key: line.strip().split(" ", 1)[1].strip()}))
        elif words[0] == "@message" and len(words) == 3:
            calls.append(("message", {"agent": words[1], "content": words[2]}))
        elif words[0] == "@dispatch" and len(words) > 1:
            rest = line.strip().split(" ", 1)[1]
            args: dict[str, str] = {}
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
        elif words[0] == "@silent" and len(words) == 1:
            silent = True
        elif words[0] == "@fail" and len(words) > 1 and words[1].isdigit() and \
                400 <= int(words[1]) <= 599 and (len(words) == 2 or words[2].isdigit()):
            fail = (int(words[1]), int(words[2]) if len(words) == 3 else 1)
    return Script(tuple(calls), sleep, silent, fail)


def _envelope(lines: Sequence[str], start: int) -> list[str]:
    """``@apply_patch``'s envelope: the lines from ``start`` up to and including the first
    ``*** End Patch`` line, or to the end."""
    out: list[str] = []
    for line in lines[start:]:
        out.append(line)
        if line.strip() == _END_PATCH:
            break
    return out


def _text_line(body: str) -> str:
    lines = body.splitlines()
    plain: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.strip() == "@apply_patch":
            index += len(_envelope(lines, index))
        elif line.strip().split(" ", 1)[0] not in DIRECTIVES:
            plain.append(line)
    return (plain or lines or [""])[0]


def decide(turns: Sequence[Turn]) -> Decision:
    """The next action of the kit's model on a conversation (the module's docstring)."""
    start = 0
    for k, t in enumerate(turns):
        if t.role == "assistant" and not t.calls:
            start = k + 1
    prompt: str | None = None
    at = -1
    results = 0
    for k in range(start, len(turns)):
        if turns[k].role == "user":
            for text in turns[k].texts:
                if body_of(text)[1]:
                    results += 1
                else:
                    prompt, at = text, k
    if prompt is None:
        return Decision(text="kit noted" if results else "kit done")
    body = body_of(prompt)[0]
    script = script_of(body)
    done = sum(1 for t in turns[at + 1:] if t.role == "assistant" and t.calls)
    call: Call | None = None
    text = ""
    if done < len(script.calls):
        name, args = script.calls[done]
        call = Call(name, args, f"kit-{sum(t.calls for t in turns) + 1}")
    elif not script.silent:
        text = "kit reply: " + _text_line(body)
    return Decision(text, call, script.sleep, script.fail, prompt)


# ------------------------------------------------------------------ the command model


def _blocks(message: object) -> list[dict[str, object]]:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return []
    return [b for b in message["content"] if isinstance(b, dict)]


def turns_of_command(messages: object) -> list[Turn]:
    """A docs/models.md request's ``messages`` as turns."""
    out: list[Turn] = []
    for m in messages if isinstance(messages, list) else []:
        role = m.get("role") if isinstance(m, dict) else None
        blocks = _blocks(m)
        if role == "user":
            out.append(Turn("user", tuple(str(b["text"]) for b in blocks
                                          if b.get("type") == "text" and "text" in b)))
        elif role == "assistant":
            out.append(Turn("assistant", calls=sum(b.get("type") == "tool_use"
                                                   for b in blocks)))
        else:
            out.append(Turn("tool"))
    return out


def answer(request: dict[str, object]) -> dict[str, object]:
    """The command model: a docs/models.md request in, its reply out (after any sleep)."""
    decision = decide(turns_of_command(request.get("messages")))
    if decision.sleep:
        time.sleep(decision.sleep)
    if decision.call is not None:
        return {"content": [{"type": "tool_use", "id": decision.call.id,
                             "name": decision.call.name, "input": dict(decision.call.input)}]}
    if not decision.text:
        return {"content": []}
    return {"content": [{"type": "text", "text": decision.text}]}


def main() -> None:
    json.dump(answer(json.load(sys.stdin)), sys.stdout)


if __name__ == "__main__":
    main()
