"""``lernie prompt <ws> <text> [--name N] [--wait [--timeout S]]``: start a root agent (R-PROBE-5);
``--wait`` is R-LOG-2.

Mints a root id, creates its branch and worktree, deposits the text into its own
inbox as ``user``, probes and launches its driver, and prints the id. With
``--wait`` it then waits for the agent tree to be quiescent (``lernie_ref.operator.wait``)
and prints the root's final response after the id.
"""

from __future__ import annotations

import argparse

from lernie_ref import inbox
from lernie_ref.cli import content
from lernie_ref.cli.content import INTERMIXED as INTERMIXED
from lernie_ref.core.errors import UsageError
from lernie_ref.substrate.workspace import Workspace


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="the workspace directory")
    content.add(parser, "text", "the first prompt, deposited as the user's message")
    parser.add_argument("--name", default="", help="a display name for the new agent")
    parser.add_argument(
        "--wait",
        action="store_true",
        help="print the id, wait until the agent tree it started is quiescent (no executor "
        "lock held, no mail that warrants a launch), then print the root's final response "
        "(nothing for a silent one) on the following lines",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=None,
        metavar="S",
        help="with --wait: give up after S seconds (default 300), exit 1 naming what still runs",
    )


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse reports anything else, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def start(ns: argparse.Namespace, launcher: inbox.Launcher) -> tuple[Workspace, str]:
    """Create and launch the root; returns the workspace and the new id."""
    ws = Workspace(ns.workspace)
    with content.opened(ns, "text") as text:
        root = inbox.cli_prompt(ws, text, ns.name, launcher)
    return ws, root


def run(ns: argparse.Namespace) -> str | None:
    if ns.timeout is not None and not ns.wait:
        raise UsageError("--timeout applies only with --wait")  # before anything is written
    launcher = inbox.AdvanceLauncher()
    ws, root = start(ns, launcher)
    if not ns.wait:
        return root
    import sys

    from lernie_ref.operator.wait import final_response, wait_quiescent

    # The id goes out first, so a timeout still tells the operator which agent it was.
    sys.stdout.write(root + "\n")
    sys.stdout.flush()
    wait_quiescent(ws, root, 300.0 if ns.timeout is None else ns.timeout, launcher)
    return final_response(ws, root)
