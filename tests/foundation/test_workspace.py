"""Workspace layout, registry, names, marks and the library writers (R-WS, R-ID, R-PROBE)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lernie_ref.actors.readings import mark_value
from lernie_ref.core.clock import FixedClock
from lernie_ref.core.errors import (
    AmbiguousName,
    NotAnAgentId,
    NotAWorkspace,
    OldLayout,
    UnknownAgent,
    WorkspaceError,
)
from lernie_ref.core.ids import depth, parent_of
from lernie_ref.inbox import (
    ProbeOutcome,
    RecordingLauncher,
    cli_dispatch,
    cli_message,
    cli_prompt,
)
from lernie_ref.substrate.workspace import Workspace, create_workspace, require_workspace
from tests.support.snapshots import snapshot
from tests.support.workspaces import add_child, add_root


def test_r_ws_2_require_workspace(tmp_path: Path, ws: Workspace) -> None:
    assert require_workspace(ws.root).root == ws.root
    with pytest.raises(NotAWorkspace):
        require_workspace(tmp_path / "nowhere")
    (tmp_path / "old" / "root" / ".git").mkdir(parents=True)
    with pytest.raises(OldLayout):
        require_workspace(tmp_path / "old")


def test_r_ws_1_new_cleans_up_after_a_failure(tmp_path: Path) -> None:
    class Broken:
        def run(self, dest: Path, args: object, **kw: object) -> object:
            raise WorkspaceError("git is broken")

    target = tmp_path / "ws"
    with pytest.raises(WorkspaceError):
        create_workspace(target, Broken())  # type: ignore[arg-type]
    assert not target.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(WorkspaceError):
        create_workspace(empty, Broken())  # type: ignore[arg-type]
    assert list(empty.iterdir()) == []


def test_r_ws_3_registry_names_and_tips(ws: Workspace, fixed_clock: FixedClock) -> None:
    root = add_root(ws, fixed_clock, name="boss")
    child = add_child(ws, root, fixed_clock, name="kid")
    plain = add_root(ws, fixed_clock)
    assert ws.agent_ids() == sorted([root, child, plain])
    assert (parent_of(child), depth(child), depth(root)) == (root, 1, 0)
    assert ws.agent_name(root) == "boss" and ws.agent_name(plain) == ""
    assert ws.agent_name("missing") == ""
    assert ws.agent_exists(root) and not ws.agent_exists("missing")
    assert not ws.agent_exists("../x")
    assert len(ws.branch_tip(child)) == 40
    assert ws.worktree(child) == ws.root / "agents" / child
    assert ws.driver_log(child) == ws.root / "steps" / child / "driver.log"
    assert mark_value(ws, "returned", child) is None
    ws.set_mark("returned", child, ws.branch_tip(child))
    assert mark_value(ws, "returned", child) is not None


def test_r_id_6_resolution(ws: Workspace, fixed_clock: FixedClock) -> None:
    root = add_root(ws, fixed_clock, name="boss")
    twin_a = add_root(ws, fixed_clock, name="twin")
    twin_b = add_root(ws, fixed_clock, name="twin")
    assert ws.resolve_name(root) == root
    assert ws.resolve_name("boss") == root
    assert ws.resolve_name("nobody") == "nobody"
    assert ws.resolve_name("") == ""
    with pytest.raises(AmbiguousName) as caught:
        ws.resolve_name("twin")
    assert caught.value.candidates == tuple(sorted([twin_a, twin_b]))
    assert Workspace(ws.root.parent / "nowhere").resolve_name("boss") == "boss"


def test_r_id_5_minted_ids_never_collide_silently(ws: Workspace) -> None:
    clock = FixedClock(1_783_728_000 * 10**9)
    agent = ws.mint_root(clock)
    assert agent == "20260711T000000Z-00000000"
    ws.create_root_agent(agent, "", "g")
    with pytest.raises(WorkspaceError):
        ws.mint_root(FixedClock(1_783_728_000 * 10**9))
    assert ws.mint_child(agent, clock) == f"{agent}-20260711T000000Z-00000000"


@pytest.mark.parametrize("bad", ["a\0b", "..", "/abs", ""])
def test_r_id_3_library_writers_decline_hostile_ids(
    ws: Workspace, fixed_clock: FixedClock, bad: str
) -> None:
    add_root(ws, fixed_clock)
    launcher = RecordingLauncher()
    before = snapshot(ws.root)
    with pytest.raises(NotAnAgentId):
        cli_message(ws, bad, "x", "user", launcher, fixed_clock)
    with pytest.raises(NotAnAgentId):
        cli_dispatch(ws, bad, "x", "", launcher, fixed_clock)
    assert snapshot(ws.root) == before and launcher.launches == []


def test_r_probe_2_writers_deposit_before_they_probe(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    seen: list[list[str]] = []

    def at_launch(root: Path, agent: str) -> None:
        seen.append(sorted(p.name for p in (root / "inbox" / agent).iterdir()))

    launcher = RecordingLauncher(at_launch)
    root = cli_prompt(ws, "hello", "", launcher, fixed_clock)
    assert cli_message(ws, root, "more", "user", launcher, fixed_clock) is ProbeOutcome.LAUNCHED
    child = cli_dispatch(ws, root, "go", "", launcher, fixed_clock)
    assert seen == [["user-001.md"], ["user-001.md", "user-002.md"], [f"{root}-001.md"]]
    assert launcher.launches == [(ws.root, root), (ws.root, root), (ws.root, child)]


def test_r_id_4_unknown_recipient_creates_nothing(ws: Workspace, fixed_clock: FixedClock) -> None:
    launcher = RecordingLauncher()
    before = snapshot(ws.root)
    with pytest.raises(UnknownAgent):
        cli_message(ws, "20990101T000000Z-00000000", "x", "user", launcher, fixed_clock)
    with pytest.raises(UnknownAgent):
        cli_dispatch(ws, "20990101T000000Z-00000000", "x", "", launcher, fixed_clock)
    assert snapshot(ws.root) == before


@pytest.mark.parametrize(
    "name", ["a b", "a/b", "..", "20260101T000000Z", "20260101T000000Z-x", "t\0"]
)
def test_r_id_8_unusable_names_are_refused(
    ws: Workspace, fixed_clock: FixedClock, name: str
) -> None:
    before = snapshot(ws.root)
    with pytest.raises(WorkspaceError):
        cli_prompt(ws, "hi", name, RecordingLauncher(), fixed_clock)
    assert snapshot(ws.root) == before
