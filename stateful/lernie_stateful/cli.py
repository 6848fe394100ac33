"""The `lernie-check` command: one entry point for every checker.

`lernie-check [SUBCOMMAND] [OPTIONS]`; with no subcommand (or a first argument that
is an option of `check`) it runs `check`, the model checker. Each subcommand is one
entry of `SUBCOMMANDS`: its name, the `module:function` that runs it (called with
the arguments after the name, returning the exit status) and one line of help.
The module is imported only when its subcommand runs, so `lernie-check --help` and
`--version` import none of them. A subcommand module that also offers
`build_parser()` lends its options to the bash completion (`completion`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple

from lernie_spec import cliopts

PROG = "lernie-check"


class Sub(NamedTuple):
    target: str  # "module:function", the function taking argv and returning the exit status
    summary: str
    parser: str = ""  # "module:function" building its parser (default: module:build_parser)


SUBCOMMANDS: dict[str, Sub] = {
    "check": Sub("lernie_spec.check:main", "explore the model's worlds: every variant's "
                 "verdict, or a counterexample (--trace) (the default)"),
    "mutants": Sub("lernie_stateful.model_mutants:main",
                   "the model checker's mutation score: every mutant of the model caught"),
    "refine": Sub("lernie_stateful.refine_cli:refine_main",
                  "run the implementation against the model (refinement)"),
    "bugs": Sub("lernie_stateful.refine_cli:bugs_main",
                "seeded implementation bugs under the refinement machine: is each caught?",
                "lernie_stateful.refine_cli:build_bugs_parser"),
    "code-mutants": Sub("lernie_stateful.code_mutants:main",
                        "catalogued edits of the implementation against the fast checkers"),
    "conform": Sub("lernie_stateful.conform_cli:main",
                   "score an implementation through its command line (conformance kit)"),
    "serve-model": Sub("lernie_stateful.conform.model_server:main",
                       "serve the kit's scripted model over HTTP (Anthropic and OpenAI APIs)"),
    "audit": Sub("lernie_stateful.audit_cli:main",
                 "check what a workspace's files and git history witness"),
    "completion": Sub("lernie_stateful.cli:completion_main",
                      "print a bash completion script for lernie-check"),
}
DEFAULT = "check"


def _load(name: str) -> Callable[[list[str]], int]:
    module, _, func = SUBCOMMANDS[name].target.partition(":")
    fn: Callable[[list[str]], int] = getattr(importlib.import_module(module), func)
    return fn


def top_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Check the lernie protocol: its model, the reference implementation\n"
        "against the model, other implementations against the kit, and workspaces.",
        epilog=f"With no subcommand, `{PROG}` runs `{DEFAULT}`; `{PROG} SUBCOMMAND --help`\n"
        "describes each subcommand's options.\n\n" + cliopts.EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"{PROG} {cliopts.version()}")
    sub = ap.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", title="subcommands")
    for name, s in SUBCOMMANDS.items():
        sub.add_parser(name, help=s.summary, add_help=False)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        name, rest = args[0], args[1:]
    elif args and args[0] in ("-h", "--help", "--version", "help"):
        ap = top_parser()
        if args[0] == "help":
            if len(args) > 1 and args[1] in SUBCOMMANDS:
                return run(args[1], ["--help"])
            ap.print_help()
            return 0
        ap.parse_args(args[:1])  # prints and exits 0
        return 0
    elif args and not args[0].startswith("-"):
        known = ", ".join(SUBCOMMANDS)
        print(f"{PROG}: unknown subcommand {args[0]!r} (one of {known}; see --help)",
              file=sys.stderr)
        return 2
    else:
        name, rest = DEFAULT, args
    return run(name, rest)


def run(name: str, rest: list[str]) -> int:
    return _load(name)(rest)


def entry() -> None:
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # a reader such as `head` went away: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        code = 130
    sys.exit(code)


# ----------------------------------------------------------------- bash completion


def parser_of(name: str) -> argparse.ArgumentParser | None:
    """The subcommand's parser, if its module lends one (for completion and tests)."""
    sub = SUBCOMMANDS[name]
    module, _, func = (sub.parser or sub.target.partition(":")[0] + ":build_parser").partition(
        ":")
    build = getattr(importlib.import_module(module), func, None)
    return build() if build is not None else None


def _options(name: str) -> tuple[list[str], dict[str, list[str]]]:
    """A subcommand's option strings and, per option with fixed choices, the choices."""
    ap = parser_of(name)
    if ap is None:
        return ["--help"], {}
    opts: list[str] = []
    choices: dict[str, list[str]] = {}
    for action in ap._actions:
        opts += [o for o in action.option_strings if o.startswith("--")]
        if action.choices is not None and action.option_strings:
            for o in action.option_strings:
                choices[o] = [str(c) for c in action.choices]
    return sorted(set(opts)), choices


def completion_script() -> str:
    """Bash completion for `lernie-check`: subcommands, then each one's options and the
    values of options with fixed choices; files otherwise."""
    lines = [
        "# bash completion for lernie-check (generated by `lernie-check completion`)",
        "_lernie_check() {",
        '    local cur prev sub',
        '    cur="${COMP_WORDS[COMP_CWORD]}"',
        '    prev="${COMP_WORDS[COMP_CWORD-1]}"',
        f'    sub="{DEFAULT}"',
        '    if [[ ${#COMP_WORDS[@]} -gt 2 || ${COMP_CWORD} -gt 1 ]]; then',
        '        case "${COMP_WORDS[1]}" in',
        f'            {"|".join(SUBCOMMANDS)}) sub="${{COMP_WORDS[1]}}" ;;',
        "        esac",
        "    fi",
        '    if [[ ${COMP_CWORD} -eq 1 && "${cur}" != -* ]]; then',
        f'        COMPREPLY=( $(compgen -W "{" ".join(SUBCOMMANDS)}" -- "${{cur}}") )',
        "        return",
        "    fi",
        '    case "${sub}" in',
    ]
    for name in SUBCOMMANDS:
        opts, choices = _options(name)
        if name == DEFAULT:
            opts = sorted({*opts, "--version"})
        lines.append(f"        {name})")
        if choices:
            lines.append('            case "${prev}" in')
            for o, cs in sorted(choices.items()):
                lines.append(f'                {o}) COMPREPLY=( $(compgen -W "{" ".join(cs)}" '
                             '-- "${cur}") ); return ;;')
            lines.append("            esac")
        lines.append('            if [[ "${cur}" == -* ]]; then')
        lines.append(f'                COMPREPLY=( $(compgen -W "{" ".join(opts)}" '
                     '-- "${cur}") ); return')
        lines.append("            fi ;;")
    lines += [
        "    esac",
        '    COMPREPLY=( $(compgen -f -- "${cur}") )',
        "}",
        "complete -o filenames -F _lernie_check lernie-check",
        "",
    ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The `completion` subcommand's parser."""
    return cliopts.parser(f"{PROG} completion",
                          "Print a bash completion script for lernie-check on stdout. Load it\n"
                          "with `source <(lernie-check completion)`, or save it as\n"
                          "~/.local/share/bash-completion/completions/lernie-check.")


def completion_main(argv: list[str]) -> int:
    build_parser().parse_args(argv)
    sys.stdout.write(completion_script())
    return 0


if __name__ == "__main__":
    entry()
