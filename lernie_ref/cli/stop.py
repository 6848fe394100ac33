"""``lernie stop <ws> <agent>``: stop an agent's executor and its descendants' (R-STOP-*).

Prints nothing on stdout (R-CLI-1). When no executor held any lock in the subtree
the verb still succeeds, with one stderr line saying there was nothing to stop.
"""

from __future__ import annotations

import argparse
import sys

from lernie_ref.operator.stop import STOP_DEADLINE_S, stop


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="the workspace directory")
    parser.add_argument(
        "agent", help="the agent whose tree to stop: an agent id or a unique agent name"
    )
    parser.add_argument(
        "--stop-children",
        action="store_true",
        help="accepted for compatibility; descendants are always stopped (the cascade is the stop)",
    )


def run(ns: argparse.Namespace) -> str | None:
    report = stop(ns.workspace, ns.agent)
    agent = report.agent
    if not report.signalled:
        print(
            f"lernie stop: nothing to stop — no executor holds the lock of {agent} "
            "or of any of its descendants",
            file=sys.stderr,
        )
    for holder in report.killed:
        print(
            f"lernie stop: pid {holder.pid} (executor of {holder.agent}) outlived the "
            f"{STOP_DEADLINE_S:g}s deadline after SIGTERM; sent SIGKILL",
            file=sys.stderr,
        )
    return None
