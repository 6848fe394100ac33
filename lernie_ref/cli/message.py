"""``lernie message <ws> <agent> <content | - | --file PATH>``: deposit, then probe (R-PROBE-4).

The agent is an id or a unique name. The sender is ``LERNIE_CONV_BRANCH`` when
set and non-empty, else ``user``. Nothing on stdout; exit 0 whether a driver was
launched or one was already running. This path stays light (R-CLI-5).
"""

from __future__ import annotations

import argparse
import os

from lernie_ref import inbox
from lernie_ref.cli import content
from lernie_ref.cli.content import INTERMIXED as INTERMIXED
from lernie_ref.substrate.workspace import Workspace


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="the workspace directory")
    parser.add_argument("agent", help="the recipient: an agent id or a unique agent name")
    content.add(parser, "content", "the message text, deposited byte for byte")


def run(ns: argparse.Namespace) -> str | None:
    sender = inbox.resolve_cli_sender(os.environ.get(inbox.CONV_BRANCH_ENV))
    ws = Workspace(ns.workspace)
    with content.opened(ns, "content") as text:
        inbox.cli_message(ws, ns.agent, text, sender, inbox.AdvanceLauncher())
    return None
