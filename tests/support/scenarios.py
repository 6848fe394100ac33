"""States several test files start from, reached through the real code (the workspace's
own operations, the real CLI with its detached drivers, in-process hops stopped at named
points), never by writing the files a test then judges."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lernie_stateful.audit import audit
from lernie_stateful.refinement import World as RefinementWorld

from lernie_ref.actors.readings import mark_value
from lernie_ref.core.actor import Passed
from lernie_ref.core.clock import FixedClock
from lernie_ref.core.ids import require_agent_id
from lernie_ref.core.vocab import MarkKind
from lernie_ref.inbox import RecordingLauncher, cli_dispatch, cli_prompt
from lernie_ref.substrate.workspace import Workspace, create_workspace
from lernie_ref.testing import Inline, Point, drive
from tests.support.history import git
from tests.support.runners import cli_ok, run_cli, run_cli_bytes
from tests.support.waits import wait_quiescent
from tests.support.workspaces import FIXTURE_NS


@dataclass
class World:
    ws: Workspace
    root: str
    child: str
    outside: Path


def make_world(tmp: Path) -> World:
    """A workspace with a root agent (one exchange done) and a child; an outside directory."""
    ws = create_workspace(tmp / "ws")
    clock = FixedClock(FIXTURE_NS, tick_ns=1_000_000_000)
    root = ws.mint_root(clock)
    ws.create_root_agent(root, "lead", "lead the work")
    child = ws.mint_child(root, clock)
    ws.create_child_agent(root, child, "kid", "help")
    assert run_cli_bytes("message", str(ws.root), root, "hello").returncode == 0
    wait_quiescent(ws)
    outside = tmp / "outside"
    outside.mkdir()
    return World(ws, root, child, outside)


def build_team(ws: Path) -> dict[str, str]:
    """Through the real CLI: a root ``lead`` with children ``a`` (a tool step, then an
    exchange with ``b``) and ``b`` (stopped mid-call, its obituary parked in lead's inbox).
    Returns name -> id."""
    cli_ok("new", str(ws))
    cli_ok("prompt", str(ws), "--name", "lead",
           "@dispatch name=a @tools 1\n@dispatch name=b hi b\nplan", "--wait")
    wait_quiescent(ws)
    cli_ok("message", str(ws), "a", "@message b @message a pong\nping")
    wait_quiescent(ws)
    rows = json.loads(cli_ok("status", str(ws), "--json"))["agents"]
    ids = {row["name"]: row["id"] for row in rows}
    cli_ok("message", str(ws), "b", "@sleep 60")
    deadline = time.monotonic() + 60
    while run_cli(["stop", str(ws), ids["b"]]).stderr:  # "nothing to stop" until b's driver runs
        assert time.monotonic() < deadline, "b's driver never took its lock"
        time.sleep(0.05)
    wait_quiescent(ws)
    return ids


MARKED_ROOT = require_agent_id("20260711T000000Z-00000001")
MARKED_OTHER = require_agent_id("20260711T000000Z-00000002")
MARKED_KID = require_agent_id(f"{MARKED_ROOT}.20260711T000001Z-00000003")


def marked_world(ws: Workspace) -> None:
    """Roots ``MARKED_ROOT`` (named ``boss``) and ``MARKED_OTHER``, the child ``MARKED_KID``
    (``kid``), with marks of every shape: a commit, a tag (peeled to its commit) and a blob
    (no mark)."""
    ws.create_root_agent(MARKED_ROOT, "boss", "goal")
    ws.create_root_agent(MARKED_OTHER, "", "goal")
    ws.create_child_agent(MARKED_ROOT, MARKED_KID, "kid", "goal")
    repo = ws.repo_git
    tip = ws.branch_tip(MARKED_ROOT)
    ws.set_mark(MarkKind.RETURNED, MARKED_KID, ws.branch_tip(MARKED_KID))
    ws.set_mark(MarkKind.STOPPED, MARKED_ROOT, tip)
    tag = git(repo, "mktag", stdin=(
        f"object {tip}\ntype commit\ntag t\ntagger x <x@x> 0 +0000\n\nt\n"
    ).encode())
    ws.set_mark(MarkKind.BUDGET_EXHAUSTED, MARKED_ROOT, tag)  # a tag: peeled to the commit
    sha = git(repo, "hash-object", "-w", "--stdin", stdin=b"not a commit\n")
    ws.set_mark(MarkKind.BUDGET_EXHAUSTED, MARKED_OTHER, sha)  # not a commit: no mark


def reply_published_mark_left_behind(ws: Workspace) -> tuple[str, str, str]:
    """A child killed between its reply's publish and its returned mark (R-DEP-8).

    Returns ``(root, child, tip)``: the child's tip is its reply's commit, its returned
    mark is still behind it, and the audit reports exactly the marks check.
    """
    rec = RecordingLauncher()
    root = cli_prompt(ws, "lead", "", rec)
    drive(ws, root)
    child = cli_dispatch(ws, root, "build it", "", rec)
    Inline(ws).crash_at(child, Point.DEPOSIT_PUBLISHED)
    tip = ws.branch_tip(child)
    assert mark_value(ws, MarkKind.RETURNED.value, child) != tip
    assert [f.check for f in audit(ws.root).violations()] == ["marks"]
    return root, child, tip


def crash_driver_at(world: RefinementWorld, at: Callable[[Passed], bool], to: int = 0) -> None:
    """In a refinement world: the operator messages agent ``to``; the driver launched for it
    runs until the first point ``at`` accepts, and is killed there."""
    writer = world.operator_message(to)
    while writer.key in world.actors:
        world.step(writer)
    driver = world.start_launch(0)
    assert driver is not None
    while (p := world.step(driver)) is not None and not at(p):
        pass
    assert p is not None, "the driver ended before the point"
    world.crash(driver)


def crash_in_the_delivery_window(world: RefinementWorld) -> None:
    """`lernie prompt`, then its launched driver killed between its delivery's rename and
    its commit (R-DRAIN-2's stray)."""
    crash_driver_at(world, lambda p: p.name == Point.DRAIN_RENAMED)
