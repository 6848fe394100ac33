"""``lernie dispatch <ws> <parent> <goal> [--name N]``: fork a child agent (R-PROBE-6).

Guards the parent, forks the child's branch from the parent's tip, deposits the
goal into the child's inbox as the parent's message, probes and launches the
child's driver, and prints the child id.
"""

from __future__ import annotations

import argparse
import os
import sys

from lernie_ref import inbox
from lernie_ref.cli import content
from lernie_ref.cli.content import INTERMIXED as INTERMIXED
from lernie_ref.cli.prompt import add_model, recorder
from lernie_ref.substrate.workspace import Workspace


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="the workspace directory")
    parser.add_argument("parent", help="the dispatching agent: an agent id or a unique agent name")
    content.add(parser, "goal", "the child's goal, deposited as the parent's message")
    parser.add_argument("--name", default="", help="a display name for the child")
    add_model(parser)


def run(ns: argparse.Namespace) -> str | None:
    from lernie_ref.actors.writer import DISPATCH_REASON
    from lernie_ref.substrate.preflight import for_new

    ws = Workspace(ns.workspace)
    with content.opened(ns, "goal") as goal:  # usage errors first (exit 2)
        parent = ws.resolve_agent(ns.parent, DISPATCH_REASON)
        spec, record, note = for_new(str(ws.root), os.environ, ns.model, parent)
        if note is not None:
            print(f"lernie dispatch: {note}", file=sys.stderr)
        return inbox.cli_dispatch(
            ws, parent, goal, ns.name, inbox.AdvanceLauncher(), created=recorder(ws, spec, record)
        )
