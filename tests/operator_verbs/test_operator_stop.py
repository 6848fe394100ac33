"""``lernie stop`` discovery and signalling with real processes and real signals (R-STOP-*).

The holders here are plain processes that open an inbox directory and (or not)
take its flock, so discovery is tested against the kernel's own lock records,
independently of the driver. The driver-level stops are in
``test_operator_processes.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from lernie_ref.core.errors import SelfGroup, UnknownAgent
from lernie_ref.inbox import RecordingLauncher, cli_dispatch, cli_prompt
from lernie_ref.operator.stop import (
    Holder,
    confirm,
    discover,
    is_descendant_or_self,
    is_gone,
    lock_holder_pids,
    signal_and_wait,
    stop,
    subtree_inboxes,
)
from lernie_ref.substrate.procfs import LockLine, parse_lock_line, pgid_of_stat
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import poll
from tests.support.processes import reap, spawn_holder


def test_r_stop_2_lock_lines_parse() -> None:
    assert parse_lock_line("lock:\t1: FLOCK  ADVISORY  WRITE 5314 fe:00:2170981 0 EOF") == (
        LockLine("FLOCK", "WRITE", 5314, 0xFE, 0, 2170981)
    )
    assert parse_lock_line("2: POSIX  ADVISORY  READ 17 08:01:99 0 EOF") == LockLine(
        "POSIX", "READ", 17, 8, 1, 99
    )
    assert parse_lock_line("1: -> FLOCK  ADVISORY  WRITE 5 08:01:99 0 EOF") is None
    assert parse_lock_line("garbage") is None
    assert pgid_of_stat("42 (a) weird) name) S 1 42 42 0") == 42


def test_r_stop_3_descendants_by_descent_not_by_prefix() -> None:
    assert is_descendant_or_self("a-b", "a-b")
    assert is_descendant_or_self("a-b-c-d", "a-b")
    assert is_descendant_or_self("a-b-c-d-e-f", "a-b")
    assert not is_descendant_or_self("a-b-c", "a-b")  # parent_of("a-b-c") is "a"
    assert not is_descendant_or_self("a-bc-d-e", "a-b")
    assert not is_descendant_or_self("a", "a-b")


def test_r_stop_2_the_holder_is_found_and_a_mere_opener_is_not(ws: Workspace) -> None:
    inbox = ws.inbox_root / "a-b"
    opener = spawn_holder(inbox, lock=False)
    holder = spawn_holder(inbox, lock=True)
    try:
        found = discover({"a-b": inbox})
        assert found == [Holder("a-b", holder.pid, holder.pid, driver=False)]
        assert lock_holder_pids(inbox) == [holder.pid]
    finally:
        reap(holder)
        reap(opener)
    assert discover({"a-b": inbox}) == []
    assert lock_holder_pids(inbox) == []


def test_r_stop_2_a_holder_that_lets_go_within_the_grace_is_not_signalled(ws: Workspace) -> None:
    """A writer's probe or a scan holds a lock for an instant: not an executor."""
    root = cli_prompt(ws, "lead", "", RecordingLauncher())
    prober = spawn_holder(ws.inbox_dir(root))
    try:
        (found,) = discover({root: ws.inbox_dir(root)})
        assert not found.driver

        def lets_go(_: float) -> None:
            prober.send_signal(signal.SIGUSR1)
            poll(lambda: not lock_holder_pids(ws.inbox_dir(root)), "the release")

        assert stop(ws.root, root, sleep=lets_go).signalled == []
        assert prober.poll() is None  # never signalled
    finally:
        reap(prober)


def test_r_stop_2_a_driver_is_recognised_by_its_command_line(ws: Workspace) -> None:
    root = cli_prompt(ws, "lead", "", RecordingLauncher())
    driver = spawn_holder(ws.inbox_dir(root), extra_argv=("advance", str(ws.root), root))
    try:
        (found,) = discover({root: ws.inbox_dir(root)})
        assert found.driver

        def must_not_wait(_: float) -> None:
            raise AssertionError("a driver is signalled without a grace period")

        assert confirm([found], {root: ws.inbox_dir(root)}, sleep=must_not_wait) == [found]
        report = stop(ws.root, root)
        assert [h.pid for h in report.signalled] == [driver.pid]
        assert driver.wait(timeout=60) == -signal.SIGTERM
    finally:
        reap(driver)


