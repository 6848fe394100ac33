"""The shell commands that README.md and docs/*.md show, and a check of each.

The convention the documentation follows (and :func:`extract` enforces):

- A shell command is a line starting with ``$ `` inside a fenced block tagged
  ``console``. The lines after it that do not start with ``$ `` are its output,
  except while the command's quoting is still open: then they continue it (a
  prompt text over several lines).
- Commands appear nowhere else: a fenced block tagged ``sh``, ``bash``, ``shell``
  or ``shell-session``, or an indented block holding a ``$ `` line or a line that
  starts with a known program, is reported as a problem.

:func:`check` says whether one command can run as written, without running
anything expensive: a ``lernie`` verb is parsed by the CLI's own parser; a
``lernie-check`` command by the parser of its subcommand, stopped right after
parsing (and its variant, invariant and mutant names looked up); ``python -m``
modules and scripts of the repository by their own parsers, stopped the same
way; ``pip install`` by the extras the project declares; ``pytest`` by the
options ``pytest --help`` lists here and the paths it names. Everything else
must be a program on ``PATH`` or a shell builtin, or sit in :data:`ALLOWED`
with the reason it cannot be checked here. :func:`runs_for_real` picks the
cheap commands the test also runs for real.

Inline code in the prose that names a ``lernie`` verb, a ``lernie-check``
subcommand or a ``python -m`` module (a synopsis such as ``lernie stop <ws> <id>``,
or a name) is a mention, not a command: :func:`check_mention` checks that the verb,
subcommand, module and every ``--option`` it names exist.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import re
import runpy
import shlex
import shutil
import sys
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Programs shown in the docs that this machine's test environment cannot run, and why.
ALLOWED: dict[tuple[str, str], str] = {
    ("hypothesis", "fuzz"): "HypoFuzz is not in the test extra (installed by hand for "
                            "long campaigns, docs/refinement.md)",
}
# pytest options of plugins outside the test extra.
ALLOWED_PYTEST_OPTIONS: dict[str, str] = {
    "-n": "pytest-xdist is not in the test extra (docs/refinement.md, Scale-out)",
}
SHELL_BUILTINS = frozenset({"export", "cd"})
PLAIN_PROGRAMS = frozenset({"git", "chmod", "mypy", "ruff", "lint-imports"})
PIP_OPTIONS = frozenset({"-q", "-e", "--no-build-isolation", "--upgrade", "-U"})
PYTEST_VALUE_OPTIONS = frozenset({"-m", "-k", "-n", "-p", "-c"})
OPERATORS = frozenset({"&&", "||", "|", ";", "&"})
KNOWN_PROGRAMS = re.compile(r"^\s*(\$ |lernie(-check)? |\.venv\S*/bin/|pip |python3? )")


@dataclass(frozen=True)
class DocCommand:
    """One ``$ `` command of a ``console`` block: where it is and its text."""

    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: $ {self.text}"


@dataclass(frozen=True)
class Segment:
    """One simple command of a pipeline: its variable assignments and its argv."""

    env: dict[str, str]
    argv: list[str]

    @property
    def program(self) -> str:
        name = Path(self.argv[0]).name if "/" in self.argv[0] else self.argv[0]
        return "python" if name in ("python3", "python3.11") else name


def _complete(text: str) -> bool:
    try:
        shlex.split(text, comments=True)
    except ValueError:
        return False
    return True


def extract(markdown: str, path: str) -> tuple[list[DocCommand], list[str]]:
    """The commands of ``markdown`` and the places that break the convention."""
    commands: list[DocCommand] = []
    problems: list[str] = []
    fence: str | None = None
    open_cmd: tuple[int, str] | None = None
    previous_blank = True
    for number, line in enumerate(markdown.splitlines(), start=1):
        stripped = line.strip()
        if fence is None:
            if stripped.startswith("```"):
                fence = stripped[3:].strip() or "plain"
                if fence in ("sh", "bash", "shell", "shell-session"):
                    problems.append(f"{path}:{number}: a ```{fence} block; commands go in "
                                    "```console blocks with `$ ` prompts")
            elif line.startswith("    ") and previous_blank and KNOWN_PROGRAMS.match(line):
                problems.append(f"{path}:{number}: an indented command ({stripped!r}); "
                                "commands go in ```console blocks with `$ ` prompts")
            previous_blank = not stripped or (previous_blank and line.startswith("    "))
            continue
        if stripped.startswith("```"):
            if open_cmd is not None:
                problems.append(f"{path}:{open_cmd[0]}: the command's quoting never closes")
                open_cmd = None
            fence = None
            previous_blank = False
            continue
        if fence != "console":
            continue
        if open_cmd is not None:
            start, text = open_cmd
            text = text + "\n" + line
            if _complete(text):
                commands.append(DocCommand(path, start, text))
                open_cmd = None
            else:
                open_cmd = (start, text)
            continue
        body = line.lstrip()
        if body.startswith("$ "):
            text = body[2:]
            if _complete(text):
                commands.append(DocCommand(path, number, text))
            else:
                open_cmd = (number, text)
    if fence is not None:
        problems.append(f"{path}: a fenced block never closes")
    return commands, problems


def segments(text: str) -> list[Segment]:
    """The simple commands of a command line, split at ``&&``, ``||``, ``|``, ``;``."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    out: list[Segment] = []
    current: list[str] = []
    for token in [*lexer, ";"]:
        if token in OPERATORS:
            if current:
                env: dict[str, str] = {}
                while current and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", current[0]):
                    key, _, value = current.pop(0).partition("=")
                    env[key] = value
                out.append(Segment(env, current) if current else Segment(env, ["export"]))
            current = []
        elif token in ("<", ">", ">>"):
            current.append(token)  # a redirection: nothing the docs show; refused below
        else:
            current.append(token)
    return out


