"""The executor lock and the baton, with real flock and real processes (R-LOCK, R-PROBE-1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lernie_ref.core.errors import AdoptError, ExecError, LockError
from lernie_ref.inbox import ProbeOutcome, RecordingLauncher, inbox_dir, probe_and_launch
from lernie_ref.substrate.lock import (
    LOCK_FD_ENV,
    ExecutorLock,
    adopt,
    take_lease,
    try_acquire,
)


def test_r_lock_1_second_try_acquire_is_busy_while_held(tmp_path: Path) -> None:
    box = tmp_path / "inbox" / "A-1"
    first = try_acquire(box)
    assert first is not None and box.is_dir()
    assert try_acquire(box) is None
    first.release()
    second = try_acquire(box)
    assert second is not None
    second.release()
    second.release()  # idempotent


def test_r_lock_1_open_error_is_a_lock_error(tmp_path: Path) -> None:
    (tmp_path / "inbox").write_bytes(b"")
    box = tmp_path / "inbox" / "A-1"
    with pytest.raises(LockError) as caught:
        try_acquire(box)
    assert str(caught.value) == (
        f"acquire executor lock on inbox {box}: Not a directory (os error 20)"
    )
    assert caught.value.detail == "Not a directory (os error 20)"


def _fork_holder(lock: ExecutorLock) -> tuple[int, int]:
    """Fork a real child that keeps its copy of the lock fd and sleeps until told to exit."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(write_end)
        os.fstat(lock.fd)  # the copy is really there
        os.read(read_end, 1)
        os._exit(0)
    os.close(read_end)
    return pid, write_end


def _finish(pid: int, write_end: int) -> None:
    os.write(write_end, b"x")
    os.close(write_end)
    os.waitpid(pid, 0)


def test_r_lock_2_release_frees_the_lease_while_a_forked_child_holds_the_fd(
    tmp_path: Path,
) -> None:
    box = tmp_path / "inbox" / "A-1"
    lock = try_acquire(box)
    assert lock is not None
    pid, wake = _fork_holder(lock)
    try:
        lock.release()
        other = try_acquire(box)
        assert other is not None, "a forked child's fd copy kept the lease (bl-7318)"
        other.release()
    finally:
        _finish(pid, wake)


def test_r_lock_2_seeded_bug_release_by_close_keeps_the_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same scenario with upstream's historic release-by-close patched in: the test sees it."""

    def close_only(self: ExecutorLock) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    box = tmp_path / "inbox" / "A-1"
    lock = try_acquire(box)
    assert lock is not None
    pid, wake = _fork_holder(lock)
    monkeypatch.setattr(ExecutorLock, "release", close_only)
    try:
        lock.release()
        assert try_acquire(box) is None
    finally:
        _finish(pid, wake)
    after = try_acquire(box)
    assert after is not None
    after.release()


def test_r_probe_1_probe_while_held_is_busy_and_launches_nothing(tmp_path: Path) -> None:
    launcher = RecordingLauncher()
    lock = try_acquire(inbox_dir(tmp_path, "A-1"))
    assert lock is not None
    assert probe_and_launch(tmp_path, "A-1", launcher) is ProbeOutcome.BUSY
    assert launcher.launches == []
    lock.release()


def test_r_probe_1_probe_releases_before_it_launches(tmp_path: Path) -> None:
    free_at_launch: list[bool] = []

    def check(ws: Path, agent: str) -> None:
        lease = try_acquire(inbox_dir(ws, agent))
        free_at_launch.append(lease is not None)
        if lease is not None:
            lease.release()

    launcher = RecordingLauncher(check)
    assert probe_and_launch(tmp_path, "A-1", launcher) is ProbeOutcome.LAUNCHED
    assert launcher.launches == [(tmp_path, "A-1")]
    assert free_at_launch == [True]
    assert (tmp_path / "inbox" / "A-1").is_dir()


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("", 'LERNIE_LOCK_FD="" is not a valid fd number'),
        ("abc", 'LERNIE_LOCK_FD="abc" is not a valid fd number'),
        (" 3", 'LERNIE_LOCK_FD=" 3" is not a valid fd number'),
        ("2147483648", 'LERNIE_LOCK_FD="2147483648" is not a valid fd number'),
        ("9999", "fstat adopted fd 9999: Bad file descriptor (os error 9)"),
        ("-1", "fstat adopted fd -1: Bad file descriptor (os error 9)"),
    ],
)
def test_r_lock_4_adopt_declines_bad_values(tmp_path: Path, raw: str, text: str) -> None:
    with pytest.raises(AdoptError) as caught:
        adopt(raw, tmp_path)
    assert str(caught.value) == text


