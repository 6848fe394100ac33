"""``lernie scan|status <ws>`` with at most one ``--json`` run without ``argparse``
(R-CLI-5): :func:`plain_operator` gives the verb the values argparse would give it, and
``None`` for every other command line. A module of its own, imported by the package's
``__init__`` and (for the type) by the two verbs, so no verb imports the package; the
plain ``message`` form is the message verb's own (:class:`lernie_ref.cli.message.PlainArgs`).
"""

from __future__ import annotations


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
