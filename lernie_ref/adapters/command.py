"""The command model (``command``): any executable speaking JSON (R-STEP-6, R-STEP-5).

The request JSON goes to its stdin, content-blocks JSON comes back on its stdout
(:func:`parse_reply`). A non-zero exit or output that is not valid content fails the hop
with one line; nothing is committed (R-STEP-5). The pipes are served by
:mod:`lernie_ref.adapters.pipes`.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Sequence

from lernie_ref.adapters.pipes import exchange
from lernie_ref.adapters.protocol import ModelReply, ModelRequest, StopCheck
from lernie_ref.core.entry import Block, text_block, tool_use_block, tool_use_ids
from lernie_ref.core.errors import ModelError, debug_list, io_text


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
        outcome = exchange(proc, payload, should_stop, self._timeout)
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
