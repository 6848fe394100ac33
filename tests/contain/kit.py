"""Helpers for the containment and hostile-input tests: real workspaces, the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lernie_ref.core.clock import FixedClock
from lernie_ref.substrate.workspace import Workspace, create_workspace
from tests.conftest import FIXTURE_NS, wait_quiescent
from tests.foundation.util import snapshot as _contents


def snapshot(root: Path) -> dict[str, object]:
    """Kinds and bytes of everything under ``root``, plus every directory's mtime, so a file
    written there and moved away again still shows."""
    stamps = {str(Path(d).relative_to(root)): os.stat(d).st_mtime_ns for d, _, _ in os.walk(root)}
    return {"contents": _contents(root), "dirs": stamps}


__all__ = ["World", "cli", "make_world", "one_line", "snapshot", "wait_quiescent"]


def cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.CompletedProcess[bytes]:
    """``python -m lernie_ref <args>`` as a real process; bytes in and out."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("LERNIE_")}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "lernie_ref", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=full,
        timeout=120,
        check=False,
        pass_fds=pass_fds,
    )


def one_line(proc: subprocess.CompletedProcess[bytes], verb: str, code: int = 1) -> str:
    """Assert a declined verb: exit ``code``, nothing on stdout, one ``lernie <verb>:`` line."""
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == code, err
    assert proc.stdout == b""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"lernie {verb}: "), err
    return lines[0]


@dataclass
class World:
    ws: Workspace
    root: str
    child: str
    outside: Path


def make_world(tmp: Path) -> World:
    """A workspace with a root agent (one exchange done) and a child; an outside directory."""
    ws = create_workspace(tmp / "ws")
    clock = FixedClock(FIXTURE_NS, tick_ns=1_000_000_000)
    root = ws.mint_root(clock)
    ws.create_root_agent(root, "lead", "lead the work")
    child = ws.mint_child(root, clock)
    ws.create_child_agent(root, child, "kid", "help")
    assert cli("message", str(ws.root), root, "hello").returncode == 0
    wait_quiescent(ws)
    outside = tmp / "outside"
    outside.mkdir()
    return World(ws, root, child, outside)