def test_r_lock_4_adopt_checks_device_and_inode(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    fd = os.open(tmp_path / "a", os.O_RDONLY)
    try:
        with pytest.raises(AdoptError) as caught:
            adopt(str(fd), tmp_path / "b")
        assert str(caught.value) == (
            f"adopted fd {fd} is not the inbox directory {tmp_path / 'b'} (device/inode mismatch)"
        )
        os.fstat(fd)  # a declined fd is left open: it may belong to someone else
        with pytest.raises(AdoptError) as caught:
            adopt(str(fd), tmp_path / "missing")
        assert str(caught.value) == (
            f"stat inbox {tmp_path / 'missing'}: No such file or directory (os error 2)"
        )
    finally:
        os.close(fd)


def test_r_lock_4_adopt_reasserts_and_busy_is_none(tmp_path: Path) -> None:
    box = tmp_path / "A-1"
    box.mkdir()
    holder = try_acquire(box)
    assert holder is not None
    fd = os.open(box, os.O_RDONLY)
    os.set_inheritable(fd, True)
    assert adopt(str(fd), box) is None  # another description holds it: already driven
    holder.release()
    fd = os.open(box, os.O_RDONLY)
    os.set_inheritable(fd, True)
    lease = adopt(f"+{fd}", box)
    assert lease is not None and not os.get_inheritable(fd)
    assert try_acquire(box) is None
    lease.release()


def test_r_lock_4_take_lease_adopts_when_the_variable_is_present_even_empty(
    tmp_path: Path,
) -> None:
    with pytest.raises(AdoptError):
        take_lease({LOCK_FD_ENV: ""}, tmp_path)
    lease = take_lease({}, tmp_path / "A-1")
    assert lease is not None
    lease.release()


SUCCESSOR = """
import os, sys
from pathlib import Path
from lernie_ref.substrate.lock import take_lease, try_acquire
box = Path(sys.argv[1])
lease = take_lease(os.environ, box)
print("adopted" if lease is not None else "none", flush=True)
sys.stdin.readline()
lease.release()
print("released", flush=True)
"""


def test_r_lock_3_the_baton_carries_the_lease_into_a_new_program(tmp_path: Path) -> None:
    box = tmp_path / "inbox" / "A-1"
    lock = try_acquire(box)
    assert lock is not None
    env = lock.hand_off(os.environ)
    assert env[LOCK_FD_ENV] == str(lock.fd)
    child = subprocess.Popen(
        [sys.executable, "-c", SUCCESSOR, str(box)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        pass_fds=(lock.fd,),
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline() == "adopted\n"
    lock.release()  # handed off: a no-op, the lease stays with the successor
    os.close(lock.fd)  # our own copy goes away too; the successor's description keeps the lease
    assert try_acquire(box) is None
    child.stdin.write("go\n")
    child.stdin.flush()
    assert child.stdout.readline() == "released\n"
    assert child.wait(timeout=60) == 0
    after = try_acquire(box)
    assert after is not None
    after.release()


PREDECESSOR = """
import os, sys
from pathlib import Path
from lernie_ref.substrate.lock import try_acquire
box, successor = Path(sys.argv[1]), sys.argv[2]
lock = try_acquire(box)
assert lock is not None
lock.exec_successor(sys.executable, [sys.executable, "-c", successor, str(box)], os.environ)
"""


def test_r_lock_3_exec_successor_replaces_the_process_and_keeps_the_lease(
    tmp_path: Path,
) -> None:
    """I-2: the program that exec'd is gone, the same process now runs the successor, which
    adopted the lease; the lock is busy for everyone else until the successor lets go."""
    box = tmp_path / "inbox" / "A-1"
    child = subprocess.Popen(
        [sys.executable, "-c", PREDECESSOR, str(box), SUCCESSOR],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline() == "adopted\n"
    assert try_acquire(box) is None
    child.stdin.write("go\n")
    child.stdin.flush()
    assert child.stdout.readline() == "released\n"
    assert child.wait(timeout=60) == 0
    after = try_acquire(box)
    assert after is not None
    after.release()


def test_r_lock_3_failed_exec_releases_the_lease_and_says_why(tmp_path: Path) -> None:
    box = tmp_path / "inbox" / "A-1"
    lock = try_acquire(box)
    assert lock is not None
    missing = str(tmp_path / "no-such-interpreter")
    with pytest.raises(ExecError) as caught:
        lock.exec_successor(missing, [missing], {})
    assert str(caught.value) == "exec successor: No such file or directory (os error 2)"
    assert not lock.held
    after = try_acquire(box)
    assert after is not None, "a failed exec kept the lease: the agent could never run again"
    after.release()


def test_r_lock_3_a_released_lease_cannot_be_handed_on(tmp_path: Path) -> None:
    lock = try_acquire(tmp_path / "inbox" / "A-1")
    assert lock is not None
    lock.release()
    with pytest.raises(LockError):
        lock.hand_off({})


@pytest.mark.parametrize("from_descriptor", [True, False], ids=["openat", "path"])
def test_r_scan_6_the_sweeps_probe_creates_nothing_and_reads_busy_and_free(
    tmp_path: Path, from_descriptor: bool
) -> None:
    """R-SCAN-6 with R-LOCK-1: no directory is no holder (and none is made); a held lock
    reads busy; a free one is taken; a link where the directory should be is the guarded
    walk's error, as for every probe (R-WS-7)."""
    from lernie_ref.core.errors import ContainmentError
    from lernie_ref.substrate.lock import InboxAt, try_acquire_present

    root = tmp_path / "inbox"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)

    def at(name: str) -> InboxAt | Path:
        return InboxAt(fd, name, root / name) if from_descriptor else root / name

    try:
        assert try_acquire_present(at("A-1")) == (False, None)
        assert not (root / "A-1").exists()
        (root / "A-1").mkdir()
        holder = try_acquire(root / "A-1")
        assert holder is not None
        assert try_acquire_present(at("A-1")) == (True, None)
        holder.release()
        present, lease = try_acquire_present(at("A-1"))
        assert present and lease is not None and try_acquire(root / "A-1") is None
        lease.release()
        (tmp_path / "elsewhere").mkdir()
        (root / "A-2").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(ContainmentError):
            try_acquire_present(at("A-2"))
        (root / "A-3").symlink_to(tmp_path / "missing")
        assert try_acquire_present(at("A-3")) == (False, None)
    finally:
        os.close(fd)
