"""``lernie new <ws>``: create a workspace (R-WS-1). Prints nothing on success."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="directory to create (must be new or empty)")


def run(ns: argparse.Namespace) -> str | None:
    from lernie_ref.substrate.workspace import create_workspace

    if not ns.workspace:
        from lernie_ref.core.errors import UsageError

        raise UsageError("the workspace path is empty")
    create_workspace(ns.workspace)
    return None
