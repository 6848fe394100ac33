"""`lernie-check conform --impl ADAPTER`: the command line of the conformance kit
(:mod:`lernie_stateful.conform`): the exact-interface scenarios, and on request the outcome
programs and the same-sender flood, scored per SPEC rule area; ``--html`` draws the
scorecard (:mod:`lernie_stateful.report`)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path

from lernie_spec import cliopts
from lernie_spec.cliopts import Progress

from lernie_stateful.conform.adapter import AdapterError, load
from lernie_stateful.conform.outcome import ProgramError, Verdict
from lernie_stateful.conform.run import (
    Scorecard,
    conform,
    flood_check,
    outcome_check,
    program_file,
    scenario_files,
)
from lernie_stateful.conform.seeded import build
from lernie_stateful.report import scorecard_page, write


def _flood_size(text: str) -> tuple[int, int]:
    writers, _, each = text.partition("x")
    if not (writers.isdigit() and each.isdigit() and int(writers) > 0 and int(each) > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not WRITERSxMESSAGES (e.g. 8x25)")
    return int(writers), int(each)


def build_parser(prog: str = "lernie-check conform") -> argparse.ArgumentParser:
    parser = cliopts.parser(
        prog, "Run the exact-interface scenarios through an implementation's command line\n"
              "and print a scorecard per SPEC rule area; with --outcome, also programs of\n"
              "operator inputs whose final state must be one the model reaches.")
    parser.add_argument("--impl", required=True,
                        help="an installed adapter ('lernie', the reference's own; "
                        "'lernie-anthropic' and 'lernie-openai', the reference through its HTTP "
                        "model adapters and the kit's model server) or an adapter TOML file")
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object")
    fmt.add_argument("--markdown", action="store_true", help="a Markdown table")
    cliopts.add_common(parser, json=False, html=True)
    parser.add_argument("--scenarios", type=Path, help="a directory of scenario files to run "
                        "instead of the installed ones")
    parser.add_argument("-k", dest="only", help="run only cases whose id contains this text, "
                        "or the cases of the scenario file of this name (-k tools.toml)")
    parser.add_argument("--seeded-bug", metavar="NAME",
                        help="with --impl lernie: score the reference with one seeded bug of "
                        "`lernie-check bugs` applied in every process it starts")
    parser.add_argument("--keep", type=Path, help="leave each case's workspace under this "
                        "directory (for reading a failure)")
    parser.add_argument("--outcome", action="store_true",
                        help="also run the outcome check: programs of operator inputs whose "
                        "final state must be one the model reaches (area 'outcome')")
    parser.add_argument("--outcome-only", action="store_true",
                        help="run only the outcome check (no exact-interface scenarios)")
    parser.add_argument("--examples", type=int, default=4, metavar="N",
                        help="generated outcome programs besides the regression set")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated programs")
    parser.add_argument("--programs", help="a TOML file of outcome programs to run instead "
                        "of the regression set and the generated ones, or the name of an "
                        "installed set (lernie-0.0.11: the profile's predictions)")
    parser.add_argument("--flood", type=_flood_size, metavar="WxN",
                        help="also run the same-sender flood: W concurrent writers send N "
                        "messages each to one agent; every accepted message must be there "
                        "exactly once (area 'accounting'; e.g. 8x25)")
    parser.add_argument("--show-program", action="store_true",
                        help="print each failing outcome program's full report on stderr "
                        "(as -v does)")
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    progress = Progress.of("lernie-check conform", args.quiet, args.verbose)
    verdicts: list[Verdict] = []
    try:
        with tempfile.TemporaryDirectory(prefix="lernie-seeded-") as build_dir:
            if args.seeded_bug:
                if args.impl != "lernie":
                    raise AdapterError("--seeded-bug patches the reference: use --impl lernie")
                adapter = load(str(build(args.seeded_bug, Path(build_dir))))
            else:
                adapter = load(args.impl)
            files = scenario_files(args.scenarios) if args.scenarios else None
            card = (Scorecard(adapter.name) if args.outcome_only
                    else conform(adapter, files, args.only, args.keep, progress))
            if args.outcome or args.outcome_only or args.programs:
                reports = outcome_check(adapter, card, args.examples, args.seed,
                                        program_file(args.programs) if args.programs
                                        else None, args.keep, progress, verdicts)
                progress.done()
                if args.show_program or args.verbose:
                    for text in reports:
                        print(text + "\n", file=sys.stderr)
            if args.flood:
                writers, each = args.flood
                flood_check(adapter, card, writers, each, args.keep)
    except (AdapterError, ProgramError, tomllib.TOMLDecodeError, OSError) as exc:
        progress.done()
        print(f"lernie-check conform: {exc}", file=sys.stderr)
        return 1
    progress.done()
    if args.html:
        write(args.html, scorecard_page(card, verdicts))
    if args.json:
        print(json.dumps(card.as_json(), indent=1))
    elif args.markdown:
        print(card.markdown())
    else:
        print(card.text())
    return 0 if card.applicable and card.passed == card.applicable else 1
