"""The tools a model may call (R-STEP-7, R-TOOL-1 to R-TOOL-8).

``message`` and ``dispatch`` are the very code of the ``lernie message`` and
``lernie dispatch`` verbs (:func:`~lernie_ref.actors.writer.message`,
:func:`~lernie_ref.actors.writer.dispatch`), with the calling agent as sender or
parent: a tool is a writer like any other, deposits before it probes (R-PROBE-2)
and never drives (R-PROBE-3).

The work tools act on the agent's worktree: ``read_file``, ``cd`` and
``apply_patch`` only through the guarded walk (:mod:`lernie_ref.substrate.agentfs`,
never outside the worktree, never through a link), ``bash`` as a real shell with
the operator's rights (:mod:`lernie_ref.substrate.shell`), in its own process group,
bounded in time and output, killed whole. ``multi_tool`` runs several of them in
one call. What a tool changes in the worktree is committed with its result
(R-TR-3's ``git add -A``): the transcript and the files are one history.

A tool failure is the model's business, not the hop's: it comes back as a
``tool_result`` with ``is_error: true`` and one line ``lernie tool <name>: <error>``.
A call to a tool that does not exist or is not enabled for the workspace
(``tools`` in ``lernie.toml``) gets an error result too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lernie_ref.actors.writer import dispatch, message
from lernie_ref.core.clock import Clock
from lernie_ref.core.entry import Block, tool_result_block
from lernie_ref.core.errors import (
    LernieError,
    PatchError,
    ToolError,
    ToolInputError,
    debug_quote,
)
from lernie_ref.core.parts import installed
from lernie_ref.core.patch import apply_hunks, join_lines, parse, relative_parts
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.launcher import Launcher
from lernie_ref.substrate.workspace import Workspace

if TYPE_CHECKING:  # the work tools' modules load with the first call that needs them
    from pathlib import Path

    from lernie_ref.core.ids import AgentId
    from lernie_ref.substrate.agentfs import AgentFiles, Parts


STOPPED_TEXT = (
    "interrupted: the agent was stopped (SIGTERM) while this call ran; "
    "every process it started was killed"
)


def _end_call(pid: int, ws_root: str | Path, agent_id: str) -> None:
    """Production's end of a ``bash`` call (:func:`lernie_ref.substrate.shell.end_call`)."""
    from lernie_ref.substrate import shell

    shell.end_call(pid, ws_root, agent_id)


def _kill_leftovers(ws_root: str | Path, agent_id: str) -> list[int]:
    """Production's kill of a dead executor's tool processes
    (:func:`lernie_ref.substrate.shell.kill_marked`)."""
    from lernie_ref.substrate import shell

    return shell.kill_marked(ws_root, agent_id)


def tool_parts() -> ToolParts:
    """The process default tool parts (production's unless a test build installed others
    through ``lernie_ref.testing.parts_installed``); read once when a hop's dependencies
    or a tool context are built."""
    return installed(ToolParts, TOOL_PARTS)


@dataclass(frozen=True)
class ToolContext:
    """What one tool call needs: the agent, its workspace and the hop's injected parts."""

    ws: Workspace
    agent_id: AgentId
    launcher: Launcher
    clock: Clock
    config: Config
    stop_requested: Callable[[], bool]
    env: Mapping[str, str]
    tools: tuple[str, ...] | None = None
    """The agent's tools (R-TOOL-1); ``None``: the workspace's ``tools``."""
    parts: ToolParts = field(default_factory=tool_parts)
    """The tools' replaceable collaborators (R-STEP-10)."""

    @property
    def enabled(self) -> tuple[str, ...]:
        return self.config.tools if self.tools is None else self.tools

    @property
    def files(self) -> AgentFiles:
        from lernie_ref.substrate.agentfs import AgentFiles

        return AgentFiles(self.ws.root, self.agent_id, self.ws.steps_dir(self.agent_id))


@dataclass(frozen=True)
class ToolOutcome:
    text: str
    is_error: bool


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


def _listing(names: tuple[str, ...]) -> str:
    quoted = [f"`{n}`" for n in names]
    if not quoted:
        return "none"
    if len(quoted) == 1:
        return quoted[0]
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _cut_marker(what: str, kept: int, total: int) -> str:
    return (
        f"\n[lernie: {what} cut at {kept} of {total} bytes (tool_output_cap); "
        f"{total - kept} bytes not shown]"
    )


def _text_of(data: bytes) -> str:
    return data.decode("utf-8", "replace")


# --------------------------------------------------------------------- the tools


def _read_file(raw: object, ctx: ToolContext) -> ToolOutcome:
    """R-TOOL-3: a file of the worktree, relative to the current directory, capped."""
    from lernie_ref.substrate.agentfs import shown

    args = _fields(raw, ("path",), ())
    files = ctx.files
    parts = files.resolve(args["path"])
    cap = ctx.config.tool_output_cap
    data, total = files.read(parts, cap)
    text = _text_of(data)
    if total > len(data):
        text += _cut_marker(f"file {shown(parts)}", len(data), total)
    return ToolOutcome(text, False)


