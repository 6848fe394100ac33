"""Waiting for real processes to finish, without asserting on timing."""

from __future__ import annotations

import time
from pathlib import Path

from lernie_ref.substrate.workspace import Workspace
from tests.support.processes import processes_mentioning


def wait_quiescent(ws: Workspace | Path, timeout: float = 120.0) -> None:
    """Wait until no process names the workspace on its command line (launched drivers done).

    Polls with a generous timeout; never asserts on timing. The workspace must look quiet
    at two polls in a row: a driver that ``lernie message`` has just spawned can still be
    inside ``execve``, where its command line reads empty, when the command returns.
    """
    root = str(Path(ws.root if isinstance(ws, Workspace) else ws))
    deadline = time.monotonic() + timeout
    calm = 0
    while calm < 2:
        if processes_mentioning(root):
            calm = 0
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"processes still running on {root}: {processes_mentioning(root)}"
                )
        else:
            calm += 1
        if calm < 2:
            time.sleep(0.05)