class _Parsed(Exception):
    def __init__(self, ns: argparse.Namespace) -> None:
        super().__init__("parsed")
        self.ns = ns


@contextlib.contextmanager
def _stop_after_parsing() -> Iterator[None]:
    """Make every top-level ``parse_args`` raise :class:`_Parsed` once it succeeds, so a
    command's own ``main`` checks its arguments and does nothing else."""
    parse_args = argparse.ArgumentParser.parse_args
    parse_intermixed = argparse.ArgumentParser.parse_intermixed_args

    def stop(self: argparse.ArgumentParser, args: Sequence[str] | None = None
             ) -> argparse.Namespace:
        raise _Parsed(parse_args(self, args))

    def stop_intermixed(self: argparse.ArgumentParser, args: Sequence[str] | None = None
                        ) -> argparse.Namespace:
        raise _Parsed(parse_intermixed(self, args))

    # setattr: a method cannot be assigned under mypy
    setattr(argparse.ArgumentParser, "parse_args", stop)  # noqa: B010
    setattr(argparse.ArgumentParser, "parse_intermixed_args", stop_intermixed)  # noqa: B010
    try:
        yield
    finally:
        setattr(argparse.ArgumentParser, "parse_args", parse_args)  # noqa: B010
        setattr(argparse.ArgumentParser, "parse_intermixed_args", parse_intermixed)  # noqa: B010


def _parse_only(
    call: Callable[..., object], *args: object
) -> tuple[argparse.Namespace | None, str | None]:
    """Run ``call(*args)`` until its parser has parsed: (namespace, None), or (None, why)."""
    err = io.StringIO()
    try:
        with _stop_after_parsing(), contextlib.redirect_stderr(err), \
                contextlib.redirect_stdout(io.StringIO()):
            call(*args)
    except _Parsed as parsed:
        return parsed.ns, None
    except SystemExit as exit_:
        if exit_.code in (0, None):  # --help, --version
            return None, None
        lines = err.getvalue().strip().splitlines()
        return None, lines[-1] if lines else f"exit {exit_.code}"
    return None, "ran to its end without parsing any arguments"


def _check_lernie(args: list[str]) -> str | None:
    from lernie_ref.cli import VERBS, _parse

    if not args:
        return "lernie without a verb"
    if args[0] in ("-h", "--help", "--version"):
        return None
    if args[0] not in VERBS:
        return f"lernie has no verb {args[0]!r} (verbs: {', '.join(VERBS)})"
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            _parse(args[0], args)
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            return err.getvalue().strip().splitlines()[-1]
    return None


def _check_lernie_check(args: list[str]) -> str | None:
    from lernie_spec.properties import INVARIANTS
    from lernie_spec.variants import BY_NAME
    from lernie_stateful import cli

    if args and args[0] in ("-h", "--help", "--version"):
        return None
    if args and not args[0].startswith("-") and args[0] not in cli.SUBCOMMANDS:
        return f"lernie-check has no subcommand {args[0]!r}"
    name, rest = (args[0], args[1:]) if args and args[0] in cli.SUBCOMMANDS else (
        cli.DEFAULT, args)
    ns, why = _parse_only(cli.run, name, rest)
    if why is not None or ns is None:
        return why
    if name == "mutants":
        from lernie_stateful.model_mutants import CATALOGUE

        unknown = set(ns.names) - {m.name for m in CATALOGUE}
        return f"no mutant {sorted(unknown)[0]!r}" if unknown else None
    if name != "check":
        return None
    for variant in ns.variant or []:
        if variant not in BY_NAME:
            return f"no variant {variant!r}"
    if ns.invariant is not None and ns.invariant not in INVARIANTS:
        return f"no invariant {ns.invariant!r}"
    return None


