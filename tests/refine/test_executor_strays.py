"""R-TR-3 / R-DRAIN-2 in the refinement: a driver killed between the rename of one of its
own entries (a tool-calling model entry, a tool result, a settlement's result) and that
entry's commit leaves a stray the model knows (`stray_step`, SPEC §19). A scan then
judges the agent by the unmoved tip, and the revived hop commits the stray before it
settles the window; the real run must match the model at every point of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from lernie_stateful.refine_view import tracked_paths
from lernie_stateful.refinement import World

from lernie_ref.core.vocab import MESSAGES_DIR, Point

P, C = 0, 1


def _run_until(world: World, key: int, point: str, suffix: str = "") -> None:
    """Step actor ``key`` until it passes ``point`` (whose detail ends with ``suffix``)."""
    while True:
        act = world.actors.get(key)
        assert act is not None, f"actor {key} ended before {point}"
        p = world.step(act)
        if p is not None and p.name == point and p.detail.endswith(suffix):
            return


def _start_child(world: World) -> int:
    """Start C's pending launch (the dispatch's, or a scan's revival); its actor key."""
    cid = world.ids[C]
    n = next(k for k, (_, aid) in enumerate(world.launcher.launches[world.started:])
             if aid == cid)
    act = world.start_launch(n)
    assert act is not None
    return act.key


def _child_at_work(world: World, child_script: list[str]) -> int:
    """`lernie prompt` P, which dispatches C and answers; P's driver runs to its end,
    then C's driver starts (C's model replies follow ``child_script``)."""
    world.script(P, "dispatch")
    for kind in child_script:
        world.script(C, kind)
    writer = world.operator_message(P)
    while writer.key in world.actors:
        world.step(writer)
    parent = world.start_launch(0)
    assert parent is not None
    while parent.key in world.actors:
        world.step(parent)
    return _start_child(world)


def _committed(world: World, suffix: str) -> list[bool]:
    """For C's entries whose name ends with ``suffix``: is each in the git index?"""
    wt = world.ws.worktree(world.ids[C] or "")
    tracked = tracked_paths(wt)
    return [f"{MESSAGES_DIR}/{n}" in tracked
            for n in sorted(p.name for p in (wt / MESSAGES_DIR).iterdir())
            if n.endswith(suffix)]


def _recover_and_finish(world: World) -> None:
    """The operator's scan after the crash, then everything runs to its end."""
    world.scan()
    world.run_all()
    assert world.stranded() == []
    view = world.real_view()[C]
    assert not view.stray_step and not view.uncommitted
    assert all(_committed(world, ".json"))  # every entry C's drivers wrote is on its branch
    assert any("driver[C] drain.stray-committed" in row for row in world.trace)


@pytest.mark.parametrize("entry", ["-choice.json", "-tool.json"])
def test_r_drain_2_a_driver_killed_between_its_entrys_rename_and_commit(
        tmp_path: Path, entry: str) -> None:
    """C's tool-calling model entry (or its tool's result) is renamed into `messages/`
    and its driver is killed before the commit. The abstraction shows the stray, the
    scan reports C's death to P by C's unmoved tip and revives C, whose hop commits the
    stray first (R-DRAIN-2) and carries on; the model matches every step."""
    world = World(tmp_path)
    child = _child_at_work(world, ["noop", "final"])
    _run_until(world, child, Point.TRANSCRIPT_RENAMED, entry)
    world.crash(world.actors[child])
    view = world.real_view()[C]
    assert view.stray_step and not view.stray_final
    assert _committed(world, entry)[-1:] == [False]
    world.scan()
    assert [k for _, k in world.real_view()[P].inbox] == ["died"]
    assert world.real_view()[C].returned_at_tip  # the obituary carries the unmoved tip
    world.run_all()
    assert world.stranded() == []
    view = world.real_view()[C]
    assert not view.stray_step and view.answered
    assert all(_committed(world, ".json"))
    assert any("driver[C] drain.stray-committed" in row for row in world.trace)


def test_r_step_2_a_settlement_killed_before_its_commit_leaves_a_stray_the_next_hop_commits(
        tmp_path: Path) -> None:
    """C dies inside its tool window; the scan reports it and revives C; the revived hop
    renames its settlement's `died` result and is killed before the commit. The tip has
    not moved since the obituary, so a second scan reports nothing new (the returned
    mark is at the tip) and revives C again; that hop commits the stray result first."""
    world = World(tmp_path)
    child = _child_at_work(world, ["noop", "final"])
    _run_until(world, child, Point.HOP_ASSISTANT_COMMITTED)
    world.crash(world.actors[child])
    world.scan()
    assert [k for _, k in world.real_view()[P].inbox] == ["died"]
    revived = _start_child(world)
    _run_until(world, revived, Point.TRANSCRIPT_RENAMED, "-tool.json")
    world.crash(world.actors[revived])
    view = world.real_view()[C]
    assert view.stray_step and view.returned_at_tip and view.call_due
    world.scan()
    assert [k for _, k in world.real_view()[P].inbox] == ["died"]  # no second obituary
    _recover_and_finish(world)


def test_r_scan_9_a_terminal_stray_after_a_stray_recovery_commit_is_not_sent_by_the_scan(
        tmp_path: Path) -> None:
    """C's tool result is renamed and its driver killed; the scan reports C's death and
    revives it; the revived hop commits that stray (the tip is now the stray recovery's
    commit), asks the model, renames C's final response and is killed before committing
    it. The tip is a stray recovery, but not the one that committed the final response:
    the scan sends no reply for it (R-SCAN-9) and revives C, whose next hop commits the
    response and sends its reply (R-DRAIN-8), once."""
    world = World(tmp_path)
    child = _child_at_work(world, ["noop", "final"])
    _run_until(world, child, Point.TRANSCRIPT_RENAMED, "-tool.json")
    world.crash(world.actors[child])
    world.scan()
    revived = _start_child(world)
    _run_until(world, revived, Point.TRANSCRIPT_RENAMED, "-choice.json")
    world.crash(world.actors[revived])
    view = world.real_view()[C]
    assert view.stray_final and not view.returned_at_tip
    world.scan()  # the machine's check: the model sends nothing for an uncommitted response
    assert [k for _, k in world.real_view()[P].inbox] == ["died"]
    _recover_and_finish(world)
    cid = world.ids[C] or ""
    p_messages = world.ws.worktree(world.ids[P] or "") / MESSAGES_DIR
    replies = [n for n in p_messages.iterdir() if n.name.endswith(f"-{cid}.md")
               and "epitaph: final-response" in n.read_text()]
    assert len(replies) == 1
