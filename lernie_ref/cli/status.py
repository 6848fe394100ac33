"""``lernie status <ws> [--json]``: each agent, its executor, mail, last epitaph (R-STATUS-*)."""

from __future__ import annotations

import sys

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.operator.status import (
    advice,
    disk_advice,
    free_bytes,
    render_json,
    render_table,
    status,
)
from lernie_ref.substrate.workspace import require_workspace

if TYPE_CHECKING:
    import argparse

    from lernie_ref.cli.plain import OperatorArgs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="the workspace directory")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(ns: argparse.Namespace | OperatorArgs) -> str | None:
    ws = require_workspace(ns.workspace)
    rows = status(ws)
    disk = disk_advice(ws, free_bytes(ws.root))
    if disk is not None:
        print(f"lernie status: {disk}", file=sys.stderr)
    for row in rows:  # R-STATUS-5: what to do for a dead agent or stranded mail, on stderr
        hint = advice(ws, row)
        if hint is not None:
            print(f"lernie status: {hint}", file=sys.stderr)
    return render_json(rows) if ns.json else render_table(rows)
