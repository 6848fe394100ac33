"""The command lines the CLI edge runs without ``argparse`` (R-CLI-5, R-CLI-7).

``lernie message <ws> <agent> <content>`` in its plain form (three positional arguments,
none starting with ``-``), and ``lernie scan|status <ws>`` with at most one ``--json``:
:func:`plain_message` and :func:`plain_operator` give the verb the values argparse would
give it, and ``None`` for every other command line. A module of its own, imported by the
package's ``__init__`` and (for their types) by the verbs, so no verb imports the package.
"""

from __future__ import annotations


class MessageArgs:
    """The values argparse would give ``lernie message`` in its plain form."""

    verb = "message"

    def __init__(self, workspace: str, agent: str, content: str) -> None:
        self.workspace = workspace
        self.agent = agent
        self.content = content


def plain_message(args: list[str]) -> MessageArgs | None:
    """``message <ws> <agent> <content>`` with no argument that argparse could read as an
    option; ``None`` for every other command line."""
    if len(args) != 4 or args[0] != "message":
        return None
    if any(a.startswith("-") for a in args):
        return None
    return MessageArgs(args[1], args[2], args[3])


class OperatorArgs:
    """The values argparse would give ``lernie scan`` or ``lernie status``."""

    def __init__(self, verb: str, workspace: str, json: bool) -> None:
        self.verb = verb
        self.workspace = workspace
        self.json = json


OPERATOR_VERBS = ("scan", "status")


def plain_operator(args: list[str]) -> OperatorArgs | None:
    """``scan|status <ws>`` with at most one ``--json`` (before or after ``<ws>``) and no
    other argument argparse could read as an option; ``None`` for every other line."""
    if not args or args[0] not in OPERATOR_VERBS:
        return None
    rest = args[1:]
    json = rest.count("--json") == 1 and len(rest) == 2
    if json:
        rest.remove("--json")
    if len(rest) != 1 or rest[0].startswith("-"):
        return None
    return OperatorArgs(args[0], rest[0], json)
