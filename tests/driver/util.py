"""Helpers for the driver tests: transcript, inbox and lock readers (the in-process hop
runner ``Inline`` and ``poll`` come from :mod:`lernie_ref.testing`).

"""

from __future__ import annotations

import os
from pathlib import Path

from lernie_ref.core.entry import Entry
from lernie_ref.inbox import pending
from lernie_ref.substrate.lock import try_acquire
from lernie_ref.substrate.transcript import load
from lernie_ref.substrate.workspace import Workspace


def entries(ws: Workspace, agent: str) -> list[Entry[Path]]:
    return load(ws.worktree(agent))


def names(ws: Workspace, agent: str) -> list[str]:
    return [e.name for e in entries(ws, agent)]


def inbox_names(ws: Workspace, agent: str) -> list[str]:
    return [p.name for p in pending(ws.inbox_dir(agent))]


def subjects(ws: Workspace, agent: str) -> list[str]:
    out = ws.git.run(ws.repo_git, ["log", "--format=%s", f"agents/{agent}"]).stdout
    return out.splitlines()


def lock_is_free(ws: Workspace, agent: str) -> bool:
    lock = try_acquire(ws.inbox_dir(agent))
    if lock is None:
        return False
    lock.release()
    return True


def worktree_clean(ws: Workspace, agent: str) -> bool:
    status = ws.git.run(ws.worktree(agent), ["status", "--porcelain"]).stdout
    return status.strip() == ""


def driver_pids(ws: Workspace, agent: str) -> list[int]:
    """Pids of ``advance`` processes for exactly ``agent`` in ``ws``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[:-1]
        except OSError:
            continue
        if b"advance" in argv and argv[-1:] == [agent.encode()] and str(ws.root).encode() in argv:
            out.append(int(entry))
    return out
