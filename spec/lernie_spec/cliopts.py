"""What every `lernie-check` subcommand shares: its common options, its exit codes,
the version it reports and a progress line on stderr.

The progress line is drawn only when stderr is a terminal (or with `-v`, as plain
lines): piped or captured output stays exactly the command's product. `-q` turns it
off everywhere. Times are reported as what they are: wall time from the clock on the
wall, CPU time as the sum of the processor time of this process and its workers.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import TextIO

EXIT_CODES = """exit codes:
  0  everything checked is as expected
  1  a check failed (a violation, a survivor, a divergence, a missed bug, a failing case)
     or its input could not be read
  2  usage error (unknown option, subcommand, variant, mutant, bug or invariant)
  130  interrupted (Ctrl-C)"""


def version() -> str:
    """The installed distribution's version (the model imports nothing of the code)."""
    from importlib import metadata

    try:
        return metadata.version("lernie_ref")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Help with each option's default shown (unless the help already says it, or the
    option is a switch or has none) and the description's own line breaks kept."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        """Keep the text's own line breaks; wrap only a line longer than the width."""
        import textwrap

        return "\n".join(textwrap.fill(line, width, initial_indent=indent,
                                        subsequent_indent=indent) if len(line) > width
                         else indent + line for line in text.splitlines())

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if ("default" in text or default is None or isinstance(default, bool)
                or default == [] or default is argparse.SUPPRESS
                or (action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE)
                and not action.option_strings)):
            return text
        return text + " (default: %(default)s)"


def parser(prog: str, description: str, epilog: str = EXIT_CODES) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=prog, description=description, epilog=epilog,
                                   formatter_class=Formatter)


def add_common(ap: argparse.ArgumentParser, json: bool = True, html: bool = False) -> None:
    """`--json`, `-q`, `-v` and (for the commands that draw a report) `--html FILE`."""
    if json:
        ap.add_argument("--json", action="store_true",
                        help="print one JSON document on stdout instead of the text")
    if html:
        ap.add_argument("--html", metavar="FILE", default=None,
                        help="also write a self-contained HTML report to FILE (one file: "
                        "no network, no external scripts or fonts)")
    noise = ap.add_mutually_exclusive_group()
    noise.add_argument("-q", "--quiet", action="store_true",
                       help="no progress on stderr, even on a terminal")
    noise.add_argument("-v", "--verbose", action="store_true",
                       help="progress on stderr as plain lines even when stderr is not a "
                       "terminal, and more detail where the command has any")


class Progress:
    """One line on stderr, redrawn at most five times a second; `done` clears it.

    `mode`: "auto" draws only on a terminal, "lines" prints a line at most every two
    seconds (for logs), "off" draws nothing. On a terminal the line's clock keeps
    ticking between updates (a daemon thread redraws it every second)."""

    def __init__(self, label: str, mode: str = "auto", stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if mode == "auto":
            mode = "tty" if _isatty(self.stream) else "off"
        self.mode = mode
        self.label = label
        self.t0 = time.monotonic()
        self.cpu0 = cpu_seconds()
        self._last = 0.0
        self._shown = False
        self._text = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    @classmethod
    def of(cls, label: str, quiet: bool = False, verbose: bool = False) -> Progress:
        return cls(label, "off" if quiet else "lines" if verbose else "auto")

    @property
    def on(self) -> bool:
        return self.mode != "off"

    def update(self, text: str, force: bool = False) -> None:
        if self.mode == "off":
            return
        now = time.monotonic()
        gap = 0.2 if self.mode == "tty" else 2.0
        self._text = text
        if not force and now - self._last < gap:
            return
        self._draw(now)
        if self.mode == "tty" and self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def _draw(self, now: float) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            self._last = now
            line = f"{self.label}: {self._text} [{now - self.t0:.0f}s]"
            if self.mode == "tty":
                width = _columns(self.stream) - 1
                self.stream.write("\r\x1b[K" + line[:width])
                self._shown = True
            else:
                self.stream.write(line + "\n")
            self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            if time.monotonic() - self._last >= 1.0:
                self._draw(time.monotonic())

    def done(self) -> None:
        """Clear the line; later updates draw it again."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        with self._lock:
            if self.mode == "tty" and self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self._shown = False
        self._stop.clear()

    def times(self) -> tuple[float, float]:
        """(wall seconds, CPU seconds of this process and its finished workers) so far."""
        return time.monotonic() - self.t0, cpu_seconds() - self.cpu0


def cpu_seconds() -> float:
    """Processor time of this process and of the children it has waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timing(wall: float, cpu: float, workers: int = 1) -> str:
    """The line every long subcommand ends its text with."""
    over = f" over {workers} worker processes" if workers > 1 else ""
    return f"wall time {wall:.1f}s, CPU time {cpu:.1f}s{over}"


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _columns(stream: TextIO) -> int:
    try:
        cols = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80
    return cols if cols > 20 else 200  # a terminal that reports no size


def terminal_width(default: int = 100) -> int:
    """The width of the terminal on stdout (`COLUMNS` first), or `default` when stdout
    is not a terminal."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 20:
        return int(env)
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return default