def _extras() -> set[str]:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)["project"]
    return set(project.get("optional-dependencies", {}))


def _check_pip(args: list[str]) -> str | None:
    if not args or args[0] != "install":
        return "only `pip install` is checked; add a checker for another pip command"
    for arg in args[1:]:
        if arg.startswith("-"):
            if arg not in PIP_OPTIONS:
                return f"pip install option {arg!r} is not one this test knows"
            continue
        match = re.fullmatch(r"(\.|lernie_ref)(?:\[([^\]]*)\])?", arg)
        if match is None:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*([<>=!~]=?[0-9.*]+)?", arg):
                return f"{arg!r} is not a requirement pip reads"
            continue  # a package of its own (mypy, setuptools, redis, ...)
        for extra in filter(None, (match.group(2) or "").split(",")):
            if extra.strip() not in _extras():
                return f"the project declares no extra {extra!r} (extras: {sorted(_extras())})"
    return None


_PYTEST_HELP: list[str] = []


def _pytest_help() -> str:
    if not _PYTEST_HELP:
        import subprocess

        proc = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=ROOT,
                              capture_output=True, text=True, timeout=120, check=False)
        _PYTEST_HELP.append(proc.stdout)
    return _PYTEST_HELP[0]


def _check_pytest(args: list[str]) -> str | None:
    expect_value = False
    for arg in args:
        if expect_value:
            expect_value = False
            continue
        if arg.startswith("-"):
            option = arg.split("=", 1)[0]
            if option in ALLOWED_PYTEST_OPTIONS:
                expect_value = "=" not in arg and option in PYTEST_VALUE_OPTIONS
                continue
            if not re.search(rf"(^|[\s,]){re.escape(option)}([\s,=]|$)", _pytest_help(), re.M):
                return f"pytest has no option {option!r} here"
            expect_value = "=" not in arg and option in PYTEST_VALUE_OPTIONS
            continue
        if not (ROOT / arg.split("::", 1)[0]).exists():
            return f"pytest path {arg!r} does not exist"
    return None


def _check_python(args: list[str]) -> str | None:
    if len(args) >= 2 and args[0] == "-m":
        module, rest = args[1], args[2:]
        if module == "venv":
            return None if rest else "python -m venv needs a directory"
        if module == "lernie_ref":
            return _check_lernie(rest)
        if module in ("pytest",):
            return _check_pytest(rest)
        if importlib.util.find_spec(module) is None:
            return f"no module {module!r}"
        return _parse_only(_run_module, module, rest)[1]
    if args and args[0].endswith(".py"):
        script = ROOT / args[0]
        if not script.is_file():
            return f"no script {args[0]!r}"

        def run_script() -> None:
            saved = sys.argv
            sys.argv = [str(script), *args[1:]]
            try:
                runpy.run_path(str(script), run_name="__main__")
            finally:
                sys.argv = saved

        return _parse_only(run_script)[1]
    return f"python {' '.join(args)}: not a form this test knows (-m MODULE, or a script)"


def check_segment(seg: Segment) -> str | None:
    """None when ``seg`` can run as written, else why not."""
    if any(tok in ("<", ">", ">>") for tok in seg.argv):
        return "a redirection; this test does not check those"
    program, args = seg.program, seg.argv[1:]
    if (program, args[0] if args else "") in ALLOWED:
        return None
    if program in SHELL_BUILTINS:
        return None
    if program == "lernie":
        return _check_lernie(args)
    if program == "lernie-check":
        return _check_lernie_check(args)
    if program == "pip":
        return _check_pip(args)
    if program == "pytest":
        return _check_pytest(args)
    if program == "python":
        return _check_python(args)
    if program == "timeout":
        rest = list(args)
        while rest and rest[0].startswith("-"):
            option = rest.pop(0)
            if option in ("-s", "-k", "--signal", "--kill-after") and rest:
                rest.pop(0)
        if len(rest) < 2 or not re.fullmatch(r"[0-9.]+[smhd]?", rest[0]):
            return "timeout needs a duration and a command"
        return check_segment(Segment({}, rest[1:]))
    if program in PLAIN_PROGRAMS:
        venv_bin = str(Path(sys.executable).parent)
        found = shutil.which(program) or shutil.which(program, path=venv_bin)
        return None if found else f"{program} is not on PATH"
    return f"unknown program {program!r}: fix the doc, or teach this test to check it"


