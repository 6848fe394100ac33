"""Waiting for real processes to finish, without asserting on timing."""

from __future__ import annotations

from pathlib import Path

from lernie_stateful.conform.quiescence import wait_quiescent as kit_wait

from lernie_ref.substrate.workspace import Workspace


def wait_quiescent(ws: Workspace | Path, timeout: float = 120.0) -> None:
    """The kit's wait (no process names the workspace, no inbox locked), on a reference
    workspace with a generous timeout; the reference's own tree wait is for ``--wait``."""
    kit_wait(Path(ws.root if isinstance(ws, Workspace) else ws), timeout=timeout)
