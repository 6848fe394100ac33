"""The `lernie-check audit`, `lernie-check conform` and `lernie-check serve-model`
subcommands."""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    """``argv`` starts with the subcommand word, ``audit``, ``conform`` or ``serve-model``."""
    verb, rest = argv[0], list(argv[1:])
    if verb == "serve-model":
        from lernie_stateful.conform.model_server import main as serve_main

        return serve_main(rest)
    if verb == "audit":
        from lernie_stateful.audit import main as audit_main

        return audit_main(rest)
    from lernie_stateful.conform.run import main as conform_main

    return conform_main(rest)
