"""The `lernie-check audit` and `lernie-check conform` subcommands."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    """``argv`` starts with the subcommand word, ``audit`` or ``conform``."""
    verb, rest = argv[0], list(argv[1:])
    if verb == "audit":
        from lernie_stateful.audit import main as audit_main

        return audit_main(rest)
    print(f"lernie-check: unknown subcommand {verb!r}", file=sys.stderr)
    return 2
