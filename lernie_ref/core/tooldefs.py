"""The tools a model may be offered, as declared to it (R-STEP-7, R-TOOL-1).

Names and input shapes are upstream's (``descriptions/tools/<name>.json`` of a
workspace's config commit): the same property names, the same required fields,
no other fields. The descriptions are this reference's own words.

Which of them an agent is offered is the workspace's ``tools`` setting
(``lernie.toml``, R-TOOL-1); ``bash`` is never on unless an operator lists it.
"""

from __future__ import annotations

ALL_TOOLS = ("message", "dispatch", "read_file", "cd", "apply_patch", "bash", "multi_tool")
"""Every tool this reference implements, in the order they are declared to a model."""

DEFAULT_TOOLS = ("message", "dispatch", "read_file", "cd", "apply_patch")
"""The tools an agent gets when ``lernie.toml`` says nothing: every contained tool, no shell."""

FILE_TOOLS = frozenset({"read_file", "cd", "apply_patch"})
"""Tools that only reach files inside the agent's worktree (R-TOOL-2)."""


def _schema(properties: dict[str, object], required: list[str]) -> dict[str, object]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _text(description: str) -> dict[str, object]:
    return {"type": "string", "description": description}


TOOL_SPECS: dict[str, dict[str, object]] = {
    "message": {
        "name": "message",
        "description": (
            "Deposit a message into another agent's inbox (by agent id or unique name) "
            "and make sure a driver runs for it."
        ),
        "input_schema": _schema(
            {
                "agent": _text("recipient agent id or unique name"),
                "content": _text("the message text"),
            },
            ["agent", "content"],
        ),
    },
    "dispatch": {
        "name": "dispatch",
        "description": "Fork a child agent of this agent with a goal; returns the child's id.",
        "input_schema": _schema(
            {
                "goal": _text("the child's first prompt"),
                "name": _text("an optional display name"),
            },
            ["goal"],
        ),
    },
    "read_file": {
        "name": "read_file",
        "description": (
            "Read a text file of your worktree. The path is relative to your current "
            "directory; absolute paths, `..` and symbolic links are refused. Long files "
            "are cut at the workspace's output cap, with a marker saying so."
        ),
        "input_schema": _schema(
            {"path": _text("the file, relative to your current directory")}, ["path"]
        ),
    },
    "cd": {
        "name": "cd",
        "description": (
            "Change your current directory inside your worktree. It stays where you put it "
            "for every later tool call (bash included) until you cd again. The path is "
            "relative to the current directory (`.` stays, an empty path or `/` is not "
            "accepted); `..` is refused, so to go up cd from the worktree root, which "
            "the result of every cd names. Returns the new directory relative to the "
            "worktree (`.` for its root)."
        ),
        "input_schema": _schema(
            {"path": _text("the directory to move to, relative to the current directory")},
            ["path"],
        ),
    },
    "apply_patch": {
        "name": "apply_patch",
        "description": (
            "Change files of your worktree with one patch envelope, applied whole or not "
            "at all. It starts with the line `*** Begin Patch` and ends with `*** End "
            "Patch`. Between them, any number of sections: `*** Add File: <path>` "
            "followed by the new file's lines, each prefixed with `+`; `*** Delete File: "
            "<path>`; `*** Update File: <path>`, optionally followed by `*** Move to: "
            "<path>`, then hunks. A hunk is lines prefixed with ` ` (context, unchanged), "
            "`-` (removed) or `+` (added); hunks are separated by a line `@@`, and `@@ "
            "<line>` first moves past the first file line equal to <line>. Give about three "
            "lines of context around each change so it matches one place. A line `*** End "
            "of File` after a hunk pins it to the file's end. Paths are relative to your "
            "current directory."
        ),
        "input_schema": _schema({"input": _text("the whole patch envelope")}, ["input"]),
    },
    "bash": {
        "name": "bash",
        "description": (
            "Run one shell command with `sh -c` in your current directory, stdin empty, no "
            "terminal. The result starts with `Exit code: N`, then stdout, then stderr "
            "after a line `--- stderr ---` when there is any. The command has a time limit; "
            "on expiry it is killed with every process it started, and no process it "
            "started outlives the call. Output beyond the workspace's cap is cut with a "
            "marker. Shell state (variables, `cd` inside the command) does not carry over "
            "to the next call; use the cd tool to move."
        ),
        "input_schema": _schema(
            {"command": _text("the whole command line, run by `sh -c`")}, ["command"]
        ),
    },
    "multi_tool": {
        "name": "multi_tool",
        "description": (
            "Run several tool calls in order in one step and get all their results in one. "
            "Each invocation is {name, input} as a single call would be; multi_tool itself "
            "cannot be nested. `on_failure`: `abort` (default) skips the invocations after "
            "the first failure, `run_all` runs them all. `execution` `serial` (default) is "
            "the only order this harness runs."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "invocations": {
                    "type": "array",
                    "description": "the calls to run, in order",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": _text("the tool's name"),
                            "input": {"type": "object", "description": "the tool's input"},
                        },
                        "required": ["name"],
                        "additionalProperties": False,
                    },
                },
                "on_failure": {
                    "type": "string",
                    "enum": ["abort", "run_all"],
                    "description": "abort (default) or run_all",
                },
                "execution": {
                    "type": "string",
                    "enum": ["serial", "parallel"],
                    "description": "serial (default); parallel runs serially here",
                },
            },
            "required": ["invocations"],
            "additionalProperties": False,
        },
    },
}
"""Each tool's declaration: ``name``, ``description``, ``input_schema`` (JSON Schema)."""


def tool_specs(names: tuple[str, ...]) -> list[dict[str, object]]:
    """The declarations of ``names``, in :data:`ALL_TOOLS` order."""
    return [TOOL_SPECS[name] for name in ALL_TOOLS if name in names]
