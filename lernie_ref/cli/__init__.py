"""The ``lernie`` command line: a thin edge over the library (R-CLI-*).

Each verb lives in ``lernie_ref.cli.<verb>`` with ``configure(parser)`` and
``run(namespace) -> str | None``. Only the verb being run is imported, so
``lernie message`` pays for the message path alone (R-CLI-5). The edge turns a
:class:`~lernie_ref.core.errors.LernieError` into one stderr line
``lernie <verb>: <message>`` and exit 1 (a :class:`UsageError` exits 2); a
returned string is the verb's one product and goes to stdout (R-CLI-1, R-CLI-2).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from lernie_ref import __version__
from lernie_ref.core.errors import LernieError

VERBS: dict[str, str] = {
    "new": "create a workspace",
    "prompt": "mint a root agent and give it its first prompt",
    "dispatch": "fork a child of an existing agent with a goal",
    "message": "deposit a message into an agent's inbox and make sure a driver runs",
    "advance": "drive one hop of an agent (launched by the harness)",
    "log": "print an agent's transcript",
    "scan": "sweep silent deaths and flush inboxes that have no driver",
    "stop": "stop an agent's executor and those of its descendants",
    "status": "show every agent: executor, pending mail, last epitaph",
}


def _parser(selected: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lernie",
        description="Run agents that talk through inbox directories in a git-backed workspace.",
    )
    parser.add_argument("--version", action="version", version=f"lernie {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="<verb>", required=True)
    for verb, help_text in VERBS.items():
        verb_parser = sub.add_parser(verb, help=help_text, description=help_text)
        if verb == selected:
            importlib.import_module(f"lernie_ref.cli.{verb}").configure(verb_parser)
    return parser


def _parse(selected: str | None, args: list[str]) -> argparse.Namespace:
    """Parse ``args``; a verb whose module sets ``INTERMIXED`` (an optional positional
    followed by options, R-CLI-7) is parsed on its own with positionals and options mixed."""
    if selected is not None and args and args[0] == selected:
        module = importlib.import_module(f"lernie_ref.cli.{selected}")
        if getattr(module, "INTERMIXED", False):
            verb_parser = argparse.ArgumentParser(
                prog=f"lernie {selected}", description=VERBS[selected]
            )
            module.configure(verb_parser)
            ns = verb_parser.parse_intermixed_args(args[1:])
            ns.verb = selected
            return ns
    return _parser(selected).parse_args(args)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    selected = next((a for a in args if not a.startswith("-")), None)
    if selected not in VERBS:
        selected = None
    ns = _parse(selected, args)
    verb: str = ns.verb
    module = importlib.import_module(f"lernie_ref.cli.{verb}")
    try:
        product: str | None = module.run(ns)
    except LernieError as exc:
        print(f"lernie {verb}: {exc}", file=sys.stderr)
        return exc.exit_code
    if product is not None:
        sys.stdout.write(product + "\n")
        sys.stdout.flush()
    return 0


def entry() -> None:
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # a reader such as `head` went away: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    entry()
