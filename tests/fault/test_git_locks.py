"""R-WS-8 / R-WS-9: git lock files a killed git leaves behind never wedge an agent.

Real git, real processes: a driver killed with its whole process group while its
``git commit`` is inside the ref transaction (held there by a hook the test
controls), and each lock file left the way a killed git leaves it. The next
touch must deliver everything with no hand repair.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from lernie_ref.core.clock import FixedClock
from lernie_ref.core.errors import GitError, StaleLockError
from lernie_ref.core.frontmatter import split_frontmatter
from lernie_ref.substrate import gitlocks
from lernie_ref.substrate.gitrun import SubprocessGit
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Inline, poll
from tests.support.processes import driver_pids
from tests.support.readers import entries, lock_is_free, worktree_clean
from tests.support.runners import run_cli
from tests.support.waits import wait_quiescent
from tests.support.workspaces import add_child, add_root

HOOK = """#!/bin/sh
# Block the first ref transaction after the flag appears, inside git's locks.
[ "$1" = prepared ] || exit 0
[ -e {flag} ] || exit 0
rm -f {flag}
echo $$ > {pidfile}.tmp && mv {pidfile}.tmp {pidfile}
read _ < {fifo}
"""


def delivered_bodies(ws: Workspace, agent: str) -> list[str]:
    return [split_frontmatter(e.text)[1] for e in entries(ws, agent) if e.delivered]


def committed_names(ws: Workspace, agent: str) -> list[str]:
    out = ws.git.run(
        ws.repo_git, ["ls-tree", "--name-only", f"agents/{agent}", "messages/"]
    ).stdout
    return [line.split("/", 1)[1] for line in out.splitlines()]


def lock_files_of(ws: Workspace, agent: str) -> list[Path]:
    return [
        p
        for p in gitlocks.owned_lock_files(ws.repo_git, ws.worktree(agent), agent)
        if p.exists()
    ]


def test_r_ws_8_driver_group_killed_inside_git_commit_next_message_delivers_everything(
    ws: Workspace, fixed_clock: FixedClock, tmp_path: Path
) -> None:
    root = add_root(ws, fixed_clock)
    flag, pidfile, fifo = tmp_path / "block", tmp_path / "hook.pid", tmp_path / "hook.fifo"
    os.mkfifo(fifo)
    hook = ws.repo_git / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(HOOK.format(flag=flag, pidfile=pidfile, fifo=fifo))
    hook.chmod(0o755)
    flag.touch()

    assert run_cli(["message", str(ws.root), root, "first"]).returncode == 0
    poll(pidfile.exists, what="the drain's commit to reach the blocking hook")
    [driver] = driver_pids(ws, root)
    os.killpg(os.getpgid(driver), signal.SIGKILL)  # git and its hook die with the driver
    poll(lambda: not driver_pids(ws, root), what="the driver to die")
    wait_quiescent(ws)

    # What git leaves when killed inside the ref transaction: HEAD.lock and the branch's
    # ref lock (the worktree index lock has been committed by then).
    admin = gitlocks.worktree_admin_dir(ws.repo_git, ws.worktree(root), root)
    left = {p.relative_to(ws.repo_git).as_posix() for p in lock_files_of(ws, root)}
    assert {
        f"{admin.relative_to(ws.repo_git).as_posix()}/HEAD.lock",
        f"refs/heads/agents/{root}.lock",
    } <= left
    assert committed_names(ws, root) == []  # the delivery's commit never happened

    assert run_cli(["message", str(ws.root), root, "second"]).returncode == 0
    wait_quiescent(ws)
    assert delivered_bodies(ws, root) == ["first", "second"]
    assert committed_names(ws, root) == [e.name for e in entries(ws, root)]
    assert entries(ws, root)[-1].role == "assistant"  # the agent answered
    assert lock_files_of(ws, root) == []
    assert worktree_clean(ws, root) and lock_is_free(ws, root)
    log = ws.driver_log(root).read_text().splitlines()
    notices = [line for line in log if "removed stale git lock" in line]
    assert len(notices) == 1 and notices[0].startswith("lernie: removed stale git lock file(s) ")
    assert all(line.startswith("lernie") for line in log)


def _leave(path: Path, like: Path | None, text: str) -> None:
    """Leave ``path`` the way a killed git leaves a lock: a copy of the file it guards
    (the new index), or the new value of a ref."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if like is not None and like.exists():
        shutil.copyfile(like, path)
    else:
        path.write_text(text)


