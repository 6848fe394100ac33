"""``lernie dispatch <ws> <parent> <goal> [--name N]``: fork a child agent (R-PROBE-6).

Guards the parent, forks the child's branch from the parent's tip, deposits the
goal into the child's inbox as the parent's message, probes and launches the
child's driver, and prints the child id.
"""

from __future__ import annotations

import argparse

from lernie_ref import inbox
from lernie_ref.cli import content
from lernie_ref.cli.content import INTERMIXED as INTERMIXED
from lernie_ref.substrate.workspace import Workspace


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="the workspace directory")
    parser.add_argument("parent", help="the id of the dispatching agent")
    content.add(parser, "goal", "the child's goal, deposited as the parent's message")
    parser.add_argument("--name", default="", help="a display name for the child")


def run(ns: argparse.Namespace) -> str | None:
    ws = Workspace(ns.workspace)
    with content.opened(ns, "goal") as goal:
        return inbox.cli_dispatch(ws, ns.parent, goal, ns.name, inbox.AdvanceLauncher())