def _cd(raw: object, ctx: ToolContext) -> ToolOutcome:
    """R-TOOL-3: move the agent's current directory; it persists across steps."""
    from lernie_ref.substrate.agentfs import shown

    args = _fields(raw, ("path",), ())
    if not args["path"].strip():
        raise ToolError("an empty path names no directory")
    files = ctx.files
    parts = files.resolve(args["path"])
    files.require_dir(parts)
    files.set_cwd(parts)
    return ToolOutcome(shown(parts), False)


def _apply_patch(raw: object, ctx: ToolContext) -> ToolOutcome:
    """R-TOOL-5: one envelope, applied whole or not at all."""
    from lernie_ref.substrate.agentfs import new_file_mode, shown

    args = _fields(raw, ("input",), ())
    ops = parse(args["input"])
    files = ctx.files
    cwd = files.cwd()
    overlay: dict[Parts, tuple[bytes, int] | None] = {}
    done: list[str] = []

    def now(parts: Parts) -> tuple[bytes, int] | None:
        if parts in overlay:
            return overlay[parts]
        return files.current(parts)

    def where(text: str) -> Parts:
        parts = cwd + relative_parts(text)
        files.check_writable(parts)
        return parts

    for op in ops:
        parts = where(op.path)
        if op.kind == "add":
            if now(parts) is not None:
                raise PatchError(f"Add File {shown(parts)}: the file already exists")
            overlay[parts] = (join_lines(op.lines).encode("utf-8"), new_file_mode())
            done.append(f"added {shown(parts)}")
        elif op.kind == "delete":
            if now(parts) is None:
                raise PatchError(f"Delete File {shown(parts)}: no such file")
            overlay[parts] = None
            done.append(f"deleted {shown(parts)}")
        else:
            old = now(parts)
            if old is None:
                raise PatchError(f"Update File {shown(parts)}: no such file")
            try:
                text = old[0].decode("utf-8")
            except UnicodeDecodeError:
                raise PatchError(f"Update File {shown(parts)}: not UTF-8 text") from None
            new = apply_hunks(text, op.hunks, shown(parts)) if op.hunks else text
            target = parts
            if op.move_to is not None:
                target = where(op.move_to)
                if target != parts and now(target) is not None:
                    raise PatchError(f"Move to {shown(target)}: the file already exists")
                overlay[parts] = None
            overlay[target] = (new.encode("utf-8"), old[1])
            done.append(
                f"updated {shown(parts)}"
                + (f" and moved it to {shown(target)}" if target != parts else "")
            )
    files.write_all(overlay)
    return ToolOutcome("patch applied:\n" + "\n".join(done), False)


def _bash(raw: object, ctx: ToolContext) -> ToolOutcome:
    """R-TOOL-4: ``sh -c`` in the current directory; bounded; its processes killed whole."""
    from lernie_ref.substrate import shell

    args = _fields(raw, ("command",), ())
    files = ctx.files
    cwd = files.cwd()
    directory = ctx.ws.worktree(ctx.agent_id).joinpath(*cwd)
    env = shell.tool_env(ctx.env, ctx.ws.root, ctx.agent_id)
    try:
        out = shell.run_shell(
            args["command"],
            directory,
            env,
            timeout=ctx.config.tool_timeout,
            cap=ctx.config.tool_output_cap,
            should_stop=ctx.stop_requested,
            ws_root=ctx.ws.root,
            agent_id=ctx.agent_id,
            end=ctx.parts.end_call,
        )
    except OSError as exc:
        raise ToolError(f"could not start sh: {exc.strerror or exc}") from None
    if out.ended == "timeout":
        head = (
            f"Exit code: none (killed after {ctx.config.tool_timeout:g} s, the tool_timeout, "
            "with every process it started)"
        )
    elif out.ended == "stopped":
        head = STOPPED_TEXT
    elif out.returncode is not None and out.returncode < 0:
        head = f"Exit code: none (the shell was killed by signal {-out.returncode})"
    else:
        head = f"Exit code: {out.returncode}"
    text = head + "\n" + _text_of(out.stdout)
    if out.stdout_total > len(out.stdout):
        text += _cut_marker("stdout", len(out.stdout), out.stdout_total)
    if out.stderr_total:
        text += ("" if text.endswith("\n") else "\n") + "--- stderr ---\n"
        text += _text_of(out.stderr)
        if out.stderr_total > len(out.stderr):
            text += _cut_marker("stderr", len(out.stderr), out.stderr_total)
    return ToolOutcome(text, not (out.ended == "exited" and out.returncode == 0))


def _message(raw: object, ctx: ToolContext) -> ToolOutcome:
    args = _fields(raw, ("agent", "content"), ())
    message(ctx.ws, args["agent"], args["content"], ctx.agent_id, ctx.launcher, ctx.clock)
    return ToolOutcome(json.dumps({"status": "deposited"}, separators=(",", ":")), False)


def _dispatch(raw: object, ctx: ToolContext) -> ToolOutcome:
    args = _fields(raw, ("goal",), ("name",))
    child = dispatch(ctx.ws, ctx.agent_id, args["goal"], args.get("name", ""), ctx.launcher,
                     ctx.clock)
    text = json.dumps({"status": "dispatched", "agent": child}, separators=(",", ":"))
    return ToolOutcome(text, False)


