"""R-WS-7: nothing is written outside the workspace, whatever below its root is a symlink.

Each protocol directory or file in turn is moved outside the workspace and replaced by a
symlink to where it went (the link's target is a realistic copy, so only the link stands
between the protocol and an outside write). Then every verb runs, drivers included, and
the outside tree must be byte for byte what it was. The workspace root itself may be a
symlink and then everything works.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lernie_ref.core.errors import ContainmentError
from lernie_ref.substrate import guarded
from tests.support.runners import run_cli_bytes
from tests.support.scenarios import World, make_world
from tests.support.snapshots import snapshot_with_mtimes
from tests.support.waits import wait_quiescent

TARGETS = [
    "inbox",
    "inbox/{root}",  # the root's inbox, also the child's reply's inbox
    "inbox/{child}",
    "steps",
    "steps/{root}",
    "steps/{root}/driver.log",
    "steps/{root}/staging.json",
    "agents",
    "agents/{root}",
    "agents/{root}/messages",
    "agents/{child}",
    "agents/{root}/goal.md",
    "lernie.toml",
    "repo.git",
    "repo.git/worktrees/{root}",
]


def _link_out(world: World, rel: str) -> Path:
    """Move ``rel`` outside (or make an empty one there) and leave a symlink in its place."""
    inside = world.ws.root / rel
    away = world.outside / rel.replace("/", "__")
    if inside.exists():
        shutil.move(str(inside), str(away))
    elif rel.endswith((".json", ".log", ".md")):
        away.write_bytes(b"outside file\n")
    else:
        away.mkdir()
    inside.symlink_to(away)
    return away


def _every_verb(world: World) -> None:
    ws, root, child = str(world.ws.root), world.root, world.child
    run_cli_bytes("message", ws, root, "a message to the root")
    run_cli_bytes("message", ws, "kid", "a message to the child, by name")
    run_cli_bytes("advance", ws, root)
    run_cli_bytes("advance", ws, child)
    run_cli_bytes("dispatch", ws, root, "a new child", "--name", "second")
    run_cli_bytes("prompt", ws, "a new root")
    run_cli_bytes("message", ws, root, "-", stdin=b"from standard input")
    run_cli_bytes("scan", ws)
    run_cli_bytes("status", ws)
    run_cli_bytes("log", ws, root)
    run_cli_bytes("stop", ws, root)
    wait_quiescent(world.ws)
    run_cli_bytes("advance", ws, root)
    run_cli_bytes("scan", ws)
    wait_quiescent(world.ws)


@pytest.mark.parametrize("template", TARGETS)
def test_r_ws_7_a_symlinked_protocol_path_gets_no_write_outside(
    tmp_path: Path, template: str
) -> None:
    world = make_world(tmp_path)
    rel = template.format(root=world.root, child=world.child)
    _link_out(world, rel)
    before = snapshot_with_mtimes(world.outside)
    _every_verb(world)
    assert snapshot_with_mtimes(world.outside) == before


def test_r_ws_7_a_refused_link_is_one_line_naming_the_path(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    _link_out(world, f"inbox/{world.root}")
    proc = run_cli_bytes("message", str(world.ws.root), world.root, "x")
    assert proc.returncode == 1 and proc.stdout == b""
    line = proc.stderr.decode()
    assert line.count("\n") == 1
    assert line.startswith(f"lernie message: {world.ws.root}/inbox/{world.root} is a symbolic link")


def test_r_ws_7_the_workspace_root_may_be_a_symlink(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    alias = tmp_path / "alias"
    alias.symlink_to(world.ws.root)
    assert run_cli_bytes("message", str(alias), world.root, "via the alias").returncode == 0
    wait_quiescent(alias)
    log = run_cli_bytes("log", str(alias), world.root)
    assert b"via the alias" in log.stdout


def test_r_ws_7_guarded_walk_refuses_links_and_non_directories(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "file").write_bytes(b"")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with guarded.walk(tmp_path, ("real",)):
        pass
    with pytest.raises(ContainmentError, match="is a symbolic link"):
        guarded.walk(tmp_path, ("link", "sub"), create=True)
    assert not (tmp_path / "real" / "sub").exists()
    with pytest.raises(NotADirectoryError):
        guarded.walk(tmp_path, ("file",))
    with pytest.raises(ContainmentError, match="one path component"):
        guarded.walk(tmp_path, ("..",))
    with guarded.walk(tmp_path, ()) as top:
        with pytest.raises(ContainmentError, match="is a symbolic link"):
            top.open("link", os.O_RDONLY)
        os.mkfifo(tmp_path / "fifo")
        with pytest.raises(ContainmentError, match="not a regular file"):
            top.open("fifo", os.O_RDONLY)  # refused, and never blocks


def test_r_ws_7_a_link_swapped_in_after_the_walk_changes_nothing(tmp_path: Path) -> None:
    """Race-freedom: the write uses the descriptor the walk verified, not the name."""
    (tmp_path / "box").mkdir()
    (tmp_path / "away").mkdir()
    with guarded.walk(tmp_path, ("box",)) as box:
        os.rename(tmp_path / "box", tmp_path / "box.old")
        (tmp_path / "box").symlink_to(tmp_path / "away")
        box.write_new("f", b"inside")
    assert os.listdir(tmp_path / "away") == []
    assert (tmp_path / "box.old" / "f").read_bytes() == b"inside"


def _step_by_step(root: str, parts: tuple[str, ...], create: bool) -> guarded.Dir:
    """The walk one component at a time from the opened root (the oracle of the walk that
    opens its first component with the root in one call)."""
    return guarded.open_root(root).down(parts, create=create)


def _walk_outcome(
    walk: object, tree: Path, root: str, parts: tuple[str, ...], create: bool
) -> tuple[str, ...]:
    """What a walk did: the directory it opened (its shown path and where it is), or its
    error's type, text and file name; and what it created. The tree's own name is ``<t>``."""
    def shown(text: object) -> str:
        return str(text).replace(str(tree), "<t>")

    try:
        with walk(root, parts, create=create) as where:  # type: ignore[operator]
            real = os.readlink(f"/proc/self/fd/{where.fd}")
            got: tuple[str, ...] = ("opened", shown(where.path), shown(real))
    except (OSError, ContainmentError) as exc:
        name = getattr(exc, "filename", None)
        got = (type(exc).__name__, shown(exc), shown(name))
    made = sorted(shown(p) for p in tree.rglob("*"))
    return (*got, *made)


@pytest.mark.parametrize("create", [False, True])
@pytest.mark.parametrize("root_form", ["plain", "slash", "alias"])
@pytest.mark.parametrize("first", ["dir", "link", "file", "missing", "fifo", "loop", ".."])
def test_r_ws_7_the_first_step_taken_with_the_root_answers_as_two_steps(
    tmp_path: Path, first: str, root_form: str, create: bool
) -> None:
    """The walk opens the root and its first component in one call (links followed in the
    root's own path, refused at the component): every outcome is the step-by-step walk's,
    the directory opened, the error (type, text, path) and what was created."""
    outcomes = []
    for side, walk in (("a", guarded.walk), ("b", _step_by_step)):
        tree = tmp_path / side
        ws = tree / "ws"
        (ws / "real").mkdir(parents=True)
        (tree / "outside").mkdir()
        if first == "dir":
            (ws / "inbox").mkdir()
        elif first == "link":
            (ws / "inbox").symlink_to(tree / "outside")
        elif first == "file":
            (ws / "inbox").write_bytes(b"")
        elif first == "fifo":
            os.mkfifo(ws / "inbox")
        elif first == "loop":
            (ws / "inbox").symlink_to(ws / "inbox")
        root = {"plain": str(ws), "slash": f"{ws}/", "alias": str(tree / "alias")}[root_form]
        if root_form == "alias":
            (tree / "alias").symlink_to(ws)
        parts = ("..", "x") if first == ".." else ("inbox", "agent")
        outcomes.append(_walk_outcome(walk, tree, root, parts, create))
    assert outcomes[0] == outcomes[1]


@given(
    path=st.lists(st.sampled_from(["/", "ws", ".", "a b", "//"]), max_size=4).map("".join),
    name=st.lists(st.sampled_from(["/", "inbox", ".", "x", ""]), max_size=3).map("".join),
)
def test_r_ws_7_a_directory_names_its_entries_as_os_path_join_does(path: str, name: str) -> None:
    """What an error message names (a directory's path and an entry in it) is the path
    ``os.path.join`` would give, whatever the two texts are."""
    assert guarded.Dir(-1, path).show(name) == os.path.join(path, name)
