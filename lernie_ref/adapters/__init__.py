"""Model adapters: one protocol, two implementations (R-STEP-6).

A hop hands the adapter a :class:`ModelRequest` (the agent id, the transcript as
wire messages, the tool list) and gets back content blocks. The adapter is
injected; the hop never knows which one it drives.

- :class:`ScriptedModel` (``scripted``, the default): deterministic, no network.
  It answers from the transcript alone, and directives in the prompt make any
  multi-agent scenario scriptable from the command line (``docs/models.md``).
- :class:`CommandModel` (``command``): any executable. The request JSON goes to
  its stdin, content-blocks JSON comes back on its stdout. A non-zero exit or
  output that is not valid content fails the hop with one line; nothing is
  committed (R-STEP-5).

Selection: ``lernie.toml``'s ``model`` unless the environment variable
``LERNIE_MODEL`` is set, which wins (``config.load``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from lernie_ref.core.entry import Block, Entry, text_block, tool_use_block, tool_use_ids
from lernie_ref.core.errors import (
    ConfigError,
    ModelError,
    debug_list,
    io_text,
)
from lernie_ref.core.frontmatter import rust_lines, split_frontmatter, terminal_ref_of
from lernie_ref.core.tooldefs import DEFAULT_TOOLS, tool_specs
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.transcript import WireMessage

StopCheck = Callable[[], bool]

TOOL_SPECS: list[dict[str, object]] = tool_specs(DEFAULT_TOOLS)
"""R-STEP-7, R-TOOL-1: the tools offered when the configuration says nothing."""




@dataclass(frozen=True)
class ModelRequest:
    agent_id: str
    entries: Sequence[Entry[object]]
    messages: list[WireMessage]
    tools: list[dict[str, object]] = field(default_factory=lambda: list(TOOL_SPECS))
    worktree: Path | None = None

    def to_json(self) -> dict[str, object]:
        """The request a ``command`` model reads on stdin (docs/models.md)."""
        return {
            "agent": self.agent_id,
            "messages": [m.to_json() for m in self.messages],
            "tools": self.tools,
        }


@dataclass(frozen=True)
class ModelReply:
    blocks: list[Block]
    usage: dict[str, int] | None = None


class ModelAdapter(Protocol):
    @property
    def model_id(self) -> str:
        """The origin token of this model's transcript entries (``NNN-<model_id>.json``)."""
        ...

    def call(self, request: ModelRequest, should_stop: StopCheck) -> ModelReply:
        """One model call. May return early when ``should_stop()``; the hop then discards it."""
        ...


# ---------------------------------------------------------------------------
# The scripted model
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# The command model
# ---------------------------------------------------------------------------


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


_TOO_DEEP = object()
MAX_NESTING = 128
"""Arrays and objects nested deeper than this are refused, as serde_json refuses them (D-25)."""


