"""R-TOOL-2, R-TOOL-3, R-TOOL-5, R-TOOL-6: read_file, cd, apply_patch and multi_tool on a
real worktree, their successes and their failures; a refused call changes nothing."""

from __future__ import annotations

import os

import pytest

from lernie_ref.core.tooldefs import DEFAULT_TOOLS
from lernie_ref.substrate.agentfs import CWD_FILE
from lernie_ref.substrate.workspace import Workspace
from tests.support.snapshots import worktree_files
from tests.support.tool_calls import agent, call, failed, ok, text, tree


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def test_r_tool_3_read_file_reads_relative_to_the_current_directory(ws: Workspace) -> None:
    ctx = agent(ws)
    (tree(ctx) / "src").mkdir()
    (tree(ctx) / "src" / "a.txt").write_bytes(b"alpha\n\xffbeta\n")
    assert ok(call(ctx, "read_file", path="src/a.txt")) == "alpha\n\ufffdbeta\n"
    assert ok(call(ctx, "cd", path="src")) == "src"
    assert ok(call(ctx, "read_file", path="a.txt")) == "alpha\n\ufffdbeta\n"
    assert ok(call(ctx, "read_file", path="./a.txt")) == "alpha\n\ufffdbeta\n"


def test_r_tool_3_read_file_failures_are_one_line_errors(ws: Workspace) -> None:
    ctx = agent(ws)
    (tree(ctx) / "d").mkdir()
    os.mkfifo(tree(ctx) / "fifo")
    assert failed(call(ctx, "read_file", path="nope")) == (
        "lernie tool read_file: nope: no such file")
    assert failed(call(ctx, "read_file", path="d")) == "lernie tool read_file: d: is a directory"
    assert "not a regular file" in failed(call(ctx, "read_file", path="fifo"))
    assert "missing field `path`" in failed(call(ctx, "read_file"))
    assert "unknown field" in failed(call(ctx, "read_file", path="x", extra="y"))
    assert "must be a string" in failed(call(ctx, "read_file", path=3))


def test_r_tool_3_read_file_over_the_cap_is_cut_with_a_marker(ws: Workspace) -> None:
    ctx = agent(ws, tool_output_cap=10)
    (tree(ctx) / "big").write_bytes(b"0123456789abcdef")
    out = ok(call(ctx, "read_file", path="big"))
    assert out == ("0123456789\n[lernie: file big cut at 10 of 16 bytes (tool_output_cap); "
                   "6 bytes not shown]")
    (tree(ctx) / "small").write_bytes(b"0123456789")
    assert ok(call(ctx, "read_file", path="small")) == "0123456789"


def test_r_tool_3_cd_persists_across_calls_and_falls_back_to_the_root(ws: Workspace) -> None:
    ctx = agent(ws)
    (tree(ctx) / "a" / "b").mkdir(parents=True)
    assert ok(call(ctx, "cd", path="a")) == "a"
    assert ok(call(ctx, "cd", path="b")) == "a/b"
    record = ws.steps_dir(ctx.agent_id) / CWD_FILE
    assert record.read_text() == "a/b\n"
    assert ok(call(ctx, "cd", path=".")) == "a/b"
    assert failed(call(ctx, "cd", path="missing")) == (
        "lernie tool cd: a/b/missing: no such directory")
    assert failed(call(ctx, "cd", path="")) == "lernie tool cd: an empty path names no directory"
    (tree(ctx) / "a" / "b" / "f").write_text("x")
    assert "not a directory" in failed(call(ctx, "cd", path="f"))
    assert record.read_text() == "a/b\n"  # a refused cd moves nothing
    (tree(ctx) / "a" / "b" / "f").unlink()
    (tree(ctx) / "a" / "b").rmdir()  # the directory went away: the root again
    assert ok(call(ctx, "cd", path="a")) == "a"


def test_r_tool_5_apply_patch_adds_updates_moves_and_deletes(ws: Workspace) -> None:
    ctx = agent(ws)
    (tree(ctx) / "src").mkdir()
    (tree(ctx) / "src" / "m.py").write_text("def f():\n    return 1\n")
    os.chmod(tree(ctx) / "src" / "m.py", 0o755)
    (tree(ctx) / "gone.txt").write_text("bye\n")
    result = ok(call(ctx, "apply_patch", input=patch(
        "*** Add File: docs/new.md", "+# New", "+",
        "*** Update File: src/m.py", "*** Move to: src/n.py", "@@ def f():",
        "-    return 1", "+    return 2",
        "*** Delete File: gone.txt",
    )))
    assert result == ("patch applied:\nadded docs/new.md\nupdated src/m.py and moved it to "
                      "src/n.py\ndeleted gone.txt")
    files = worktree_files(tree(ctx))
    assert files["docs/new.md"] == b"# New\n\n"
    assert files["src/n.py"] == b"def f():\n    return 2\n"
    assert "src/m.py" not in files and "gone.txt" not in files
    assert os.stat(tree(ctx) / "src" / "n.py").st_mode & 0o777 == 0o755
    assert not [n for n in files if n.endswith(".tmp")]


