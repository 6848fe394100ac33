"""``lernie message <ws> <agent> <content | - | --file PATH>``: deposit, then probe (R-PROBE-4).

The content is the argument, ``-`` for standard input, or ``--file PATH`` (R-CLI-7).

The agent is an id or a unique name. The sender is ``LERNIE_CONV_BRANCH`` when
set and non-empty, else ``user``. Nothing on stdout; exit 0 whether a driver was
launched or one was already running. This path stays light (R-CLI-5): it runs the
writer's message actor over a :class:`~lernie_ref.substrate.registry.Registry` (no
``pathlib``, no ``subprocess`` unless git must be asked) with the ``posix_spawn``
launcher.
"""

from __future__ import annotations

import os
import sys

from lernie_ref import inbox
from lernie_ref.core import TYPE_CHECKING
from lernie_ref.substrate.registry import Registry, path_text

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from lernie_ref.core.ids import AgentId



class PlainArgs:
    """The values argparse would give ``lernie message`` in its plain form (three positional
    arguments, none starting with ``-``; see :func:`lernie_ref.cli.plain_message`)."""

    def __init__(self, workspace: str, agent: str, content: str) -> None:
        self.workspace = workspace
        self.agent = agent
        self.content = content


INTERMIXED = True
"""As :data:`lernie_ref.cli.content.INTERMIXED`, set here without importing that module."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="the workspace directory")
    from lernie_ref.cli import content

    parser.add_argument("agent", help="the recipient: an agent id or a unique agent name")
    content.add(parser, "content", "the message text, deposited byte for byte")


def _preflight(root: str) -> Callable[[AgentId], None]:
    """R-CLI-8: what the recipient's driver will need, checked once the recipient is known
    and before anything is deposited; a warning when this environment chooses another model
    than the recipient's (R-STEP-9)."""

    def check(agent: AgentId) -> None:
        from lernie_ref.substrate.preflight import for_agent

        note = for_agent(root, agent, os.environ)
        if note is not None:
            sys.stderr.write(f"lernie message: {note}\n")

    return check


def run(ns: argparse.Namespace | PlainArgs) -> str | None:
    sender = inbox.resolve_cli_sender(os.environ.get(inbox.CONV_BRANCH_ENV))
    root = path_text(ns.workspace)
    ws = Registry(root)
    text = ns.content
    if isinstance(text, str) and text != "-" and getattr(ns, "file", None) is None:
        # the argument itself (the plain form, R-CLI-5): no content module, no argparse
        inbox.cli_message(
            ws, ns.agent, text, sender, inbox.AdvanceLauncher(), preflight=_preflight(root)
        )
        return None
    import argparse  # already loaded: only the parser's namespace gets here

    from lernie_ref.cli import content

    assert isinstance(ns, argparse.Namespace)
    with content.opened(ns, "content") as source:
        inbox.cli_message(
            ws, ns.agent, source, sender, inbox.AdvanceLauncher(), preflight=_preflight(root)
        )
    return None
