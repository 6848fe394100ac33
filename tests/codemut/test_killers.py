"""Outcome tests written for code mutants that passed every checker before them
(``lernie-check code-mutants``, ``lernie_stateful.code_mutants``): each asserts what a user
sees, and the catalogue names the mutant it kills."""

from __future__ import annotations

import base64
import io
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from lernie_ref.actors.sweep import REVIVE_LIMIT, scan
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.vocab import AGENT_REF_PREFIX
from lernie_ref.inbox import RecordingLauncher, cli_dispatch, cli_message, cli_prompt
from lernie_ref.operator.stop import stop
from lernie_ref.substrate import guarded
from lernie_ref.substrate.deposit import CHUNK, ContentStream, deposit
from lernie_ref.substrate.reffiles import RefFiles
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import FixedClock, Inline, Point
from tests.support.processes import reap, spawn_holder
from tests.support.readers import entries, inbox_names, worktree_clean
from tests.support.runners import run_cli
from tests.support.waits import wait_quiescent


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
            reap(proc)


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


def test_r_ws_7_a_guarded_replace_never_writes_through_a_hard_link(tmp_path: Path) -> None:
    """Kills ``guarded-replace-writes-through``: a hard link planted under the name a
    guarded replace writes (the revivals record's temp, for one) is removed, not written
    through: the file it shares an inode with keeps its bytes."""
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep me")
    inner = tmp_path / "steps"
    inner.mkdir()
    os.link(outside, inner / ".revivals.tmp")
    with guarded.walk(tmp_path, ("steps",)) as steps:
        steps.replace(".revivals.tmp", b"tip 1\n")
    assert outside.read_bytes() == b"keep me"
    assert (inner / ".revivals.tmp").read_bytes() == b"tip 1\n"


def test_r_cli_6_streamed_text_split_inside_a_character_is_text(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    """Kills ``streamed-content-decoded-per-piece``: streamed content is read in pieces of
    ``CHUNK`` bytes; a two-byte character that the piece boundary cuts in half is still
    UTF-8 text, and the deposit carries it byte for byte."""
    root = cli_prompt(ws, "lead", "", RecordingLauncher())
    body = b"a" * (CHUNK - 1) + "é".encode() + b" end"
    path = Path(deposit(ws.root, root, "op", ContentStream(io.BytesIO(body), "stdin"),
                        fixed_clock))
    assert path.read_bytes().endswith(b"\n---\n" + body)


def _file_size_limit(limit: int) -> Callable[[], None]:
    """For a child process: files it writes stop growing at ``limit`` bytes (``EFBIG``,
    as on a full disk; the signal that would kill it is ignored)."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_r_drain_4_a_delivery_that_cannot_write_loses_nothing(ws: Workspace) -> None:
    """Kills ``delivery-unlinks-then-writes``: a driver whose writes fail past 16 KiB (a
    full disk) delivers a 64 KiB message. The delivery is a rename, which writes no data,
    so the message survives whole and the next hop commits it; a delivery that took the
    deposit out of the inbox and then wrote the entry would leave a truncated entry."""
    root = cli_prompt(ws, "lead", "", RecordingLauncher())
    assert run_cli(["advance", str(ws.root), root]).returncode == 0
    wait_quiescent(ws)
    body = base64.b64encode(os.urandom(48 * 1024)).decode()
    cli_message(ws, root, body, "op", RecordingLauncher())
    env = {k: v for k, v in os.environ.items() if k not in ("LERNIE_CONV_BRANCH", "LERNIE_LOCK_FD")}
    full = subprocess.run([sys.executable, "-m", "lernie_ref", "advance", str(ws.root), root],
                          env=env, capture_output=True, text=True, timeout=120, check=False,
                          preexec_fn=_file_size_limit(16 * 1024))
    assert full.returncode == 1, full.stderr  # the disk was full for it: the hop failed
    assert run_cli(["advance", str(ws.root), root]).returncode == 0
    wait_quiescent(ws)
    carried = [e for e in entries(ws, root) if e.origin == "op"]
    assert len(carried) == 1
    assert carried[0].path.read_text(encoding="utf-8").endswith(body)
    assert inbox_names(ws, root) == [] and worktree_clean(ws, root)


def test_r_ws_5_ref_files_read_packed_refs_again_after_it_changed(ws: Workspace) -> None:
    """Kills ``packed-refs-read-once``: one reader asked again after ``packed-refs`` was
    rewritten (a ref moved, then packed) answers what git answers now, not what the file
    held the first time."""
    root = cli_prompt(ws, "lead", "", RecordingLauncher())
    ref = f"{AGENT_REF_PREFIX}{root}"

    def git(*args: str) -> str:
        return ws.git.run(ws.repo_git, list(args)).stdout.strip()

    git("pack-refs", "--all")
    files = RefFiles(ws.repo_git)
    first = git("rev-parse", "--verify", ref)
    assert files.value(ref) == first
    moved = git("commit-tree", f"{first}^{{tree}}", "-p", first, "-m", "another commit")
    git("update-ref", ref, moved, first)
    git("pack-refs", "--all")
    assert not (ws.repo_git / ref).exists()  # the value is in packed-refs alone
    assert files.value(ref) == git("rev-parse", "--verify", ref) == moved
