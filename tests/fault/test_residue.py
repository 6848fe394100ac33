"""Residue a killed process leaves is healed by the next scan (R-DEP-6, R-WS-9).

A writer SIGKILLed between its temp write and its publication leaves a dot-temp in the
recipient's inbox; the next scan removes it (its name carries the writer's pid, which no
process has any more) and leaves a live writer's temp alone, whose deposit then lands.
A ``repo.git/objects/maintenance.lock`` (or another shared git lock) a killed git left
makes git's maintenance silently do nothing; the next scan removes it when no git works
in the workspace, and waits for one that does.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from lernie_stateful.audit import audit

from lernie_ref.actors.sweep import scan
from lernie_ref.actors.writer import message_actor
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.frontmatter import split_frontmatter
from lernie_ref.core.stepper import Stepper
from lernie_ref.inbox import RecordingLauncher, cli_prompt, pending
from lernie_ref.substrate import gitlocks
from lernie_ref.substrate.deposit import writer_pid
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Point, drive


def _temps(ws: Workspace, agent: str) -> list[str]:
    return sorted(n for n in os.listdir(ws.inbox_dir(agent)) if n.endswith(".tmp"))


def _writer_stopped_at_its_temp(ws: Workspace, agent: str, text: str) -> tuple[int, int]:
    """Fork a writer (`lernie message`) that stops right after its temp write, reports
    that on a pipe and then waits for one byte on another before it goes on; returns its
    pid and the descriptor that lets it go on."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(ready_r)
            os.close(go_w)
            stepper = Stepper(message_actor(Workspace(ws.root), agent, text, "user",
                                            RecordingLauncher(), SystemClock()))
            stepper.run_to(Point.DEPOSIT_TEMP_WRITTEN)
            os.write(ready_w, b"t")
            if os.read(go_r, 1) == b"k":
                os.kill(os.getpid(), signal.SIGKILL)
            stepper.finish()
            code = 0
        finally:
            os._exit(code)
    os.close(ready_w)
    os.close(go_r)
    assert os.read(ready_r, 1) == b"t"
    os.close(ready_r)
    return pid, go_w


