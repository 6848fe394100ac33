"""What an agent's driver log says about its last driver: the log's last line, and whether
that driver failed (R-STEP-5) after the agent's newest mail arrived.

Read by ``lernie prompt --wait`` (R-LOG-2), ``lernie status`` (R-STATUS-5) and ``lernie
scan`` (R-SCAN-10) for the agents they flag, never for the others. Light: ``os`` only.
"""

from __future__ import annotations

import os

from lernie_ref.core import TYPE_CHECKING

if TYPE_CHECKING:
    from lernie_ref.core.ids import AgentId
    from lernie_ref.substrate.workspace import Workspace

LOG_TAIL = 8192
"""How much of a driver log's end is read for its last line."""


def last_log_line(ws: Workspace, agent: AgentId) -> str | None:
    """The last non-blank line of ``steps/<id>/driver.log`` (``None``: no log, or empty)."""
    try:
        with open(ws.driver_log(agent), "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - LOG_TAIL))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1] if lines else None


def _failure_line(line: str | None) -> bool:
    """A line a failed driver ends its log with: the CLI edge's error line (R-STEP-5) or the
    last line of a crash's traceback (an exception name and text)."""
    if line is None:
        return False
    if line.startswith("lernie advance: "):
        return True
    head = line.split(":", 1)[0]
    named = head.endswith(("Error", "Exception")) or head == "KeyboardInterrupt"
    return head.isidentifier() and named


def failed_on(ws: Workspace, agent: AgentId, newest_mail: float) -> str | None:
    """The failure line of the agent's last driver when it failed after its newest pending
    mail arrived (so it was launched for that mail, or later, and gave up), else ``None``.
    A driver launched for later mail writes its log after that mail, so a failure that
    predates the mail is never read as this mail's."""
    try:
        logged = os.stat(ws.driver_log(agent)).st_mtime
    except OSError:
        return None
    if logged < newest_mail:
        return None
    line = last_log_line(ws, agent)
    return line if _failure_line(line) else None
