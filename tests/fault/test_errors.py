"""R-ID-4, R-WS-6: a git failure is never "no such agent", and every error is one line.

The git that fails is real: a wrapper placed first on ``PATH`` kills itself with
SIGKILL for the existence check (or for a commit), as an OOM killer or an operator
would, and runs the real git for everything else.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from lernie_ref.core.clock import FixedClock
from lernie_ref.core.errors import GitError
from lernie_ref.substrate.gitrun import SubprocessGit
from lernie_ref.substrate.workspace import Workspace
from tests.support.readers import lock_is_free, names
from tests.support.runners import run_cli
from tests.support.waits import wait_quiescent
from tests.support.workspaces import add_root

WRAPPER = """#!/bin/sh
case "$*" in
  *"{pattern}"*) kill -9 $$ ;;
esac
exec {git} "$@"
"""


def killing_git(tmp_path: Path, pattern: str) -> dict[str, str]:
    """An environment whose ``git`` dies by SIGKILL when its arguments contain ``pattern``."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real = shutil.which("git")
    assert real is not None
    wrapper = bindir / "git"
    wrapper.write_text(WRAPPER.format(pattern=pattern, git=real))
    wrapper.chmod(0o755)
    return {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}


def test_r_id_4_a_killed_rev_parse_is_a_git_error_not_a_missing_agent(
    ws: Workspace, fixed_clock: FixedClock, tmp_path: Path
) -> None:
    """The ref files answer "yes" on the message path without git (R-CLI-5); for anything
    else git is asked, and a git that dies is an error about git, not about the agent."""
    root = add_root(ws, fixed_clock)
    ghost = "20260711T000000Z-0000dead"  # no ref file says yes: only git can say no
    env = killing_git(tmp_path, "rev-parse --verify --quiet refs/heads/agents/")
    proc = run_cli(["message", str(ws.root), ghost, "hello"], env)
    assert proc.returncode == 1
    assert "no agent" not in proc.stderr
    assert proc.stderr == (
        f'lernie message: git ["rev-parse", "--verify", "--quiet", "refs/heads/agents/{ghost}"] '
        "exited with signal: 9 (SIGKILL)\n"
    )
    assert not ws.inbox_dir(ghost).exists()  # nothing deposited on a guard that did not answer
    # With a working git the same id is plainly missing, and the real agent takes mail.
    missing = run_cli(["message", str(ws.root), ghost, "hello"])
    assert missing.returncode == 1 and f'no agent "{ghost}"' in missing.stderr
    assert run_cli(["message", str(ws.root), root, "hello"], env).returncode == 0
    wait_quiescent(ws)
    assert names(ws, root)[0] == "001-user.md"


def test_r_id_4_exit_1_is_the_only_no_such_agent(ws: Workspace) -> None:
    assert ws.agent_exists("20260711T000000Z-0000abcd") is False
    broken = Workspace(ws.root, SubprocessGit(git="/nonexistent/git"))
    with pytest.raises(GitError):
        broken.agent_exists("20260711T000000Z-0000abcd")


def test_r_step_5_a_git_failure_reaches_driver_log_as_one_line(
    ws: Workspace, fixed_clock: FixedClock, tmp_path: Path
) -> None:
    root = add_root(ws, fixed_clock)
    # Every transcript commit dies by SIGKILL: the hop fails with one line naming the command.
    env = killing_git(tmp_path, "commit -q --no-verify")
    assert run_cli(["message", str(ws.root), root, "hello"], env).returncode == 0
    wait_quiescent(ws)
    log = ws.driver_log(root).read_text()
    assert log.count("\n") == 1, log
    assert log.startswith('lernie advance: git transcript commit: git ["commit", ')
    assert log.rstrip().endswith("exited with signal: 9 (SIGKILL)")
    assert lock_is_free(ws, root)


def test_r_ws_6_git_stderr_is_folded_into_one_line() -> None:
    six_lines = (
        "error: Unable to create '/w/repo.git/packed-refs.lock': File exists.\n\n"
        "Another git process seems to be running in this repository, e.g.\n"
        "an editor opened by 'git commit'. Please make sure all processes\n"
        "are terminated then try again.\n"
        "fatal: update_ref failed for ref 'refs/x'\n"
    )
    text = str(GitError(["update-ref", "refs/x", "1"], 128, six_lines))
    assert text == (
        'git ["update-ref", "refs/x", "1"] exited with exit status: 128: '
        "error: Unable to create '/w/repo.git/packed-refs.lock': File exists. "
        "fatal: update_ref failed for ref 'refs/x'"
    )
    assert str(GitError(["status"], 1, "warning: a\n  b\n")) == (
        'git ["status"] exited with exit status: 1: warning: a b'
    )


def test_r_ws_6_signal_names_in_the_pure_core_match_the_platform() -> None:
    """The core keeps signal names as data (it may not import ``signal``); they must be the
    platform's own, or a killed git would be misnamed in the one-line error."""
    import signal

    for number in range(1, 32):
        try:
            name = signal.Signals(number).name
        except ValueError:
            continue
        assert GitError.status_text(-number) == f"signal: {number} ({name})"
    assert GitError.status_text(3) == "exit status: 3"
