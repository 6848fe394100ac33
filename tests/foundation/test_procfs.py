"""The one ``/proc`` reader answers what the kernel says about real processes: a child's
state, group, command line, environment, working directory and descriptors, a zombie as
not alive, a gone process as ``None``, and this process's own ``flock`` in the lock
table (R-STOP-2, R-WS-8, R-TOOL-7)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from lernie_ref.substrate import procfs

WAIT_FOR_STDIN = "import sys; sys.stdin.read()"


def test_a_live_childs_readings_are_the_kernels(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "LERNIE_TOOL_AGENT": "r-1"}
    child = subprocess.Popen(
        [sys.executable, "-c", WAIT_FOR_STDIN], stdin=subprocess.PIPE, cwd=tmp_path, env=env,
        start_new_session=True,
    )
    try:
        assert child.pid in procfs.pids()
        stat = procfs.stat(child.pid)
        assert stat is not None and stat.alive
        assert stat.pgid == child.pid == os.getpgid(child.pid)  # it leads its own group
        assert procfs.cmdline(child.pid) == [
            os.fsencode(sys.executable), b"-c", WAIT_FOR_STDIN.encode(), b""
        ]
        environ = procfs.environ(child.pid)
        assert environ is not None and b"LERNIE_TOOL_AGENT=r-1" in environ
        assert procfs.cwd(child.pid) == os.path.realpath(tmp_path)
        targets = dict(procfs.fd_targets(child.pid))
        assert targets["0"].startswith("pipe:")
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()


def test_a_zombie_is_not_alive_and_a_reaped_process_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped
    stat = procfs.stat(child.pid)
    assert stat is not None and stat.state == "Z" and not stat.alive
    child.wait()
    assert procfs.stat(child.pid) is None
    assert procfs.cmdline(child.pid) is None
    assert procfs.environ(child.pid) is None
    assert procfs.cwd(child.pid) is None
    assert procfs.fd_targets(child.pid) == []


def test_a_comm_with_parentheses_and_spaces_is_read_to_its_last_parenthesis() -> None:
    stat = procfs.parse_stat(b"42 (a) weird) name) S 1 40 41 0")
    assert (stat.comm, stat.state, stat.pgid) == (b"a) weird) name", "S", 40)  # ppid 1, group 40
    assert procfs.parse_stat(b"garbage").pgid is None


def test_the_lock_table_shows_this_processs_flock(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        st = os.fstat(fd)
        table = procfs.lock_table()
        assert table is not None
        assert not [line for line in table if line.is_exclusive_flock_on(st)]
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        table = procfs.lock_table()
        assert table is not None
        assert [line.pid for line in table if line.is_exclusive_flock_on(st)] == [os.getpid()]
        locks = [
            line for fd_name, link in procfs.fd_targets(os.getpid()) if link == str(tmp_path)
            for line in procfs.fd_lock_lines(os.getpid(), fd_name) or ()
        ]
        assert len(locks) == 1 and "FLOCK" in locks[0]
    finally:
        os.close(fd)


def _stat_of(major: int, minor: int, inode: int) -> os.stat_result:
    return os.stat_result((0o40755, inode, os.makedev(major, minor), 1, 0, 0, 0, 0, 0, 0))


_LINES = st.builds(
    procfs.LockLine,
    kind=st.sampled_from(["FLOCK", "POSIX", "OFDLCK"]),
    mode=st.sampled_from(["WRITE", "READ"]),
    pid=st.integers(1, 9),
    dev_major=st.integers(0, 2),
    dev_minor=st.integers(0, 2),
    inode=st.integers(1, 3),
)


@given(st.lists(_LINES, max_size=12), st.integers(0, 2), st.integers(0, 2), st.integers(1, 3))
def test_r_status_1_the_holder_index_answers_what_each_line_says(
    table: list[procfs.LockLine], major: int, minor: int, inode: int
) -> None:
    """``lernie status`` walks the lock table once for every agent: each file's holders are
    the pids of the lines that are an exclusive ``flock`` on it, in table order."""
    file = _stat_of(major, minor, inode)
    expected = [line.pid for line in table if line.is_exclusive_flock_on(file)]
    assert procfs.FlockHolders(table).on(file) == expected


def test_r_status_1_the_holder_index_of_the_kernels_table_names_the_exclusive_holder_only(
    tmp_path: Path,
) -> None:
    exclusive, shared = tmp_path / "exclusive", tmp_path / "shared"
    exclusive.mkdir()
    shared.mkdir()
    fds = [os.open(p, os.O_RDONLY | os.O_DIRECTORY) for p in (exclusive, shared)]
    try:
        fcntl.flock(fds[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fds[1], fcntl.LOCK_SH | fcntl.LOCK_NB)
        table = procfs.lock_table()
        assert table is not None
        held = procfs.FlockHolders(table)
        assert held.on(os.stat(exclusive)) == [os.getpid()]
        assert held.on(os.stat(shared)) == []  # a shared lock is no executor's
        assert held.on(os.stat(tmp_path)) == []
    finally:
        for fd in fds:
            os.close(fd)