@pytest.mark.parametrize("which", ["index", "HEAD", "branch-ref", "returned-mark"])
def test_r_ws_8_each_owned_lock_left_by_a_killed_git_is_cleared_by_the_next_holder(
    ws: Workspace, fixed_clock: FixedClock, which: str
) -> None:
    root = add_root(ws, fixed_clock)
    child = add_child(ws, root, fixed_clock)
    inline = Inline(ws)
    tip = ws.branch_tip(child)
    agent = root if which in ("index", "HEAD", "branch-ref") else child
    admin = gitlocks.worktree_admin_dir(ws.repo_git, ws.worktree(agent), agent)
    target = {
        "index": (admin / "index.lock", admin / "index"),
        "HEAD": (admin / "HEAD.lock", None),
        "branch-ref": (ws.repo_git / f"refs/heads/agents/{agent}.lock", None),
        "returned-mark": (ws.repo_git / f"refs/lernie/returned/{agent}.lock", None),
    }[which]
    _leave(target[0], target[1], tip + "\n")

    # Without clearing, the next git call needing the lock fails: prove the lock is real.
    once = SubprocessGit(lock_retries=0)
    probe = once.run(ws.worktree(agent), ["commit", "--allow-empty", "-q", "-m", "x"], check=False)
    if which != "returned-mark":
        assert probe.returncode != 0 and ".lock': File exists" in probe.stderr
    else:
        ws.git.run(ws.worktree(agent), ["reset", "-q", "--soft", "HEAD~1"])

    from lernie_ref.inbox import cli_message

    cli_message(ws, agent, "hello", "user" if agent == root else root, inline.launcher)
    assert inline.settle()
    assert "hello" in delivered_bodies(ws, agent)
    assert not target[0].exists()
    assert committed_names(ws, agent) == [e.name for e in entries(ws, agent)]
    assert worktree_clean(ws, agent)
    if agent == child:  # the child's reply reached its parent (the returned mark moved)
        assert any("scripted reply" in b for b in delivered_bodies(ws, root))


def test_r_ws_8_shared_locks_are_never_touched(ws: Workspace, fixed_clock: FixedClock) -> None:
    root = add_root(ws, fixed_clock)
    other = add_root(ws, fixed_clock)
    shared = [
        ws.repo_git / "packed-refs.lock",
        ws.repo_git / "config.lock",
        ws.repo_git / f"refs/heads/agents/{other}.lock",
        ws.repo_git / f"refs/lernie/returned/{other}.lock",
    ]
    for path in shared:
        _leave(path, None, "x\n")
    inline = Inline(ws)
    from lernie_ref.inbox import cli_message

    cli_message(ws, root, "hello", "user", inline.launcher)
    assert inline.settle()
    assert delivered_bodies(ws, root) == ["hello"]
    assert all(p.exists() for p in shared)


def test_r_ws_8_a_live_git_that_outlived_its_driver_is_waited_for(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    root = add_root(ws, fixed_clock)
    worktree = ws.worktree(root)
    admin = gitlocks.worktree_admin_dir(ws.repo_git, worktree, root)
    lock = admin / "index.lock"
    _leave(lock, admin / "index", "")
    # A real git still running in the agent's worktree (it reads stdin until we close it).
    git = subprocess.Popen(
        ["git", "hash-object", "--stdin"], cwd=worktree, stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 3:  # the orphan finishes while the holder waits
            assert git.stdin is not None
            git.stdin.close()
            git.wait()

    assert git.pid in gitlocks.live_git_users(worktree, root)
    removed = gitlocks.clear_stale_locks(ws.root, worktree, root, sleep=sleep)
    assert removed == [lock] and len(pauses) == 3 and not lock.exists()


def test_r_ws_8_a_git_that_never_finishes_is_one_clear_error_and_nothing_removed(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    root = add_root(ws, fixed_clock)
    worktree = ws.worktree(root)
    admin = gitlocks.worktree_admin_dir(ws.repo_git, worktree, root)
    _leave(admin / "HEAD.lock", None, "x\n")
    with pytest.raises(StaleLockError) as caught:
        gitlocks.clear_stale_locks(
            ws.root, worktree, root, sleep=lambda s: None, live_users=lambda w, a: [4242]
        )
    assert "HEAD.lock" in str(caught.value) and "4242" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert (admin / "HEAD.lock").exists()


def test_r_ws_9_a_shared_lock_is_retried_with_backoff_then_one_line_error(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    root = add_root(ws, fixed_clock)
    tip = ws.branch_tip(root)
    other_lock = ws.repo_git / "refs/lernie/returned/someone.lock"
    other_lock.parent.mkdir(parents=True, exist_ok=True)
    other_lock.write_text("x\n")
    pauses: list[float] = []

    def sleep_then_free(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 2:
            other_lock.unlink()  # its owner finished

    git = SubprocessGit(sleep=sleep_then_free)
    git.run(ws.repo_git, ["update-ref", "refs/lernie/returned/someone", tip])
    assert pauses == [0.05, 0.1]

    other_lock.write_text("x\n")
    pauses.clear()
    git = SubprocessGit(sleep=pauses.append)
    with pytest.raises(GitError) as caught:
        git.run(ws.repo_git, ["update-ref", "refs/lernie/returned/someone", tip])
    text = str(caught.value)
    assert pauses == [0.05, 0.1, 0.2, 0.4, 0.8]
    assert "\n" not in text and "someone.lock': File exists" in text
    assert text.endswith("(the lock file was still there after 6 tries)")
    assert other_lock.exists()  # never removed
