"""The refinement machine's killed creations (R-PROBE-6, R-SCAN-12): a `lernie prompt` and
a `lernie dispatch` killed at each of their points before the commit point change nothing
any reader sees, the next scan removes their remains, and the run still refines the
model to its end. Two planted bugs show the checks can fail: a creation that makes the
child's branch first (as upstream does: the child wears its parent's tree until its own
commit), and a scan that leaves the remains."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lernie_stateful.refinement import CREATION, Divergence, World, killed_dispatch

from lernie_ref.actors import sweep
from lernie_ref.core.vocab import AGENT_REF_PREFIX, Point
from lernie_ref.substrate.workspace import Workspace

P, C = 0, 1
KILL_AT = [p for p in CREATION if p != Point.DEPOSIT_COLLIDED]


def _prompt_killed_at(world: World, at: str) -> None:
    writer = world.operator_message(P)
    while (p := world.step(writer)) is not None and p.name != at:
        pass
    assert p is not None and p.name == at
    world.crash(writer)


@pytest.mark.parametrize("at", KILL_AT)
def test_r_probe_6_a_creation_killed_before_its_ref_refines_and_the_scan_clears_it(
    tmp_path: Path, at: str
) -> None:
    world = World(tmp_path)
    _prompt_killed_at(world, at)  # the root's creation killed: no root yet
    assert world.ids[P] is None
    world.scan()  # removes the remains (no_remains checks it)
    world.script(P, "dispatch")
    world.operator_message(P)
    world.run_all()
    assert world.ids[C] is not None  # the tool's dispatch, whole
    killed_dispatch(world, P, at)  # an operator's dispatch killed: nothing seen
    assert world.ws.agent_ids() == sorted(i for i in world.ids if i)
    world.scan()
    world.run_all()
    assert world.stranded() == []
    left = sorted(p.name for p in world.ws.agents_root.iterdir())
    assert left == world.ws.agent_ids()


def test_r_probe_6_a_child_branch_made_before_its_commit_diverges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted: the child's branch is made at the parent's tip first (upstream's order)."""
    original = Workspace.prepare_child_agent

    def branch_first(self: Workspace, parent: str, child: str, name: str, goal: object) -> str:
        self.git.run(self.repo_git, ["update-ref", AGENT_REF_PREFIX + child,
                                     self.branch_tip(parent)])
        return original(self, parent, child, name, goal)  # type: ignore[arg-type]

    monkeypatch.setattr(Workspace, "prepare_child_agent", branch_first)
    world = World(tmp_path)
    world.operator_message(P)
    world.run_all()
    with pytest.raises(Divergence) as err:
        killed_dispatch(world, P, Point.DISPATCH_PREPARED)
    assert "dispatch" in str(err.value).splitlines()[0]


def test_r_scan_12_a_scan_that_leaves_the_remains_diverges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def keep(run: object) -> Iterator[object]:
        return iter(())

    monkeypatch.setattr(sweep, "_abandoned", keep)
    world = World(tmp_path)
    world.operator_message(P)
    world.run_all()
    killed_dispatch(world, P, Point.DEPOSIT_PUBLISHED)
    with pytest.raises(Divergence, match="remains of killed creations"):
        world.scan()
