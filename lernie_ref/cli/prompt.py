"""``lernie prompt <ws> <text> [--name N] [--wait [--timeout S]]``: start a root agent (R-PROBE-5);
``--wait`` is R-LOG-2.

Mints a root id, creates its branch and worktree, deposits the text into its own
inbox as ``user``, probes and launches its driver, and prints the id. With
``--wait`` it then waits for the agent tree to be quiescent (``lernie_ref.operator.wait``)
and prints the root's final response after the id.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from lernie_ref import inbox
from lernie_ref.cli import content
from lernie_ref.cli.content import INTERMIXED as INTERMIXED
from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.errors import AgentsDied, Interrupted, UsageError
from lernie_ref.substrate.workspace import Workspace

if TYPE_CHECKING:
    from lernie_ref.core.ids import AgentId
    from lernie_ref.substrate.preflight import Spec


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="the workspace directory")
    content.add(parser, "text", "the first prompt, deposited as the user's message")
    parser.add_argument("--name", default="", help="a display name for the new agent")
    add_model(parser)
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


def add_model(parser: argparse.ArgumentParser) -> None:
    from lernie_ref.substrate.configtext import MODELS

    parser.add_argument(
        "--model",
        choices=MODELS,
        default=None,
        help="the model the new agent runs on for good, with the settings lernie.toml and "
        "LERNIE_* give it now (default: LERNIE_MODEL, else lernie.toml's model; a child "
        "dispatched without --model runs on its parent's)",
    )


def recorder(ws: Workspace, spec: Spec, record: bool) -> Callable[[AgentId], None] | None:
    """Writes the new agent's model record (R-STEP-9) before its first deposit."""
    if not record:
        return None
    from lernie_ref.substrate.preflight import write_record

    return lambda aid: write_record(str(ws.root), aid, spec)


def start(ns: argparse.Namespace, launcher: inbox.Launcher) -> tuple[Workspace, AgentId]:
    """Check what the driver will need (R-CLI-8), then create and launch the root; returns
    the workspace and the new id."""
    from lernie_ref.substrate.preflight import for_new

    ws = Workspace(ns.workspace)
    with content.opened(ns, "text") as text:  # usage errors first (exit 2)
        ws.check_layout()
        spec, record, note = for_new(str(ws.root), os.environ, ns.model)
        if note is not None:
            print(f"lernie prompt: {note}", file=sys.stderr)
        root = inbox.cli_prompt(ws, text, ns.name, launcher, created=recorder(ws, spec, record))
    return ws, root


def run(ns: argparse.Namespace) -> str | None:
    if ns.timeout is not None and not ns.wait:
        raise UsageError("--timeout applies only with --wait")  # before anything is written
    launcher = inbox.AdvanceLauncher()
    ws, root = start(ns, launcher)
    if not ns.wait:
        return root
    try:
        return wait(ws, root, launcher, 300.0 if ns.timeout is None else ns.timeout)
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted; the agents of {root} go on without this command: "
            f"`lernie status {ws.root}` shows them, `lernie stop {ws.root} {root}` stops them"
        ) from None


def wait(ws: Workspace, root: AgentId, launcher: inbox.Launcher, timeout_s: float) -> str | None:
    """R-LOG-2: print the id, wait for the tree to settle, then report on stderr every agent
    of it that died or gave up (exit 3), else return the root's final response."""
    from lernie_ref.operator.wait import Progress, casualties, final_response, wait_quiescent

    # The id goes out first, so a timeout still tells the operator which agent it was.
    sys.stdout.write(root + "\n")
    sys.stdout.flush()
    progress = Progress(ws, root, _show) if sys.stderr.isatty() else None
    try:
        state = wait_quiescent(ws, root, timeout_s, launcher, progress=progress)
    finally:
        if progress is not None:
            progress.clear()
    dead = casualties(ws, root, state)
    answer = final_response(ws, root)
    if not dead:
        return answer
    if answer is not None:
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    for one in dead:
        guard = (
            "; the crash-loop guard stopped `lernie scan` from reviving it (R-SCAN-10)"
            if one.guarded
            else ""
        )
        line = f"lernie prompt: {one.agent} died: {one.cause} (in {one.log}){guard}"
        print(line, file=sys.stderr)
    raise AgentsDied(
        f"{len(dead)} agent(s) of {root} died with work due; fix the cause, then "
        f"`lernie scan {ws.root}` relaunches them (`lernie status {ws.root}` shows them)"
    )


def _show(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()
