"""The work tools' tests: a real agent in a real workspace and one call of a tool."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from lernie_ref.actors.tools import ToolContext, run_tool
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.entry import Block
from lernie_ref.core.tooldefs import ALL_TOOLS
from lernie_ref.inbox import RecordingLauncher, cli_prompt
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.workspace import Workspace


def agent(ws: Workspace, *, stop: object = None, **settings: object) -> ToolContext:
    """A fresh root agent of ``ws`` (its worktree exists) and a context with every tool."""
    root = cli_prompt(ws, "work", "", RecordingLauncher())
    config = replace(Config(tools=ALL_TOOLS), **settings)  # type: ignore[arg-type]
    should_stop = stop if callable(stop) else (lambda: False)
    return ToolContext(ws, root, RecordingLauncher(), SystemClock(), config, should_stop,
                       dict(os.environ))


def call(ctx: ToolContext, name: str, **tool_input: object) -> Block:
    return run_tool({"type": "tool_use", "id": "t-1", "name": name, "input": tool_input}, ctx)


def text(result: Block) -> str:
    content = result["content"]
    assert isinstance(content, list)
    return str(content[0]["text"])


def ok(result: Block) -> str:
    assert result["is_error"] is False, text(result)
    return text(result)


def failed(result: Block) -> str:
    assert result["is_error"] is True, text(result)
    line = text(result)
    return line


def tree(ctx: ToolContext) -> Path:
    return ctx.ws.worktree(ctx.agent_id)