def check(command: DocCommand) -> str | None:
    """None when every simple command of ``command`` can run as written, else why not."""
    try:
        parts = segments(command.text)
    except ValueError as exc:
        return f"cannot split: {exc}"
    if not parts:
        return "an empty command"
    for seg in parts:
        why = check_segment(seg)
        if why is not None:
            return f"{' '.join(seg.argv)}: {why}"
    return None


MENTION = re.compile(r"`([^`]+)`")
MENTIONED = re.compile(r"^(lernie|lernie-check|python3? -m) ")


def mentions(markdown: str, path: str) -> list[DocCommand]:
    """Inline code outside fences that names a ``lernie`` verb, a ``lernie-check``
    subcommand or option, or a ``python -m`` module: synopses (``lernie stop <ws>
    <id>``) and names in prose, not commands to paste. Error messages quoted in the
    text (``lernie stop: ...``) are left out."""
    lines, fenced = [], False
    for line in markdown.split("\n"):
        if line.strip().startswith("```"):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    text = "\n".join(lines)
    out = []
    for match in MENTION.finditer(text):
        span = " ".join(match.group(1).split())
        words = span.split()
        if MENTIONED.match(span) and not words[1].endswith(":"):
            out.append(DocCommand(path, text.count("\n", 0, match.start()) + 1, span))
    return out


def _help_of(call: Callable[..., object], *args: object) -> str:
    out = io.StringIO()
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(io.StringIO()):
        call(*args)
    return out.getvalue()


def _options_missing(span: str, help_text: str) -> str | None:
    for option in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", span):
        if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_text):
            return f"no option {option}"
    return None


def check_mention(mention: DocCommand) -> str | None:
    """None when the verb, subcommand, options and module a mention names exist."""
    words = mention.text.split()
    if words[0] == "lernie":
        from lernie_ref.cli import VERBS, _parse

        verb = words[1]
        if verb in ("--version", "--help", "-h"):
            return None
        if verb not in VERBS:
            return f"lernie has no verb {verb!r}"
        return _options_missing(mention.text, _help_of(_parse, verb, [verb, "--help"]))
    if words[0] == "lernie-check":
        from lernie_stateful import cli

        sub = words[1] if words[1] in cli.SUBCOMMANDS else None
        if sub is None and not words[1].startswith(("-", "[")):
            return f"lernie-check has no subcommand {words[1]!r}"
        text = _help_of(cli.run, sub or cli.DEFAULT, ["--help"])
        if sub is None:  # the command's own options (--help, --version) besides check's
            text += cli.top_parser().format_help()
        return _options_missing(mention.text, text)
    module = words[2] if len(words) > 2 else ""
    if importlib.util.find_spec(module) is None:
        return f"no module {module!r}"
    if "--" not in mention.text:
        return None  # nothing to look up, and nothing run
    return _options_missing(mention.text, _help_of(_run_module, module, ["--help"]))


def _run_module(module: str, args: list[str]) -> None:
    """``python -m module args`` in this process."""
    saved = sys.argv
    sys.argv = [module, *args]
    sys.modules.pop(module, None)  # run it as __main__, not the imported copy
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=False)
    finally:
        sys.argv = saved


@dataclass
class Session:
    """Where one doc's cheap commands run for real: a directory, and the variables its
    ``export`` lines set (a command run with any of them is not run for real)."""

    exported: dict[str, str] = field(default_factory=dict)


def runs_for_real(command: DocCommand, session: Session) -> list[str] | None:
    """The argv to run for real (program name first), or None to leave it at the check.

    Cheap and self-contained only: ``lernie new|status|scan`` on a workspace, a
    ``lernie prompt ... --wait`` on the default scripted model (no ``@sleep``, its text
    on the command line),
    ``lernie-check --list`` and ``--help``."""
    parts = segments(command.text)
    for seg in parts:
        if seg.program == "export":
            for arg in seg.argv[1:]:
                key, _, value = arg.partition("=")
                session.exported[key] = value
            session.exported.update(seg.env)
    if len(parts) != 1 or parts[0].env or session.exported:
        return None
    seg = parts[0]
    args = seg.argv[1:]
    if seg.program == "lernie" and args:
        if args[0] == "new" and len(args) == 2:
            return ["lernie", *args]
        if args[0] in ("status", "scan") and len(args) >= 2 and set(args[2:]) <= {"--json"}:
            return ["lernie", *args]
        if args[0] == "prompt" and "--wait" in args and not any("@sleep" in a for a in args):
            if "--file" in args or "-" in args:
                return None  # its text is a file the docs had the reader write first
            return ["lernie", *args]
    if seg.program == "lernie-check" and args in (["--list"], ["--help"]):
        return ["lernie-check", *args]
    return None
