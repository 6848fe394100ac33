"""Sweep soundness and idempotence over deaths at every protocol point (I-15, I-16, R-SCAN-*).

A child runs its whole hop chain in-process and dies right after the n-th
protocol point it passes (n drawn by Hypothesis; past the end it simply
finishes). Whatever the disk then says, two scans in a row must agree with the
rules: a `died` obituary only for a child that died mid-work, no obituary twice,
never a second copy of a reply, and nothing at all from the second scan.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lernie_ref.actors.readings import transcript_due
from lernie_ref.actors.sweep import scan
from lernie_ref.core.actor import Passed
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.warrant import Warrant
from lernie_ref.inbox import RecordingLauncher, cli_dispatch, cli_prompt, pending
from lernie_ref.reply import recipient
from lernie_ref.reply_debt import is_terminal_response, read_entries
from lernie_ref.substrate.transcript import commit_subject
from lernie_ref.substrate.workspace import Workspace, create_workspace
from lernie_ref.testing import Inline, drive
from tests.support.readers import results_from

GOALS = ["work on it", "@tools 1", "@tools 2", "@dispatch a grandchild task"]


def run_until_death(ws: Workspace, agent: str, death_at: int) -> int:
    """Drive ``agent``'s hop chain; die right after the ``death_at``-th point. Returns points."""
    passed = 0

    def die(point: Passed) -> bool:
        nonlocal passed
        passed += 1
        return passed == death_at

    Inline(ws).run_chain(agent, die)
    return passed


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(goal=st.sampled_from(GOALS), death_at=st.integers(min_value=1, max_value=45))
def test_i15_i16_sweep_after_a_death_at_any_point(goal: str, death_at: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = create_workspace(Path(tmp) / "ws")
        rec = RecordingLauncher()
        root = cli_prompt(ws, "lead", "", rec)
        drive(ws, root)
        child = cli_dispatch(ws, root, goal, "", rec)
        run_until_death(ws, child, death_at)

        tip = ws.branch_tip(child)
        mail = pending(ws.inbox_dir(child))
        due = transcript_due(ws, child)
        newest = read_entries(ws.worktree(child))[:1]
        before = results_from(ws, root, child)
        owed_to_root = (
            bool(newest)
            and is_terminal_response(newest[0])
            and recipient(ws.worktree(child), child, "final-response") == root
            and ws.git.run(ws.repo_git, ["log", "-1", "--format=%s", tip]).stdout
            == commit_subject(newest[0].seq, newest[0].origin, child)
        )

        first = scan(ws, RecordingLauncher(), SystemClock())
        after = results_from(ws, root, child)
        new = after[len(before) :]
        died = [r for r in new if r[0] == "died"]
        if died:  # I-16: only a child that died mid-work, once, at its tip
            assert died == [("died", tip)]
            assert not mail and due in (Warrant.MODEL_CALL_DUE, Warrant.UNPAIRED)
            assert first.swept == [child]
        if newest and is_terminal_response(newest[0]):
            assert not died  # a child whose newest entry is a final response is never dead
        replies = [r for r in after if r == ("final-response", tip)]
        assert len(replies) <= 1  # never a second copy of a reply
        if owed_to_root:
            assert len(replies) == 1  # R-SCAN-9: a committed reply is never lost

        second = scan(ws, RecordingLauncher(), SystemClock())  # I-15
        assert second.swept == [] and second.resent == []
        assert results_from(ws, root, child) == after