def _multi_tool(raw: object, ctx: ToolContext) -> ToolOutcome:
    """R-TOOL-6: the invocations in order, one result; ``abort`` skips after a failure."""
    if not isinstance(raw, dict):
        raise ToolInputError("invalid input JSON: expected an object")
    unknown = sorted(set(raw) - {"invocations", "on_failure", "execution"})
    if unknown:
        raise ToolInputError(f"invalid input JSON: unknown field {debug_quote(str(unknown[0]))}")
    calls = raw.get("invocations")
    if not isinstance(calls, list):
        raise ToolInputError("invalid input JSON: missing field `invocations` (an array)")
    on_failure = raw.get("on_failure", "abort")
    if on_failure not in ("abort", "run_all"):
        raise ToolInputError("invalid input JSON: `on_failure` is `abort` or `run_all`")
    if raw.get("execution", "serial") not in ("serial", "parallel"):
        raise ToolInputError("invalid input JSON: `execution` is `serial` or `parallel`")
    sections: list[str] = []
    failed = False
    skip = False
    total = len(calls)
    for index, call in enumerate(calls, 1):
        name = call.get("name") if isinstance(call, dict) else None
        label = name if isinstance(name, str) else "?"
        if skip or ctx.stop_requested():
            sections.append(f"[{index}/{total}] {label}: skipped")
            continue
        if not isinstance(call, dict) or not isinstance(name, str) or set(call) - {
            "name", "input"
        }:
            outcome = ToolOutcome(
                "lernie tool multi_tool: an invocation is {name, input?}", True
            )
            status = "declined"
        elif name == "multi_tool":
            outcome = ToolOutcome("lernie tool multi_tool: multi_tool cannot be nested", True)
            status = "declined"
        else:
            outcome = _run(name, call.get("input", {}), ctx)
            status = "failed" if outcome.is_error else "ok"
            if outcome.is_error and not _enabled(name, ctx):
                status = "declined"
        sections.append(f"[{index}/{total}] {label}: {status}\n{outcome.text}")
        if outcome.is_error:
            failed = True
            skip = on_failure == "abort"
    return ToolOutcome("\n".join(sections) if sections else "(no invocations)", failed)


@dataclass(frozen=True)
class ToolParts:
    """The work tools' replaceable collaborators (R-STEP-10), production's by default:
    ``apply_patch`` (R-TOOL-5: the tool itself, one envelope applied whole or not at all),
    ``end_call`` (R-TOOL-4: what kills a ``bash`` call's processes when it ends) and
    ``kill_leftovers`` (R-TOOL-7: the hop's kill of a dead executor's tool processes
    before it settles their calls)."""

    apply_patch: Callable[[object, ToolContext], ToolOutcome] = _apply_patch
    end_call: Callable[[int, str | Path, str], None] = _end_call
    kill_leftovers: Callable[[str | Path, str], list[int]] = _kill_leftovers


TOOL_PARTS = ToolParts()
"""Production's tool parts."""


def _apply_patch_part(raw: object, ctx: ToolContext) -> ToolOutcome:
    """``apply_patch`` as the context's parts have it (R-STEP-10)."""
    return ctx.parts.apply_patch(raw, ctx)


TOOLS: dict[str, Callable[[object, ToolContext], ToolOutcome]] = {
    "message": _message,
    "dispatch": _dispatch,
    "read_file": _read_file,
    "cd": _cd,
    "apply_patch": _apply_patch_part,
    "bash": _bash,
    "multi_tool": _multi_tool,
}


def _enabled(name: str, ctx: ToolContext) -> bool:
    return name in ctx.enabled and name in TOOLS


def _run(name: object, raw: object, ctx: ToolContext) -> ToolOutcome:
    shown_name = name if isinstance(name, str) else repr(name)
    try:
        if not isinstance(name, str) or name not in TOOLS:
            quoted = debug_quote(name) if isinstance(name, str) else repr(name)
            raise ToolInputError(
                f"unknown tool {quoted}: the tools are {_listing(ctx.enabled)}"
            )
        if name not in ctx.enabled:
            raise ToolInputError(
                f"tool `{name}` is not enabled for this agent (lernie.toml `tools`); "
                f"the tools are {_listing(ctx.enabled)}"
            )
        return TOOLS[name](raw, ctx)
    except LernieError as exc:
        return ToolOutcome(f"lernie tool {shown_name}: {exc}", True)
    except OSError as exc:  # a file system failure is the call's, never the hop's
        where = f"{exc.filename}: " if exc.filename else ""
        return ToolOutcome(f"lernie tool {shown_name}: {where}{exc.strerror or exc}", True)


def run_tool(block: Block, ctx: ToolContext) -> Block:
    """Run one ``tool_use`` block for ``ctx.agent_id``; return its ``tool_result`` block."""
    call_id = str(block.get("id", ""))
    outcome = _run(block.get("name"), block.get("input"), ctx)
    return tool_result_block(call_id, outcome.text, is_error=outcome.is_error)
