"""`lernie-check audit <ws> [--strict] [--impl ADAPTER] [--json|--html FILE]`: the command
line of the workspace audit (:mod:`lernie_stateful.audit`).

It sits above both the audit and the conformance kit: ``--impl`` reads another
implementation's layout names from its conformance adapter file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from lernie_spec import cliopts

from lernie_stateful.audit import AuditError, Layout, audit
from lernie_stateful.audit.git import Git
from lernie_stateful.conform.adapter import AdapterError, layout_of
from lernie_stateful.report import audit_page, commits_named, write


def build_parser(prog: str = "lernie-check audit") -> argparse.ArgumentParser:
    parser = cliopts.parser(
        prog, "Check what a workspace's files and git history witness (SPEC I-4, I-5, "
              "I-11, I-12, I-14, R-TR, R-DEP); exit 1 on any violation.")
    parser.add_argument("workspace", type=Path, help="the workspace directory to audit")
    parser.add_argument("--strict", action="store_true",
                        help="count notes (crash residue) as violations: for a workspace run "
                             "without crashes and now quiescent")
    parser.add_argument("--impl", metavar="ADAPTER",
                        help="read the workspace with the layout names of this conformance "
                             "adapter (an installed name or a TOML file), for a workspace "
                             "another implementation left")
    cliopts.add_common(parser, html=True)
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        layout = None
        if args.impl:
            try:
                layout = layout_of(args.impl)
            except AdapterError as exc:
                raise AuditError(str(exc)) from None
        report = audit(args.workspace, layout)
    except AuditError as exc:
        print(f"lernie-check audit: {exc}", file=sys.stderr)
        return 1
    if args.html:
        subjects: dict[str, str] = {}
        git = Git(Path(args.workspace) / (layout or Layout()).repo)
        for c in commits_named(report):
            with contextlib.suppress(AuditError):
                subjects[c] = git.run("log", "-1", "--format=%s", c).decode(
                    "utf-8", "replace").strip()
        write(args.html, audit_page(report, args.strict, subjects))
    if args.json:
        print(json.dumps(report.as_json(args.strict), indent=1))
    else:
        print(report.text(args.strict))
    return 1 if report.violations(args.strict) else 0
