"""Content arguments shared by ``message``, ``prompt`` and ``dispatch`` (R-CLI-7).

The text is the positional argument, or ``-`` for standard input, or ``--file PATH``
(then the positional is left out). Standard input and files are streamed into the
workspace in pieces, never read whole into memory, so any size the disk holds goes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from lernie_ref.core.errors import ContentError, io_text
from lernie_ref.substrate.deposit import ContentStream, Stream

STDIN = "-"

INTERMIXED = True
"""Verbs with a content argument set this: their optional positional may precede options."""


def add(parser: argparse.ArgumentParser, dest: str, help_text: str) -> None:
    parser.add_argument(
        dest, nargs="?", default=None, help=f"{help_text}; `-` reads it from standard input"
    )
    parser.add_argument(
        "--file",
        metavar="PATH",
        default=None,
        help=f"read the {dest} from the file PATH instead (byte for byte)",
    )
    parser.set_defaults(content_parser=parser)  # usage errors print the verb's usage


@contextmanager
def opened(ns: argparse.Namespace, dest: str) -> Iterator[str | Stream]:
    """The content as text (the argument) or as a stream (``-``, ``--file``)."""
    text: str | None = getattr(ns, dest)
    path: str | None = ns.file
    parser: argparse.ArgumentParser = ns.content_parser
    if path is not None and text is not None:
        parser.error(f"give the {dest} either as an argument or with --file, not both")
    if path is None and text is None:
        parser.error(f"the {dest} is missing: give it as an argument, `-`, or --file PATH")
    if path is None:
        assert text is not None
        if text == STDIN:
            yield ContentStream(sys.stdin.buffer, "standard input")
        else:
            yield text
        return
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise ContentError(f"read {path}: {io_text(exc)}") from None
    with handle:
        yield ContentStream(handle, path)
