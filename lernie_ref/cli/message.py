"""``lernie message <ws> <agent> <content>``: deposit and make sure a driver runs (R-PROBE-4).

The agent is an id or a unique name. The sender is ``LERNIE_CONV_BRANCH`` when
set and non-empty, else ``user``. Nothing on stdout; exit 0 whether a driver was
launched or one was already running. This path stays light (R-CLI-5): it runs the
writer's message actor over a :class:`~lernie_ref.substrate.registry.Registry` (no
``pathlib``, no ``subprocess`` unless git must be asked) with the ``posix_spawn``
launcher.
"""

from __future__ import annotations

import os

from lernie_ref import inbox
from lernie_ref.substrate.registry import Registry, path_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from lernie_ref.cli import _MessageArgs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="the workspace directory")
    parser.add_argument("agent", help="the recipient: an agent id or a unique agent name")
    parser.add_argument("content", help="the message text, deposited byte for byte")


def run(ns: argparse.Namespace | _MessageArgs) -> str | None:
    sender = inbox.resolve_cli_sender(os.environ.get(inbox.CONV_BRANCH_ENV))
    ws = Registry(path_text(ns.workspace))
    inbox.cli_message(ws, ns.agent, ns.content, sender, inbox.AdvanceLauncher())
    return None
