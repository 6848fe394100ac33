"""``lernie scan <ws> [--json]``: sweep silent deaths, then flush stranded inboxes (R-SCAN-*).

Stdout is the one report line (upstream's shape) or, with ``--json``, one JSON
object listing the agents behind every count. A final response the sweep had to
deposit on its author's behalf is also named on stderr.
"""

from __future__ import annotations

import os
import sys

from lernie_ref.actors.sweep import scan
from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.sweep import REVIVE_LIMIT
from lernie_ref.substrate.launcher import AdvanceLauncher
from lernie_ref.substrate.workspace import require_workspace

if TYPE_CHECKING:
    import argparse

    from lernie_ref.cli.plain import OperatorArgs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="the workspace directory")
    parser.add_argument("--json", action="store_true", help="print a machine-readable report")


def run(ns: argparse.Namespace | OperatorArgs) -> str | None:
    ws = require_workspace(ns.workspace)
    report = scan(ws, AdvanceLauncher(), SystemClock())
    for agent, to in report.resent:
        print(
            f"lernie scan: {agent}: its final response never reached {to}; "
            "deposited it on its behalf (R-SCAN-9)",
            file=sys.stderr,
        )
    if report.launched:
        # the configuration's words, loaded only when a driver was launched
        from lernie_ref.substrate.preflight import model_settings_in

        chosen = model_settings_in(os.environ)
    else:
        chosen = []
    if chosen:
        print(
            "lernie scan: the drivers it launched run each agent on the model recorded at its "
            f"creation; this environment's {', '.join(chosen)} counts only for agents with no "
            "record (R-STEP-9)",
            file=sys.stderr,
        )
    for agent in report.given_up:  # R-SCAN-10: why a dead agent was not relaunched
        from lernie_ref.operator.driverlog import last_log_line  # read for these rows alone

        line = last_log_line(ws, agent)
        said = f"; its driver log ends: {line}" if line else ""
        print(
            f"lernie scan: {agent} not relaunched: it died {REVIVE_LIMIT} times at the same "
            f"tip after scans revived it, so the crash-loop guard gave up{said}; fix the "
            f"cause, then run `lernie advance {ws.root} {agent}` by hand (R-SCAN-10)",
            file=sys.stderr,
        )
    return report.json_text() if ns.json else report.line()