def test_r_stop_2_a_missing_inbox_has_no_holder(ws: Workspace) -> None:
    assert discover({"a-b": ws.inbox_root / "a-b"}) == []
    assert lock_holder_pids(ws.inbox_root / "a-b") == []


def test_r_stop_4_a_holder_in_our_own_group_is_refused_and_nothing_is_signalled(
    ws: Workspace,
) -> None:
    inbox = ws.inbox_root / "a-b"
    holder = spawn_holder(inbox, own_session=False)
    try:
        found = discover({"a-b": inbox})
        assert [h.pgid for h in found] == [os.getpgrp()]
        with pytest.raises(SelfGroup) as caught:
            signal_and_wait(found)
        assert str(caught.value).startswith(
            f"refusing to signal process group {os.getpgrp()}: it is this process's own group"
        )
        assert str(caught.value).endswith("nothing was signalled.")
        assert holder.poll() is None
    finally:
        reap(holder)


def test_r_stop_5_sigterm_ends_a_cooperative_holder(ws: Workspace) -> None:
    inbox = ws.inbox_root / "a-b"
    holder = spawn_holder(inbox)
    try:
        killed = signal_and_wait(discover({"a-b": inbox}))
        assert killed == []
        assert holder.wait(timeout=60) == -signal.SIGTERM
    finally:
        reap(holder)


def test_r_stop_5_a_holder_that_ignores_sigterm_is_killed_after_the_deadline(
    ws: Workspace,
) -> None:
    inbox = ws.inbox_root / "a-b"
    holder = spawn_holder(inbox, ignore_term=True)
    try:
        found = discover({"a-b": inbox})
        killed = signal_and_wait(found, deadline_s=0.2)
        assert killed == found
        assert holder.wait(timeout=60) == -signal.SIGKILL
    finally:
        reap(holder)


def test_r_stop_3_cascade_reaches_every_descendant_and_spares_the_rest(ws: Workspace) -> None:
    rec = RecordingLauncher()
    root = cli_prompt(ws, "lead", "", rec)
    child = cli_dispatch(ws, root, "work", "", rec)
    grandchild = cli_dispatch(ws, child, "deeper", "", rec)
    other = cli_prompt(ws, "another tree", "", rec)
    assert set(subtree_inboxes(ws.root, child)) == {child, grandchild}
    holders = {a: spawn_holder(ws.inbox_dir(a)) for a in (root, child, grandchild, other)}
    try:
        report = stop(ws.root, child)
        assert sorted(h.agent for h in report.signalled) == sorted([child, grandchild])
        assert report.killed == []
        for agent in (child, grandchild):
            assert holders[agent].wait(timeout=60) == -signal.SIGTERM
        for agent in (root, other):
            assert holders[agent].poll() is None
        assert stop(ws.root, child).signalled == []  # nothing left: idempotent
    finally:
        for proc in holders.values():
            reap(proc)


def test_r_stop_1_unknown_agent_is_declined_as_every_verb_declines_it(ws: Workspace) -> None:
    with pytest.raises(UnknownAgent) as caught:
        stop(ws.root, "nobody-here")
    assert str(caught.value).startswith('no agent "nobody-here" in this workspace — a stop ')
    assert not (ws.inbox_root / "nobody-here").exists()


def test_r_stop_5_zombies_count_as_gone(ws: Workspace) -> None:
    proc = subprocess.Popen(["true"])
    poll(lambda: is_gone(proc.pid), "the child to exit")
    assert os.path.exists(f"/proc/{proc.pid}")  # not reaped yet: a zombie
    proc.wait()
