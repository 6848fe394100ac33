"""R-STEP-10: a hop calls its replaceable collaborators through the parts it is given.

The parts are the seam the seeded bugs use; these tests show that a part given to a hop
is the one its actors call, and that an installed default reaches only the hops built
while it is installed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from lernie_ref.actors.drain import deliver_actor
from lernie_ref.actors.parts import PRODUCTION
from lernie_ref.core.actor import Actor
from lernie_ref.core.ids import AgentId
from lernie_ref.inbox import RecordingLauncher, cli_prompt
from lernie_ref.substrate.deposit import Pending
from lernie_ref.substrate.gitrun import GitRunner
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import HopParts, Inline, parts_installed
from tests.support.readers import entries


def test_r_step_10_a_hop_delivers_through_the_part_it_is_given(ws: Workspace) -> None:
    root = cli_prompt(ws, "hello", "", RecordingLauncher())
    delivered: list[str] = []

    def deliver(worktree: Path, agent: AgentId, item: Pending, git: GitRunner) -> Actor[str]:
        delivered.append(item.name)
        return (yield from deliver_actor(worktree, agent, item, git))

    inline = Inline(ws)
    inline.deps = dataclasses.replace(inline.deps, parts=HopParts(deliver_actor=deliver))
    inline.hop(root)
    assert len(delivered) == 1
    assert len(entries(ws, root)) >= 2  # the prompt delivered, the model answered


def test_r_step_10_a_replaced_part_changes_what_the_hop_does(ws: Workspace) -> None:
    """With stray recovery replaced by one that finds nothing, a stray stays uncommitted."""
    root = cli_prompt(ws, "hello", "", RecordingLauncher())
    Inline(ws).hop(root)
    stray = ws.worktree(root) / "messages" / "999-stray.md"
    stray.write_text("left by a crash\n", encoding="utf-8")
    status = ["status", "--porcelain", "--", "messages"]
    with parts_installed(HopParts(recover_strays=lambda *_: False)):
        Inline(ws).hop(root)
    assert ws.git.run(ws.worktree(root), status).stdout.strip() != ""
    Inline(ws).hop(root)
    assert ws.git.run(ws.worktree(root), status).stdout.strip() == ""


def test_r_step_10_installed_parts_reach_only_hops_built_while_installed(ws: Workspace) -> None:
    parts = HopParts(unanswered_tail=lambda _: [])
    with parts_installed(parts):
        assert Inline(ws).deps.parts is parts
    assert Inline(ws).deps.parts is PRODUCTION
