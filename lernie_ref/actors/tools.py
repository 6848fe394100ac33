"""The built-in tools a model may call: ``message`` and ``dispatch`` (R-STEP-7).

They are the very code of the ``lernie message`` and ``lernie dispatch`` verbs
(:func:`~lernie_ref.actors.writer.message`, :func:`~lernie_ref.actors.writer.dispatch`),
with the calling agent as sender or parent: a tool is a writer like any other,
deposits before it probes (R-PROBE-2) and never drives (R-PROBE-3).

A tool failure is the model's business, not the hop's: it comes back as a
``tool_result`` with ``is_error: true`` and the error's one line. A call to any
other name gets an error result too (no other tools exist).
"""

from __future__ import annotations

import json

from lernie_ref.actors.writer import dispatch, message
from lernie_ref.core.clock import Clock
from lernie_ref.core.entry import Block, tool_result_block
from lernie_ref.core.errors import (
    LernieError,
    ToolInputError,
    debug_quote,
)
from lernie_ref.substrate.launcher import Launcher
from lernie_ref.substrate.workspace import Workspace

TOOL_NAMES = ("message", "dispatch")




def _fields(raw: object, required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise ToolInputError("invalid input JSON: expected an object")
    unknown = sorted(set(raw) - set(required) - set(optional))
    if unknown:
        raise ToolInputError(f"invalid input JSON: unknown field {debug_quote(str(unknown[0]))}")
    out: dict[str, str] = {}
    for key in required + optional:
        if key not in raw:
            if key in required:
                raise ToolInputError(f"invalid input JSON: missing field `{key}`")
            continue
        value = raw[key]
        if not isinstance(value, str):
            raise ToolInputError(f"invalid input JSON: field `{key}` must be a string")
        out[key] = value
    return out


def run_tool(block: Block, ws: Workspace, agent_id: str, launcher: Launcher, clock: Clock) -> Block:
    """Run one ``tool_use`` block for ``agent_id``; return its ``tool_result`` block."""
    call_id = str(block.get("id", ""))
    name = block.get("name")
    try:
        if name == "message":
            args = _fields(block.get("input"), ("agent", "content"), ())
            message(ws, args["agent"], args["content"], agent_id, launcher, clock)
            text = json.dumps({"status": "deposited"}, separators=(",", ":"))
        elif name == "dispatch":
            args = _fields(block.get("input"), ("goal",), ("name",))
            child = dispatch(ws, agent_id, args["goal"], args.get("name", ""), launcher, clock)
            text = json.dumps({"status": "dispatched", "agent": child}, separators=(",", ":"))
        else:
            shown = debug_quote(name) if isinstance(name, str) else repr(name)
            raise ToolInputError(f"unknown tool {shown}: the tools are `message` and `dispatch`")
    except LernieError as exc:
        return tool_result_block(call_id, f"lernie tool {name}: {exc}", is_error=True)
    return tool_result_block(call_id, text, is_error=False)
