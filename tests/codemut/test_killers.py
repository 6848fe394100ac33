"""Outcome tests written for code mutants that passed every checker before them
(``lernie-check code-mutants``, ``lernie_stateful.code_mutants``): each asserts what a user
sees, and the catalogue names the mutant it kills."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from lernie_ref.actors.probe import ProbeOutcome
from lernie_ref.actors.sweep import REVIVE_LIMIT, scan
from lernie_ref.core.clock import SystemClock
from lernie_ref.inbox import RecordingLauncher, cli_dispatch, cli_message, cli_prompt
from lernie_ref.operator.stop import stop
from lernie_ref.substrate.deposit import deposit
from lernie_ref.substrate.lock import try_acquire
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import FixedClock, Inline, Point
from tests.operator_verbs.opkit import spawn_holder


def _reap(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def test_r_stop_3_a_stop_reaches_the_grandchildren_of_the_stopped_agent(ws: Workspace) -> None:
    """Kills ``stop-children-only``: stopping the root signals its child and its grandchild
    (and a great-grandchild), not just the agents one level down."""
    rec = RecordingLauncher()
    root = cli_prompt(ws, "lead", "", rec)
    child = cli_dispatch(ws, root, "work", "", rec)
    grandchild = cli_dispatch(ws, child, "deeper", "", rec)
    great = cli_dispatch(ws, grandchild, "deepest", "", rec)
    tree = (root, child, grandchild, great)
    holders = {a: spawn_holder(ws.inbox_dir(a)) for a in tree}
    try:
        report = stop(ws.root, root)
        assert sorted(h.agent for h in report.signalled) == sorted(tree)
        for agent in tree:
            assert holders[agent].wait(timeout=60) == -signal.SIGTERM, agent
    finally:
        for proc in holders.values():
            _reap(proc)


def test_r_dep_2_a_number_follows_the_largest_not_the_count(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    """Kills ``deposit-number-from-count``: with only ``op-003.md`` pending (1 and 2 were
    delivered), the sender's next deposit is ``op-004.md``: one more than the largest number
    pending, not the count of pending deposits plus one."""
    root = cli_prompt(ws, "lead", "", RecordingLauncher())
    paths = [Path(deposit(ws.root, root, "op", f"note {k}", fixed_clock)) for k in (1, 2, 3)]
    assert [p.name for p in paths] == ["op-001.md", "op-002.md", "op-003.md"]
    for p in paths[:2]:
        os.unlink(p)  # as a delivery takes them out of the inbox
    nxt = Path(deposit(ws.root, root, "op", "note 4", fixed_clock))
    assert nxt.name == "op-004.md"
    assert sorted(os.listdir(ws.inbox_dir(root))) == ["op-003.md", "op-004.md", "user-001.md"]


def test_r_probe_1_a_launched_driver_finds_the_lock_free(ws: Workspace) -> None:
    """Kills ``launch-under-probe-lock``: a driver started by a writer's probe that takes the
    lock at once (a fast machine) gets it; a probe that launched while it still held the lock
    would make that driver read "busy" and leave the mail for nobody."""
    root = cli_prompt(ws, "lead", "", RecordingLauncher())
    got: list[bool] = []

    def driver_starts(ws_root: Path, agent: str) -> None:
        lock = try_acquire(Workspace(ws_root).inbox_dir(agent))
        got.append(lock is not None)
        if lock is not None:
            lock.release()

    outcome = cli_message(ws, root, "hello", "op", RecordingLauncher(driver_starts))
    assert outcome is ProbeOutcome.LAUNCHED
    assert got == [True]


def test_r_scan_10_progress_resets_the_crash_loop_guard(ws: Workspace) -> None:
    """Kills ``crash-loop-guard-never-resets``: after the guard gave up on an agent at one
    tip, new mail that reaches its branch is progress, and the next death there is revived."""
    root = cli_prompt(ws, "hello", "", RecordingLauncher())
    for _ in range(REVIVE_LIMIT):
        Inline(ws).crash_at(root, Point.HOP_WARRANT)
        assert scan(ws, RecordingLauncher(), SystemClock()).revived == [root]
    Inline(ws).crash_at(root, Point.HOP_WARRANT)
    assert scan(ws, RecordingLauncher(), SystemClock()).given_up == [root]
    stuck = ws.branch_tip(root)
    cli_message(ws, root, "are you there?", "op", RecordingLauncher())
    Inline(ws).crash_at(root, Point.HOP_WARRANT)  # delivers the mail, then dies
    assert ws.branch_tip(root) != stuck
    rec = RecordingLauncher()
    report = scan(ws, rec, SystemClock())
    assert report.revived == [root] and report.given_up == []
    assert rec.launches == [(ws.root, root)]
