"""Workspaces for a test: the fixtures' instant, and agents made directly (no deposit, no
launch). States reached through the real code are in :mod:`tests.support.scenarios`."""

from __future__ import annotations

from lernie_ref.core.clock import FixedClock
from lernie_ref.core.ids import require_agent_id
from lernie_ref.substrate.workspace import Workspace

FIXTURE_NS = 1_783_728_000 * 1_000_000_000
"""2026-07-11T00:00:00Z, the instant of upstream's deposit fixtures."""


def add_root(ws: Workspace, clock: FixedClock, name: str = "", goal: str = "goal") -> str:
    """Create a root agent directly (no deposit, no launch) and return its id."""
    agent = ws.mint_root(clock)
    ws.create_root_agent(agent, name, goal)
    return agent


def add_child(ws: Workspace, parent: str, clock: FixedClock, name: str = "") -> str:
    """Create a child of ``parent`` directly (no deposit, no launch) and return its id."""
    parent_id = require_agent_id(parent)
    child = ws.mint_child(parent_id, clock)
    ws.create_child_agent(parent_id, child, name, "goal")
    return child
