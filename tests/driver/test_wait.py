"""Quiescence of an agent tree (``lernie prompt --wait``, R-LOG-2)."""

from __future__ import annotations

import pytest

from lernie_ref.core.errors import WaitTimeout
from lernie_ref.inbox import (
    AdvanceLauncher,
    RecordingLauncher,
    cli_dispatch,
    cli_prompt,
    deposit_result,
)
from lernie_ref.operator.wait import held_flocks, observe, proc_locks_usable, tree_of
from lernie_ref.operator.wait import wait_quiescent as wait_tree
from lernie_ref.substrate.lock import try_acquire
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Inline, poll
from tests.support.readers import names
from tests.support.waits import wait_quiescent


def test_tree_is_the_root_and_its_descendants_only(ws: Workspace) -> None:
    launcher = RecordingLauncher()
    root = cli_prompt(ws, "a", "", launcher)
    other = cli_prompt(ws, "b", "", launcher)
    kid = cli_dispatch(ws, root, "k", "", launcher)
    assert tree_of(ws, root) == sorted([root, kid])
    assert tree_of(ws, other) == [other]


@pytest.mark.parametrize("via_proc_locks", [True, False])
def test_a_held_lock_or_warranted_mail_is_not_quiescent(
    ws: Workspace, via_proc_locks: bool
) -> None:
    if via_proc_locks and not proc_locks_usable(ws):
        pytest.skip("/proc/locks does not show flocks here")
    inline = Inline(ws)
    root = cli_prompt(ws, "x", "", inline.launcher)
    assert inline.settle()
    assert not any(p.name.startswith(".wait-") for p in ws.steps_root.iterdir())

    def state() -> tuple[list[str], list[str]]:
        seen = observe(ws, root, held_flocks() if via_proc_locks else None, AdvanceLauncher())
        return seen.running, seen.pending

    assert state() == ([], [])
    lock = try_acquire(ws.inbox_dir(root))
    assert lock is not None
    try:
        assert state() == ([root], [])
    finally:
        lock.release()
    # a parked obituary does not keep the tree busy; a reply would
    deposit_result(ws.root, root, f"{root}-x-y", "stopped", ws.branch_tip(root), None)
    assert state() == ([], [])


def test_probe_fallback_completes_the_launch_it_may_have_deferred(ws: Workspace) -> None:
    launcher = RecordingLauncher()  # deposits the prompt, starts no driver
    root = cli_prompt(ws, "hello", "", launcher)
    state = observe(ws, root, None, AdvanceLauncher())
    assert state.pending == [root]
    poll(lambda: len(names(ws, root)) == 2, what="the driver the observer launched")
    wait_quiescent(ws)
    assert names(ws, root) == ["001-user.md", "002-scripted.json"]
    assert observe(ws, root, None, AdvanceLauncher()).settled


def test_wait_times_out_naming_the_waiting_mail(ws: Workspace) -> None:
    if not proc_locks_usable(ws):
        pytest.skip("/proc/locks does not show flocks here (the fallback would launch)")
    root = cli_prompt(ws, "hello", "", RecordingLauncher())
    ticks = iter(range(100))
    with pytest.raises(WaitTimeout, match=f"mail waiting for a driver: {root}"):
        wait_tree(
            ws,
            root,
            1.0,
            AdvanceLauncher(),
            sleep=lambda s: None,
            monotonic=lambda: float(next(ticks)),
        )
