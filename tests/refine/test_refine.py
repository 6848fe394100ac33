"""The refinement machine: the unpatched implementation refines the model (CI budget),
and seeded implementation bugs are caught (those the CI budget reliably catches)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from lernie_stateful.refine_cli import SHM_ROOM, run, run_scratch, scratch_parent
from lernie_stateful.refine_view import read_refs, tracked_paths
from lernie_stateful.refinement import Divergence, World
from lernie_stateful.seeded_bugs import BY_NAME

from lernie_ref.core.vocab import AGENT_REF_PREFIX, MARK_REF_PREFIX
from tests.support.scenarios import crash_in_the_delivery_window


def test_unpatched_implementation_refines_the_model() -> None:
    out = run(examples=8, seed=1, steps=20, shrink=0)
    assert not out.failed, out.message


@pytest.mark.parametrize("bug", ["overwriting-deposit", "writer-never-probes",
                                 "lock-leaked-at-release", "delivery-never-committed"])
def test_seeded_bug_is_caught(bug: str) -> None:
    out = run(examples=20, seed=0, steps=20, bug=BY_NAME[bug], shrink=0)
    assert out.failed


def _crash_in_the_delivery_window(world: World) -> None:
    """`lernie prompt`; the launched driver is killed between its delivery's rename and
    its commit; the teardown's scan revives P and everything runs to its end."""
    crash_in_the_delivery_window(world)
    world.run_all()
    world.scan()
    world.run_all()


def test_r_drain_2_a_crashed_delivery_is_recovered_and_refines_the_model(tmp_path: Path) -> None:
    world = World(tmp_path)
    _crash_in_the_delivery_window(world)
    assert world.stranded() == []
    assert any("drain.stray-committed" in row for row in world.trace)


def test_r_drain_2_without_stray_recovery_the_same_program_diverges(tmp_path: Path) -> None:
    with BY_NAME["no-stray-recovery"].apply(), pytest.raises(Divergence) as err:
        _crash_in_the_delivery_window(World(tmp_path))
    assert "recover strays" in str(err.value)


def test_the_abstraction_reads_refs_and_the_index_as_git_lists_them(tmp_path: Path) -> None:
    """The view reads refs and the git index from their files; git itself agrees."""
    world = World(tmp_path)
    world.script(0, "dispatch")
    world.operator_message(0)
    world.run_all()
    ws = world.ws
    out = ws.git.run(ws.repo_git, ["for-each-ref", "--format=%(refname) %(objectname)",
                                   AGENT_REF_PREFIX, MARK_REF_PREFIX]).stdout
    assert read_refs(ws.repo_git, (AGENT_REF_PREFIX, MARK_REF_PREFIX)) == dict(
        line.split(" ") for line in out.splitlines())
    agents = [aid for aid in world.ids if aid]
    assert len(agents) == 2  # P and the child it dispatched
    for aid in agents:
        listed = set(ws.git.run(ws.worktree(aid), ["ls-files"]).stdout.split())
        assert tracked_paths(ws.worktree(aid)) == listed
        assert any(p.startswith("messages/") for p in listed)


def test_the_workspaces_go_to_shared_memory_unless_tmpdir_says_otherwise(
        tmp_path: Path) -> None:
    roomy = os.statvfs(tmp_path)
    if roomy.f_bavail * roomy.f_frsize < SHM_ROOM:
        pytest.skip("the test's own directory has less free room than the scratch needs")
    assert scratch_parent({}, shm=str(tmp_path)) == str(tmp_path)
    assert scratch_parent({"TMPDIR": str(tmp_path)}, shm=str(tmp_path)) is None
    assert scratch_parent({}, shm=str(tmp_path / "absent")) is None


def test_a_run_s_workspaces_are_made_in_its_scratch_and_removed_with_it() -> None:
    before = tempfile.tempdir
    parent = scratch_parent() or tempfile.gettempdir()
    with run_scratch() as scratch:
        world = Path(tempfile.mkdtemp(prefix="lernie-refine-"))
        assert world.parent == scratch
        assert str(scratch.parent) == parent
    assert not scratch.exists()
    assert tempfile.tempdir == before
