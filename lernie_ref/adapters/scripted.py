"""The scripted model (``scripted``, the default): deterministic, no network (R-STEP-6).

It answers from the transcript alone, and directives in the prompt make any multi-agent
scenario scriptable from the command line (``docs/models.md``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from lernie_ref.adapters.protocol import ModelReply, ModelRequest, StopCheck
from lernie_ref.core.entry import Entry, text_block, tool_use_block, tool_use_ids
from lernie_ref.core.frontmatter import rust_lines, split_frontmatter, terminal_ref_of

NOOP_TOOL = "noop"
"""The tool name ``@tools n`` calls: not a harness tool, so its result is an error and it
has no side effect; it exists to make tool steps (and the exec baton) scriptable."""


@dataclass(frozen=True)
class Script:
    """The directives of one prompt, in order (see :func:`parse_script`)."""

    actions: tuple[tuple[str, dict[str, object]], ...] = ()
    silent: bool = False
    sleep_s: float = 0.0
    first_line: str = ""
    directive_count: int = 0


def _body(text: str) -> str:
    """The text after a deposit's frontmatter (the whole text when there is none)."""
    lines = rust_lines(text)
    if lines and lines[0] == "---":
        for index in range(1, len(lines)):
            if lines[index] == "---":
                return "\n".join(lines[index + 1 :])
    return text


def _directive(line: str) -> tuple[str, object] | None:
    """One directive line parsed, or ``None`` when the line is ordinary text."""
    word, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    if word == "@message":
        target, _, text = rest.partition(" ")
        if target:
            return ("message", {"agent": target, "content": text.strip()})
    elif word == "@dispatch":
        tool_input: dict[str, object] = {}
        head, _, tail = rest.partition(" ")
        if head.startswith("name=") and len(head) > len("name="):
            tool_input["name"] = head[len("name=") :]
            rest = tail.strip()
        if rest:
            tool_input["goal"] = rest
            return ("dispatch", tool_input)
    elif word == "@bash":
        if rest:
            return ("bash", {"command": rest})
    elif word in ("@read_file", "@cd"):
        if rest:
            return (word[1:], {"path": rest})
    elif word == "@tools":
        if rest.isascii() and rest.isdigit():
            return ("tools", int(rest))
    elif word == "@silent":
        if not rest:
            return ("silent", True)
    elif word == "@sleep":
        try:
            seconds = float(rest)
        except ValueError:
            return None
        if 0 <= seconds < float("inf"):
            return ("sleep", seconds)
    return None


def parse_script(body: str) -> Script:
    """Directives, one per line anywhere in the prompt body (leading blanks ignored).

    ``@message <agent> <text>`` · ``@dispatch [name=<name>] <goal>`` · ``@tools <n>`` ·
    ``@silent`` · ``@sleep <seconds>`` · ``@bash <command>`` · ``@read_file <path>`` ·
    ``@cd <path>`` · ``@apply_patch`` (alone on its line: the lines after it, up to and
    including the first ``*** End Patch`` line, or to the end, are the envelope). A line
    whose first word is not one of these, or whose arguments do not parse, is ordinary
    text. ``first_line`` is the first line that is not a directive (the first line when
    every line is one).
    """
    actions: list[tuple[str, dict[str, object]]] = []
    silent = False
    sleep_s = 0.0
    count = 0
    lines = rust_lines(body)
    first_line: str | None = None
    index = 0
    while index < len(lines):
        raw = lines[index]
        index += 1
        if raw.strip() == "@apply_patch":
            envelope: list[str] = []
            while index < len(lines):
                envelope.append(lines[index])
                index += 1
                if envelope[-1].strip() == "*** End Patch":
                    break
            count += 1
            actions.append(("apply_patch", {"input": "\n".join(envelope) + "\n"}))
            continue
        parsed = _directive(raw)
        if parsed is None:
            if first_line is None:
                first_line = raw
            continue
        count += 1
        kind, value = parsed
        if kind in ("message", "dispatch", "bash", "read_file", "cd") and isinstance(
            value, dict
        ):
            actions.append((kind, value))
        elif kind == "tools" and isinstance(value, int):
            actions.extend((NOOP_TOOL, {}) for _ in range(value))
        elif kind == "silent":
            silent = True
        elif kind == "sleep" and isinstance(value, float):
            sleep_s = value
    if first_line is None:
        first_line = lines[0] if lines else ""
    return Script(tuple(actions), silent, sleep_s, first_line, count)


def _terminal(entry: Entry[object]) -> bool:
    """R-DEBT-2's terminal response: a model entry with no ``tool_use``."""
    return entry.role == "assistant" and not tool_use_ids(entry.blocks())


class ScriptedModel:
    """The deterministic model (the default). A pure function of the transcript.

    It looks at the **window**: the entries after its own newest terminal response.
    The newest delivered entry in the window that is not a result message is the
    prompt; its directives run in order, one tool call per step (the number of
    tool-calling steps already taken since the prompt says which comes next), and
    then the answer: a text quoting the prompt's first line (``@silent``: no text).
    A window holding only result messages (replies, obituaries) is acknowledged
    with a text and runs nothing, so a reply never re-runs an older prompt's
    directives.
    """

    def __init__(self, model_id: str = "scripted", sleep: Callable[[float], None] | None = None):
        self._model_id = model_id
        self._sleep = sleep or time.sleep

    @property
    def model_id(self) -> str:
        return self._model_id

    def call(self, request: ModelRequest, should_stop: StopCheck) -> ModelReply:
        entries = request.entries
        start = 0
        for index in range(len(entries) - 1, -1, -1):
            if _terminal(entries[index]):
                start = index + 1
                break
        window = entries[start:]
        prompt_at = None
        for index in range(len(window) - 1, -1, -1):
            entry = window[index]
            if entry.delivered and terminal_ref_of(entry.text) is None:
                prompt_at = index
                break
        next_seq = max((e.seq for e in entries), default=0) + 1
        if prompt_at is None:
            results = [e for e in window if e.delivered]
            if not results:
                return ModelReply([text_block("(nothing new)")])
            newest = results[-1]
            epitaph, response = split_frontmatter(newest.text)
            first = rust_lines(response)[0] if response else "(no text)"
            return ModelReply(
                [text_block(f"noted {epitaph or 'result'} from {newest.origin}: {first}")]
            )
        prompt = window[prompt_at]
        script = parse_script(_body(prompt.text))
        if script.sleep_s > 0:
            deadline = time.monotonic() + script.sleep_s
            while not should_stop():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._sleep(min(left, 0.05))
            if should_stop():
                return ModelReply([])
        taken = sum(
            1 for e in window[prompt_at + 1 :] if e.role == "assistant" and tool_use_ids(e.blocks())
        )
        if taken < len(script.actions):
            name, tool_input = script.actions[taken]
            return ModelReply(
                [tool_use_block(f"scripted-{next_seq}-{taken + 1}", name, tool_input)]
            )
        if script.silent:
            return ModelReply([])
        return ModelReply([text_block(f"scripted reply to {prompt.origin}: {script.first_line}")])
