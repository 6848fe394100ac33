"""Helpers for the foundation tests."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from lernie_ref.core.clock import FixedClock
from lernie_ref.substrate.workspace import Workspace


def add_root(ws: Workspace, clock: FixedClock, name: str = "", goal: str = "goal") -> str:
    """Create a root agent directly (no deposit, no launch) and return its id."""
    agent = ws.mint_root(clock)
    ws.create_root_agent(agent, name, goal)
    return agent


def add_child(ws: Workspace, parent: str, clock: FixedClock, name: str = "") -> str:
    child = ws.mint_child(parent, clock)
    ws.create_child_agent(parent, child, name, "goal")
    return child


def snapshot(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every path under ``root`` with its kind and bytes: a byte-identical comparison key."""
    out: dict[str, tuple[str, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                out[rel] = ("link", os.readlink(path).encode())
            elif stat.S_ISDIR(mode):
                out[rel] = ("dir", b"")
            else:
                out[rel] = ("file", path.read_bytes())
    return out
