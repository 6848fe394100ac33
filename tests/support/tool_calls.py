"""The work tools' tests: a real agent in a real workspace, one call of a tool, what it
left on disk, and whether a process still runs."""

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


def snapshot(root: Path) -> dict[str, bytes]:
    """Every regular file below ``root`` but ``.git`` (a link is recorded by its target)."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath) / name
            if name == ".git" and Path(dirpath) == root:
                continue
            key = str(path.relative_to(root))
            out[key] = (b"link:" + os.readlink(path).encode()) if path.is_symlink() else (
                path.read_bytes())
    return out


def gone(pid: int) -> bool:
    """The process no longer runs (a zombie awaiting its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True