def test_r_dep_6_a_writer_killed_between_temp_and_publish_leaves_a_temp_the_next_scan_removes(
    ws: Workspace,
) -> None:
    lead = cli_prompt(ws, "lead", "lead", RecordingLauncher())
    drive(ws, lead)
    killed, kill = _writer_stopped_at_its_temp(ws, lead, "lost in flight")
    alive, go = _writer_stopped_at_its_temp(ws, lead, "still coming")
    os.write(kill, b"k")  # SIGKILL, at the point between the temp and its link
    _, status = os.waitpid(killed, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    temps = _temps(ws, lead)
    assert sorted(writer_pid(t) for t in temps) == sorted([killed, alive])
    found = audit(ws.root)
    assert any("temp file" in f.message for f in found.findings)
    scan(ws, RecordingLauncher(), SystemClock())
    assert [writer_pid(t) for t in _temps(ws, lead)] == [alive]  # a live writer's stays
    os.write(go, b"g")
    _, status = os.waitpid(alive, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert _temps(ws, lead) == []
    bodies = [split_frontmatter(m.path.read_text())[1] for m in pending(ws.inbox_dir(lead))]
    assert bodies == ["still coming"]  # the killed one never published: nothing to deliver
    scan(ws, RecordingLauncher(), SystemClock())
    assert audit(ws.root).violations(strict=True) == []


def _gc_packs_refs(ws: Workspace) -> bool:
    """Run git's maintenance (its gc task) and say whether it did its work (the refs
    packed); with a stale maintenance.lock it skips the work and still exits 0."""
    packed = ws.repo_git / "packed-refs"
    packed.unlink(missing_ok=True)
    proc = subprocess.run(["git", "-C", str(ws.repo_git), "maintenance", "run", "--task=gc",
                           "--quiet"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return packed.exists()


def test_r_ws_9_a_stale_maintenance_lock_is_removed_by_the_next_scan(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    lead = cli_prompt(ws, "lead", "lead", RecordingLauncher())
    drive(ws, lead)
    lock = ws.repo_git / "objects" / "maintenance.lock"
    lock.write_text("")  # what a git killed during its maintenance leaves
    packed_refs = ws.repo_git / "packed-refs.lock"
    packed_refs.write_text("")
    assert not _gc_packs_refs(ws)  # maintenance silently does nothing
    scan(ws, RecordingLauncher(), SystemClock())
    assert not lock.exists() and not packed_refs.exists()
    err = capsys.readouterr().err
    assert "objects/maintenance.lock" in err and "(R-WS-9)" in err
    assert _gc_packs_refs(ws)  # and now it works again


def test_r_ws_9_a_live_git_in_the_workspace_is_waited_for_then_left_alone(
    ws: Workspace,
) -> None:
    lock = ws.repo_git / "objects" / "maintenance.lock"
    lock.write_text("")
    git = subprocess.Popen(["git", "hash-object", "--stdin"], cwd=ws.repo_git,
                           stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        assert git.pid in gitlocks.live_git_in(ws.root)
        pauses: list[float] = []
        assert gitlocks.clear_shared_locks(ws.root, sleep=pauses.append) == []
        assert lock.exists() and pauses == list(gitlocks.OWNER_WAIT_PAUSES)

        def finish_then(seconds: float) -> None:
            pauses.append(seconds)
            if git.stdin is not None and not git.stdin.closed:
                git.stdin.close()
                git.wait()

        pauses.clear()
        assert gitlocks.clear_shared_locks(ws.root, sleep=finish_then) == [lock]
        assert not lock.exists() and len(pauses) == 1
    finally:
        if git.poll() is None:
            git.kill()
            git.wait()


def test_r_ws_9_a_lock_its_owner_removes_while_waited_for_is_not_touched(
    tmp_path: Path, ws: Workspace
) -> None:
    lock = ws.repo_git / "packed-refs.lock"
    lock.write_text("")

    def owner_finishes(seconds: float) -> None:
        lock.unlink()

    assert gitlocks.clear_shared_locks(ws.root, sleep=owner_finishes,
                                       live_users=lambda root: [4242]) == []


def test_r_scan_12_only_id_shaped_remains_are_removed(ws: Workspace) -> None:
    """What someone else put under ``agents/`` is never taken for a killed creation's
    remains; an id-shaped worktree no ref names, with no creator at work, is."""
    notes = ws.agents_root / "notes"
    notes.mkdir()
    (notes / "keep.txt").write_text("mine")
    ws.prepare_root_agent("20260101T000000Z-0000000f", "", "killed")  # never published
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.abandoned == ["20260101T000000Z-0000000f"]
    assert sorted(os.listdir(ws.agents_root)) == ["notes"]
    assert (notes / "keep.txt").read_text() == "mine"


def test_r_scan_12_a_registered_agent_is_never_a_candidate_for_remains(ws: Workspace) -> None:
    """The candidates leave out the agents the pass's ref listing found before they look at
    any name (every registered agent has a worktree there): what remains is the id-shaped
    names no ref names, and the scan removes exactly those."""
    alive = "20260101T000000Z-00000001"
    ws.create_root_agent(alive, "", "goal")
    killed = "20260101T000000Z-0000000f"
    ws.prepare_root_agent(killed, "", "killed")  # never published
    listed = set(os.listdir(ws.agents_root)) | set(os.listdir(ws.repo_git / "worktrees"))
    assert {alive, killed} <= listed
    assert ws.unborn_candidates() == sorted({alive, killed})  # no registry: both shapes fit
    assert ws.unborn_candidates(frozenset({ws.agent_ids()[0]})) == [killed]
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.abandoned == [killed]
    assert os.listdir(ws.agents_root) == [alive] and ws.agent_exists(alive)
