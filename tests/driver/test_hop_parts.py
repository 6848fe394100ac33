"""R-STEP-10: an actor calls its replaceable collaborators through the parts it is given.

The parts are the seam the seeded bugs use; these tests show that a part given to a hop,
a writer, a sweep, a tool context or the debt's readers is the one they call, and that
an installed default reaches only what is built while it is installed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lernie_ref.actors.drain import deliver_actor
from lernie_ref.actors.parts import PRODUCTION
from lernie_ref.actors.probe import ProbeOutcome
from lernie_ref.actors.sweep import scan_actor
from lernie_ref.actors.tools import TOOL_PARTS, ToolContext, ToolOutcome
from lernie_ref.core.actor import Actor, run
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.debt import READING
from lernie_ref.core.ids import AgentId
from lernie_ref.inbox import RecordingLauncher, cli_message, cli_prompt
from lernie_ref.operator.status import status
from lernie_ref.substrate.deposit import Pending
from lernie_ref.substrate.gitrun import GitRunner
from lernie_ref.substrate.launcher import Launcher
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import (
    DebtReading,
    HopParts,
    Inline,
    SweepParts,
    ToolParts,
    WriterParts,
    parts_installed,
)
from tests.support.readers import entries, inbox_names
from tests.support.tool_calls import agent, call, text


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


def test_r_step_10_parts_objects_are_frozen() -> None:
    """A parts object cannot be changed once built: a replaced part is a new object."""
    for parts, name in ((WriterParts(), "probe"), (SweepParts(), "acquire"),
                        (DebtReading(), "owes"), (ToolParts(), "end_call"),
                        (HopParts(), "recipient")):
        with pytest.raises(AttributeError):
            setattr(parts, name, print)


def test_r_step_10_a_writer_probes_through_its_parts(ws: Workspace) -> None:
    """With a writer whose probe is replaced, the deposit lands and nobody is launched."""
    probed: list[str] = []

    def probe(root: str | Path, agent: AgentId, launcher: Launcher) -> Actor[ProbeOutcome]:
        probed.append(agent)
        return ProbeOutcome.BUSY
        yield  # pragma: no cover - makes this a generator

    root = cli_prompt(ws, "hello", "", RecordingLauncher())
    launcher = RecordingLauncher()
    with parts_installed(WriterParts(probe=probe)):
        cli_message(ws, root, "more", "user", launcher)
    assert probed == [root] and launcher.launches == []
    assert len(inbox_names(ws, root)) == 2  # the prompt and the message, both pending
    cli_message(ws, root, "again", "user", launcher)  # production's writer again
    assert launcher.launches == [(ws.root, root)]


def test_r_step_10_the_sweep_tries_locks_through_its_parts(ws: Workspace) -> None:
    """A sweep whose lock try always finds the lock held takes every agent for driven."""
    root = cli_prompt(ws, "hello", "", RecordingLauncher())
    Inline(ws).hop(root)  # answered: at rest, its lock free
    held = SweepParts(acquire=lambda inbox: (True, None))
    assert run(scan_actor(ws, RecordingLauncher(), SystemClock(), parts=held)).driven == [root]
    with parts_installed(held):
        assert run(scan_actor(ws, RecordingLauncher(), SystemClock())).driven == [root]
    assert run(scan_actor(ws, RecordingLauncher(), SystemClock())).driven == []


def test_r_step_10_one_debt_reading_reaches_the_hop_the_sweep_and_status(ws: Workspace) -> None:
    """The installed reading is the one the hop's deps, a scan and ``status`` read; a
    reading that sees no terminal response makes ``status`` show no final response."""
    root = cli_prompt(ws, "hello", "", RecordingLauncher())
    Inline(ws).hop(root)
    assert [row.last_epitaph for row in status(ws)] == ["final-response"]
    blind = DebtReading(terminal=lambda entry: False)
    assert [row.last_epitaph for row in status(ws, blind)] == [None]
    with parts_installed(blind):
        assert Inline(ws).deps.debt is blind
        assert [row.last_epitaph for row in status(ws)] == [None]
    assert Inline(ws).deps.debt is READING


def test_r_step_10_apply_patch_runs_through_the_tool_context_parts(ws: Workspace) -> None:
    """``apply_patch`` (alone or inside ``multi_tool``) is the context's part."""

    def refuse(raw: object, ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome("refused by the part", True)

    ctx = dataclasses.replace(agent(ws), parts=ToolParts(apply_patch=refuse))
    assert text(call(ctx, "apply_patch", input="*** Begin Patch\n*** End Patch\n")) == (
        "refused by the part"
    )
    multi = call(ctx, "multi_tool", invocations=[{"name": "apply_patch", "input": {}}])
    assert "refused by the part" in text(multi)
    with parts_installed(ToolParts(apply_patch=refuse)):
        assert agent(ws).parts.apply_patch is refuse
    assert agent(ws).parts is TOOL_PARTS
