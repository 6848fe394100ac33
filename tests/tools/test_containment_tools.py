"""R-TOOL-2: the file tools never reach outside the agent's worktree: links, `..`, absolute
paths and `.git` are refused with a clear error, and nothing outside is read or written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lernie_ref.substrate.workspace import Workspace
from tests.support.snapshots import worktree_files
from tests.support.tool_calls import agent, call, failed, tree


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    place = tmp_path / "outside"
    place.mkdir()
    (place / "secret").write_text("do not read\n")
    return place


def test_r_tool_2_links_are_refused_by_every_file_tool(ws: Workspace, outside: Path) -> None:
    ctx = agent(ws)
    (tree(ctx) / "out").symlink_to(outside)
    (tree(ctx) / "secret-link").symlink_to(outside / "secret")
    (tree(ctx) / "real").mkdir()
    (tree(ctx) / "real" / "up").symlink_to(tree(ctx))  # a link back inside: refused as well
    refusals = [
        call(ctx, "read_file", path="secret-link"),
        call(ctx, "read_file", path="out/secret"),
        call(ctx, "cd", path="out"),
        call(ctx, "cd", path="real/up"),
        call(ctx, "apply_patch", input=patch("*** Add File: out/new", "+x")),
        call(ctx, "apply_patch", input=patch("*** Update File: secret-link", "-do not read",
                                             "+written")),
        call(ctx, "apply_patch", input=patch("*** Delete File: secret-link")),
    ]
    for result in refusals:
        line = failed(result)
        assert "is a symbolic link; refused: file tools never follow a link" in line, line
        assert "do not read" not in line
    assert sorted(os.listdir(outside)) == ["secret"]
    assert (outside / "secret").read_text() == "do not read\n"
    assert (tree(ctx) / "secret-link").is_symlink()


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/hostname", ".git/config", "x\0y"])
def test_r_tool_2_escaping_paths_are_refused_as_text(ws: Workspace, path: str) -> None:
    ctx = agent(ws)
    before = worktree_files(tree(ctx))
    for result in (call(ctx, "read_file", path=path), call(ctx, "cd", path=path),
                   call(ctx, "apply_patch", input=patch(f"*** Add File: {path}", "+x"))):
        assert "refused" in failed(result) or "NUL" in failed(result)
    assert worktree_files(tree(ctx)) == before


def test_r_tool_2_a_link_swapped_into_the_current_directory_is_not_followed(
    ws: Workspace, outside: Path
) -> None:
    """The record of the current directory names a path; a link put in its place later
    reads as no longer a real directory: the tools start from the root again."""
    ctx = agent(ws)
    (tree(ctx) / "work").mkdir()
    assert failed(call(ctx, "read_file", path="secret")).endswith("no such file")
    call(ctx, "cd", path="work")
    (tree(ctx) / "work").rmdir()
    (tree(ctx) / "work").symlink_to(outside)
    line = failed(call(ctx, "read_file", path="secret"))
    assert line == "lernie tool read_file: secret: no such file"  # at the root, not outside
    assert "refused" in failed(call(ctx, "read_file", path="work/secret"))