def test_r_tool_5_paths_are_relative_to_the_current_directory(ws: Workspace) -> None:
    ctx = agent(ws)
    (tree(ctx) / "pkg").mkdir()
    ok(call(ctx, "cd", path="pkg"))
    assert ok(call(ctx, "apply_patch", input=patch("*** Add File: x.py", "+x = 1"))) == (
        "patch applied:\nadded pkg/x.py")
    assert (tree(ctx) / "pkg" / "x.py").read_text() == "x = 1\n"


def test_r_tool_5_an_envelope_sees_its_own_earlier_operations(ws: Workspace) -> None:
    ctx = agent(ws)
    (tree(ctx) / "a").write_text("old\n")
    ok(call(ctx, "apply_patch", input=patch(
        "*** Delete File: a", "*** Add File: a", "+new",
        "*** Update File: a", "-new", "+newer")))
    assert (tree(ctx) / "a").read_text() == "newer\n"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (("*** Update File: a.txt", "-not there", "+x"), "do not match"),
        (("*** Update File: a.txt", "@@ nope", "+x"), "anchor 'nope' not found"),
        (("*** Add File: a.txt", "+dup"), "already exists"),
        (("*** Delete File: missing",), "no such file"),
        (("*** Update File: missing", "+x"), "no such file"),
        (("*** Update File: a.txt", "*** Move to: b.txt", " alpha"), "already exists"),
        (("*** Update File: bin.dat", " x"), "not UTF-8"),
        (("*** Add File: messages/999-x.json", "+{}"), "only the harness writes"),
        (("*** Add File: ../escape", "+x"), "climbs"),
        (("*** Add File: /etc/escape", "+x"), "absolute"),
        (("*** Add File: sub", "+x"), "is a directory"),
        (("*** Add File: a.txt/inner", "+x"), "not a directory"),
    ],
)
def test_r_tool_5_a_failing_operation_leaves_every_file_untouched(
    ws: Workspace, body: tuple[str, ...], needle: str
) -> None:
    ctx = agent(ws)
    (tree(ctx) / "a.txt").write_text("alpha\nbeta\n")
    (tree(ctx) / "b.txt").write_text("other\n")
    (tree(ctx) / "bin.dat").write_bytes(b"\xff\xfe")
    (tree(ctx) / "sub").mkdir()
    before = worktree_files(tree(ctx))
    # the failing operation comes after others that would succeed: all or nothing
    envelope = patch("*** Add File: first.txt", "+1", "*** Update File: b.txt", "-other",
                     "+changed", "*** Delete File: a.txt", "*** Add File: a.txt", "+alpha",
                     "+beta", *body)
    line = failed(call(ctx, "apply_patch", input=envelope))
    assert line.startswith("lernie tool apply_patch: ") and needle in line and "\n" not in line
    assert worktree_files(tree(ctx)) == before


def test_r_tool_5_a_malformed_envelope_leaves_every_file_untouched(ws: Workspace) -> None:
    ctx = agent(ws)
    (tree(ctx) / "a.txt").write_text("alpha\n")
    before = worktree_files(tree(ctx))
    for bad in ("*** Begin Patch\n*** Delete File: a.txt\n",
                "*** Delete File: a.txt\n*** End Patch\n",
                patch("*** Delete File: a.txt", "*** Bogus"),
                patch("*** Delete File: a.txt", "*** Update File: a.txt")):
        assert "lernie tool apply_patch: " in failed(call(ctx, "apply_patch", input=bad))
        assert worktree_files(tree(ctx)) == before


def test_r_tool_1_a_tool_not_enabled_is_an_error_result(ws: Workspace) -> None:
    ctx = agent(ws, tools=DEFAULT_TOOLS)
    line = failed(call(ctx, "bash", command="touch should-not-exist"))
    assert line == (
        "lernie tool bash: tool `bash` is not enabled for this agent (lernie.toml `tools`); "
        "the tools are `message`, `dispatch`, `read_file`, `cd` and `apply_patch`")
    assert failed(call(ctx, "frob")) == (
        'lernie tool frob: unknown tool "frob": the tools are `message`, `dispatch`, '
        "`read_file`, `cd` and `apply_patch`")


def test_r_tool_6_multi_tool_runs_in_order_and_aborts_after_a_failure(ws: Workspace) -> None:
    ctx = agent(ws)
    (tree(ctx) / "d").mkdir()
    result = call(ctx, "multi_tool", invocations=[
        {"name": "cd", "input": {"path": "d"}},
        {"name": "apply_patch", "input": {"input": patch("*** Add File: f", "+hi")}},
        {"name": "read_file", "input": {"path": "f"}},
        {"name": "read_file", "input": {"path": "missing"}},
        {"name": "cd", "input": {"path": "."}},
    ])
    assert result["is_error"] is True
    assert text(result).split("\n") == [
        "[1/5] cd: ok", "d",
        "[2/5] apply_patch: ok", "patch applied:", "added d/f",
        "[3/5] read_file: ok", "hi", "",
        "[4/5] read_file: failed", "lernie tool read_file: d/missing: no such file",
        "[5/5] cd: skipped",
    ]
    nested = call(ctx, "multi_tool", on_failure="run_all", invocations=[
        {"name": "multi_tool", "input": {"invocations": []}},
        {"name": "cd", "input": {"path": "."}},
    ])
    assert text(nested).split("\n")[0] == "[1/2] multi_tool: declined"
    assert "[2/2] cd: ok" in text(nested)
    assert "invocations" in failed(call(ctx, "multi_tool"))
