"""The ``lernie`` command line: a thin edge over the library (R-CLI-*).

Each verb lives in ``lernie_ref.cli.<verb>`` with ``configure(parser)`` and
``run(namespace) -> str | None``. Only the verb being run is imported, so
``lernie message`` pays for the message path alone (R-CLI-5). The edge turns a
:class:`~lernie_ref.core.errors.LernieError` into one stderr line
``lernie <verb>: <message>`` and the exit status of its group (:data:`EXIT_STATUS`, the
one table of them: a :class:`UsageError` exits 2); a returned string is the verb's one
product and goes to stdout (R-CLI-1, R-CLI-2, R-CLI-9).

``lernie message <ws> <agent> <content>`` in its plain form (three positional
arguments, none starting with ``-``) skips ``argparse``:
:func:`plain_message` hands the verb the same three values
argparse would, so outputs, errors and exit codes are the same; anything else (an
option, ``--``, ``-`` for standard input, ``--file``, a missing or extra argument) goes
through the parser (R-CLI-5, R-CLI-7). ``lernie scan <ws>`` and ``lernie status <ws>``,
each with or without one ``--json`` before or after the workspace, skip it the same way
(:func:`~lernie_ref.cli.plain.plain_operator`): they read every agent of the workspace,
and the parser would cost them as much as a few hundred agents.
"""

from __future__ import annotations

import sys

from lernie_ref import __version__
from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.errors import (
    AgentsDied,
    ExternalFailure,
    IntegrityError,
    Interrupted,
    InvalidInput,
    LernieError,
    NotFound,
    UsageError,
    WaitTimeout,
)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import TypeVar

    from lernie_ref.cli.plain import OperatorArgs

    _A = TypeVar("_A")

def plain_message(args: list[str]) -> tuple[str, str, str] | None:
    """``message <ws> <agent> <content>`` with no argument that argparse could read as an
    option: the workspace, the agent and the content, as argparse would give them;
    ``None`` for every other command line."""
    if len(args) != 4 or args[0] != "message":
        return None
    if any(a.startswith("-") for a in args):
        return None
    return args[1], args[2], args[3]


EXIT_STATUS: tuple[tuple[type[LernieError], int], ...] = (
    (UsageError, 2),
    (NotFound, 1),
    (InvalidInput, 1),
    (IntegrityError, 1),
    (ExternalFailure, 1),
    (WaitTimeout, 1),
    (AgentsDied, 3),
    (Interrupted, 130),
    (LernieError, 1),
)
"""R-CLI-9: the status the command exits with for an error of each group (the first group
the error belongs to); the one place an error becomes an exit status."""


def exit_status(exc: LernieError) -> int:
    """The exit status for ``exc`` (R-CLI-2, R-CLI-9)."""
    return next(status for group, status in EXIT_STATUS if isinstance(exc, group))


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
    import argparse
    import importlib

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
    import argparse
    import importlib

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


def partial_run(run: Callable[[_A], str | None], ns: _A) -> Callable[[], str | None]:
    """``run(ns)``, to be called later (``functools.partial`` without its import)."""
    return lambda: run(ns)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:  # as argparse would print it, without importing it
        sys.stdout.write(f"lernie {__version__}\n")
        return 0
    plain = plain_message(args)
    call: Callable[[], str | None]
    if plain is not None:
        from lernie_ref.cli import message

        verb = "message"
        call = partial_run(message.run, message.PlainArgs(*plain))
    else:
        import importlib

        from lernie_ref.cli.plain import plain_operator

        operator = plain_operator(args)
        if operator is not None:
            verb = operator.verb
            ns: argparse.Namespace | OperatorArgs = operator
        else:
            selected = next((a for a in args if not a.startswith("-")), None)
            if selected not in VERBS:
                selected = None
            ns = _parse(selected, args)
            verb = ns.verb
        call = partial_run(importlib.import_module(f"lernie_ref.cli.{verb}").run, ns)
    try:
        product = call()
    except LernieError as exc:
        failure = exc
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's status for SIGINT, no traceback
        failure = Interrupted("interrupted")
    else:
        if product is not None:
            sys.stdout.write(product + "\n")
            sys.stdout.flush()
        return 0
    print(f"lernie {verb}: {failure}", file=sys.stderr)
    return exit_status(failure)


def _command() -> int:
    """Run the command line of this process; flush stdout; return the exit status."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # a reader such as `head` went away: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    return code


def entry() -> None:
    """``python -m lernie_ref`` and any caller that wraps the CLI: exits by ``SystemExit``."""
    sys.exit(_command())


FAST_EXIT = ("message", "scan", "status")
"""The verbs whose installed command ends with ``os._exit`` (R-CLI-5)."""


_NAP = 50e-6
"""Seconds between two reads of a driver's command line that did not show it yet."""


def _until_shown(pids: list[int], tries: int = 2000) -> None:
    """Wait until each launched driver shows the command it was started with. The launch
    returned once the driver's ``execve`` had closed its close-on-exec descriptors; the
    kernel sets the new command line a little later in the same ``execve``, so the first
    read most often shows it. Between reads the command sleeps (a yield would hand the
    processor to any other runnable process, for a whole round on a busy machine, while
    a sleep lets the driver, now runnable, go on). Bounded: a driver that is already
    gone, or never shows it, is not waited for."""
    import os
    import time  # built in and loaded at start-up

    for pid in pids:
        for _ in range(tries):
            try:
                fd = os.open(f"/proc/{pid}/cmdline", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                break
            try:
                shown = b"advance" in os.read(fd, 1 << 16)
            except OSError:
                shown = True
            finally:
                os.close(fd)
            if shown:
                break
            time.sleep(_NAP)


def script() -> None:
    """The installed ``lernie`` command (``bin/lernie``). As :func:`entry`, except that
    ``lernie message``, ``lernie scan`` and ``lernie status`` end with ``os._exit`` once
    stdout and stderr are flushed: they leave no thread, open file or exit hook behind,
    and tearing the interpreter down would cost a message about as much as its own
    protocol work (a scan or status of a thousand agents a twentieth of its run). One that
    launched a driver first waits until the driver shows its command line
    (``_until_shown``), so anyone who looks right after the command returned finds it
    (R-CLI-5)."""
    code = _command()
    if sys.argv[1:2] and sys.argv[1] in FAST_EXIT:
        import os

        launcher = sys.modules.get("lernie_ref.substrate.launcher")
        _until_shown(list(getattr(launcher, "_LAUNCHED", None) or ()))
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