def _nesting(value: object) -> int:
    """The depth of nested arrays and objects in ``value``, counted without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = list(item)
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_NESTING:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def parse_reply(raw: bytes, used_ids: Sequence[str]) -> ModelReply:
    """Validate a command model's stdout: ``{"content":[…],"usage":{…}}`` or a bare array.

    Accepted blocks: ``text`` (``text``: string), ``tool_use`` (``id``, ``name``:
    strings, ``input``: object; the id unused so far in the transcript) and
    ``thinking`` (``text``, optional ``signature``). Anything else is an error.
    """
    try:
        parsed: object = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"model command wrote invalid JSON on stdout: {exc}") from None
    except RecursionError:
        parsed = _TOO_DEEP
    if parsed is _TOO_DEEP or _nesting(parsed) > MAX_NESTING:
        raise ModelError(
            f"model command wrote invalid JSON on stdout: nested deeper than {MAX_NESTING} "
            "levels (hostile input, D-25)"
        )
    try:  # JSON may escape a lone surrogate, which no transcript or deposit can hold
        json.dumps(parsed, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ModelError(
            "model command reply holds text that is not valid Unicode (a lone surrogate)"
        ) from None
    usage: dict[str, int] | None = None
    if isinstance(parsed, dict):
        items = parsed.get("content")
        raw_usage = parsed.get("usage")
        if raw_usage is not None:
            if not isinstance(raw_usage, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                for k, v in raw_usage.items()
            ):
                raise ModelError("model command reply: `usage` must map names to integers")
            usage = {str(k): int(v) for k, v in raw_usage.items()} or None
    else:
        items = parsed
    if not isinstance(items, list):
        raise ModelError(
            'model command reply is neither {"content":[…]} nor a JSON array of content blocks'
        )
    blocks: list[Block] = []
    seen = set(used_ids)
    for item in items:
        if not isinstance(item, dict):
            raise ModelError(f"model command reply: a content block is not an object: {item!r}")
        kind = item.get("type")
        if kind == "text" and isinstance(item.get("text"), str):
            blocks.append(text_block(str(item["text"])))
        elif (
            kind == "tool_use"
            and isinstance(item.get("id"), str)
            and isinstance(item.get("name"), str)
            and isinstance(item.get("input", {}), dict)
        ):
            block_id = str(item["id"])
            if not block_id or block_id in seen:
                raise ModelError(
                    f"model command reply: tool_use id {block_id!r} is empty or already used"
                )
            seen.add(block_id)
            blocks.append(tool_use_block(block_id, str(item["name"]), item.get("input", {})))
        elif kind == "thinking" and isinstance(item.get("text"), str):
            signature = item.get("signature")
            blocks.append(
                {
                    "type": "thinking",
                    "text": str(item["text"]),
                    "signature": signature if isinstance(signature, str) else None,
                }
            )
        else:
            raise ModelError(f"model command reply: not a valid content block: {item!r}")
    return ModelReply(blocks, usage)


class CommandModel:
    """An executable speaking JSON: the request on stdin, the content blocks on stdout.

    The process runs in a session (and process group) of its own. The request is
    written by a thread of its own and stdin is closed after the last byte, while
    stdout and stderr are read by two more threads, so no pipe buffer can fill up
    with both sides waiting on each other whatever the sizes or the model's reading
    speed. A stop or ``timeout`` seconds without an answer kill the whole group.
    """

    def __init__(
        self, command: str, model_id: str = "command", timeout: float | None = None
    ) -> None:
        try:
            self._argv = shlex.split(command)
        except ValueError as exc:  # e.g. an unclosed quote: one clear line, never a traceback
            raise ModelError(
                f"model command {command!r} cannot be split into words: {exc}"
            ) from None
        self._model_id = model_id
        self._timeout = timeout

    @property
    def model_id(self) -> str:
        return self._model_id

    def call(self, request: ModelRequest, should_stop: StopCheck) -> ModelReply:
        if not self._argv:
            raise ModelError(
                "model `command` needs a command line: set model_command in lernie.toml "
                "or LERNIE_MODEL_COMMAND"
            )
        payload = json.dumps(request.to_json(), ensure_ascii=False).encode("utf-8")
        env = {k: v for k, v in os.environ.items() if k != "LERNIE_LOCK_FD"}
        env["LERNIE_AGENT"] = request.agent_id
        try:
            proc = subprocess.Popen(
                self._argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=request.worktree,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise ModelError(
                f"model command {debug_list(self._argv)} could not start: {io_text(exc)}"
            ) from None
        outcome = _exchange(proc, payload, should_stop, self._timeout)
        if outcome is None:
            return ModelReply([])
        if isinstance(outcome, str):  # "timeout"
            raise ModelError(
                f"model command {debug_list(self._argv)} gave no answer within "
                f"{self._timeout:g} s (model_timeout); its process group was killed"
            )
        out, err = outcome
        if proc.returncode != 0:
            detail = _one_line(err.decode("utf-8", "replace"))
            raise ModelError(
                f"model command {debug_list(self._argv)} exited with exit status: "
                f"{proc.returncode}" + (f": {detail}" if detail else "")
            )
        used = [
            i for e in request.entries if e.role == "assistant" for i in tool_use_ids(e.blocks())
        ]
        return parse_reply(out, used)


_POLL_S = 0.05


def _pump_in(pipe: IO[bytes], payload: bytes) -> None:
    """Write the whole request, then close stdin; a model that exits unread is not an error."""
    with contextlib.suppress(OSError):  # BrokenPipeError: the model closed its stdin
        view = memoryview(payload)
        while view:
            written = os.write(pipe.fileno(), view[: 1 << 16])
            view = view[written:]
    with contextlib.suppress(OSError):
        pipe.close()


def _pump_out(pipe: IO[bytes], sink: list[bytes]) -> None:
    with contextlib.suppress(OSError):
        while chunk := os.read(pipe.fileno(), 1 << 16):
            sink.append(chunk)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _exchange(
    proc: subprocess.Popen[bytes], payload: bytes, should_stop: StopCheck, timeout: float | None
) -> tuple[bytes, bytes] | str | None:
    """Feed ``payload`` and collect stdout and stderr concurrently until the model is done.

    Returns ``(stdout, stderr)``; ``None`` after a stop; ``"timeout"`` when ``timeout``
    seconds passed first. Either way out the model's process group is killed; the pipe
    threads then see end-of-file and finish.
    """
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out: list[bytes] = []
    err: list[bytes] = []
    threads = [
        threading.Thread(target=_pump_in, args=(proc.stdin, payload), daemon=True),
        threading.Thread(target=_pump_out, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_pump_out, args=(proc.stderr, err), daemon=True),
    ]
    for thread in threads:
        thread.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    result: str | None = ""
    # Done when the model exited and both output pipes reached end-of-file (a helper it
    # left behind holding them open keeps the call going until the deadline).
    while proc.poll() is None or threads[1].is_alive() or threads[2].is_alive():
        if should_stop():
            result = None
            break
        if deadline is not None and time.monotonic() >= deadline:
            result = "timeout"
            break
        waiting = [t for t in threads[1:] if t.is_alive()]
        if waiting:
            waiting[0].join(_POLL_S)
        else:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(_POLL_S)
    if result != "":
        _kill_group(proc)
    for thread in threads:
        thread.join()
    for pipe in (proc.stdout, proc.stderr):
        pipe.close()
    if result != "":
        return result
    return b"".join(out), b"".join(err)


def select_model(
    model: str,
    model_command: str = "",
    *,
    config: Config | None = None,
    env: Mapping[str, str] | None = None,
    root: Path | None = None,
) -> ModelAdapter:
    """R-STEP-6: the adapter named by the configuration.

    ``scripted``, ``command``, or a provider adapter (``anthropic``, ``openai``,
    R-STEP-8), whose SDK is imported here and only here; building a provider
    adapter checks its extra, key and settings before any call.
    """
    if model == "scripted":
        return ScriptedModel()
    if model == "command":
        return CommandModel(model_command, timeout=None if config is None else config.model_timeout)
    if model in ("anthropic", "openai"):
        settings = config or Config()
        where = os.environ if env is None else env
        if model == "anthropic":
            from lernie_ref.adapters.anthropic import AnthropicModel

            return AnthropicModel(settings.anthropic, where, root)
        from lernie_ref.adapters.openai import OpenAIModel

        return OpenAIModel(settings.openai, where, root)
    raise ConfigError(
        f"unknown model {model!r}: the models are `scripted`, `command`, `anthropic` and `openai`"
    )
