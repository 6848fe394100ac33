"""The child processes of the reference (``substrate/spawn.py``): what ``subprocess``
gave a git call is kept without loading it (R-CLI-5, R-WS-6, bl-7318)."""

from __future__ import annotations

import fcntl
import os
import signal
import sys
from pathlib import Path

import pytest

from lernie_ref.core.errors import GitError
from lernie_ref.substrate import spawn
from lernie_ref.substrate.gitrun import SubprocessGit
from lernie_ref.substrate.lock import try_acquire

PY = sys.executable


def test_the_signal_numbers_are_the_platforms() -> None:
    assert (spawn._SIGPIPE, spawn._SIGXFSZ, spawn._SIGKILL) == (
        signal.SIGPIPE,
        signal.SIGXFSZ,
        signal.SIGKILL,
    )


def test_output_input_and_status_come_back_whole() -> None:
    # far more than a pipe holds, both ways at once: neither side may wait on a full pipe
    data = os.urandom(1 << 20)
    code, out, err = spawn.run_captured(
        [
            PY,
            "-c",
            "import sys; d = sys.stdin.buffer.read(); sys.stderr.buffer.write(d[:70000]);"
            " sys.stdout.buffer.write(d); sys.exit(3)",
        ],
        os.environ,
        data,
    )
    assert (code, out, err) == (3, data, data[:70000])


def test_a_child_killed_by_a_signal_has_a_negative_return_code() -> None:
    code, _, _ = spawn.run_captured(
        [PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"], os.environ
    )
    assert code == -signal.SIGKILL


def test_sigpipe_and_sigxfsz_are_back_at_their_default_in_the_child() -> None:
    # this interpreter ignores SIGPIPE; `cat` shows the ignored set it was started with
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
    code, out, _ = spawn.run_captured(["cat", "/proc/self/status"], os.environ)
    ignored = next(
        int(line.split()[1], 16) for line in out.decode().splitlines() if line.startswith("SigIgn:")
    )
    assert code == 0
    assert not ignored & (1 << (signal.SIGPIPE - 1) | 1 << (signal.SIGXFSZ - 1))


def test_a_child_that_stops_reading_its_input_ends_the_call() -> None:
    code, out, _ = spawn.run_captured(
        [PY, "-c", "print('bye')"], os.environ, b"x" * (1 << 20)
    )
    assert (code, out) == (0, b"bye\n")


def test_a_program_is_searched_on_the_childs_path(tmp_path: Path) -> None:
    tool = tmp_path / "only-here"
    tool.write_text("#!/bin/sh\necho found $1\n")
    tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path / 'missing'}:{tmp_path}"}
    assert spawn.run_captured(["only-here", "it"], env)[1] == b"found it\n"
    with pytest.raises(FileNotFoundError):
        spawn.run_captured(["only-here"], {**os.environ, "PATH": str(tmp_path / "missing")})


def test_bl_7318_a_git_child_holds_no_copy_of_an_inheritable_lock_descriptor(
    tmp_path: Path,
) -> None:
    """A descriptor this process was handed without close-on-exec (here: a lease on an
    inbox directory) must not reach git: a git that outlived the call (an ``gc --auto``
    gone to the background) would keep the lease alive after its release."""
    box = tmp_path / "inbox"
    box.mkdir()
    fd = os.open(box, os.O_RDONLY)
    os.set_inheritable(fd, True)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        script = (
            "import os; print(sorted(int(n) for n in os.listdir('/proc/self/fd') if int(n) > 2))"
        )
        code, out, _ = spawn.run_captured([PY, "-c", script], os.environ)
        assert code == 0
        assert str(fd) not in out.decode().strip("[]\n").split(", ")
    finally:
        os.close(fd)
    lease = try_acquire(box)  # the one description is gone: nobody holds the lock
    assert lease is not None
    lease.release()


def test_r_ws_6_git_runs_without_subprocess_and_fails_with_its_text(tmp_path: Path) -> None:
    git = SubprocessGit()
    with pytest.raises(GitError) as caught:
        git.run(tmp_path, ["rev-parse", "--verify", "HEAD"])
    assert str(caught.value).startswith('git ["rev-parse", "--verify", "HEAD"] exited with')
    assert "fatal: not a git repository" in str(caught.value)


def _pipe_inode(fd: int) -> str:
    return f"pipe:[{os.fstat(fd).st_ino}]"


def test_r_launch_2_a_spawn_until_exec_returns_with_the_child_in_its_own_program() -> None:
    """``until_exec``: when the call returns, the child's ``execve`` is through. It runs its
    own program (here ``sh``, not this interpreter, whose image it shared until then) and
    holds no copy of a close-on-exec descriptor of this process."""
    marker_r, marker_w = os.pipe()  # close-on-exec, as every descriptor the library opens
    shell = "/bin/sh"
    try:
        pid = spawn.spawn([shell, "-c", "sleep 30; exit 7"], os.environ, [], setsid=True,
                          until_exec=True)
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
            held = {os.readlink(f"/proc/{pid}/fd/{n}") for n in os.listdir(f"/proc/{pid}/fd")}
        finally:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    finally:
        marker = _pipe_inode(marker_r)
        os.close(marker_r)
        os.close(marker_w)
    assert exe == os.path.realpath(shell) != os.path.realpath(PY)
    assert marker not in held


def test_r_launch_2_a_spawn_until_exec_that_cannot_start_leaves_no_descriptor() -> None:
    before = sorted(os.listdir("/proc/self/fd"))
    with pytest.raises(FileNotFoundError):
        spawn.spawn(["/nonexistent/lernie"], os.environ, [], until_exec=True)
    assert sorted(os.listdir("/proc/self/fd")) == before
