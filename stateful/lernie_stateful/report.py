"""HTML reports of the checkers (`--html FILE`): a conformance scorecard, an audit and
the seeded bugs' table, each one self-contained file built with `lernie_spec.html`.

The scorecard shows every rule area's score, then each failing case: an outcome
program as a timeline of its operator inputs (one lane per agent it names, the
delays between them), the implementation's final state beside the nearest outcome
the model reaches and the difference between the two; an exact-interface case with
the difference its scenario found. The audit lists its findings per agent with the
commits and files each names. Nothing here judges: the reports draw what the
checkers found.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from textwrap import dedent
from typing import TYPE_CHECKING

from lernie_spec import cliopts
from lernie_spec.html import esc, page, section

if TYPE_CHECKING:
    from lernie_stateful.audit.findings import Report
    from lernie_stateful.conform.outcome import Program, Verdict
    from lernie_stateful.conform.run import Scorecard


def write(path: str, text: str) -> None:
    """Write a report; a path that cannot be written is said in one line, exit 1."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"lernie-check: cannot write {path}: {exc.strerror}", file=sys.stderr)
        raise SystemExit(1) from exc


def _table(heads: Sequence[str], rows: Sequence[Sequence[str]], cls: Sequence[str] = ()) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in heads)
    body = "".join(
        f'<tr class="{cls[k] if k < len(cls) else ""}">'
        + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for k, r in enumerate(rows))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# ------------------------------------------------------------------ conformance

LANE_H = 34
STEP_W = 150


def program_timeline(p: Program) -> str:
    """An SVG of the program's inputs in order: one lane per agent (and `operator` for
    scan and wait), each input a box; an input's delay (`after`) on the arrow into it;
    `&` (with the previous input) drawn in the same column as its predecessor."""
    lanes: list[str] = []
    for i in p.inputs:
        lane = i.agent or "operator"
        if lane not in lanes:
            lanes.append(lane)
    cols: list[int] = []
    col: int = -1
    for i in p.inputs:
        col = col if i.with_previous and col >= 0 else col + 1
        cols.append(col)
    width = 110 + (max(cols, default=0) + 1) * STEP_W
    height = 20 + len(lanes) * LANE_H
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}">']
    for k, lane in enumerate(lanes):
        y = 10 + k * LANE_H
        out.append(f'<text x="6" y="{y + LANE_H // 2 + 4}" font-size="12" font-weight="700">'
                   f"{esc(lane)}</text><line x1=\"100\" y1=\"{y + LANE_H // 2}\" "
                   f'x2="{width - 6}" y2="{y + LANE_H // 2}" stroke="#d5dae3"/>')
    for k, (i, c) in enumerate(zip(p.inputs, cols, strict=True)):
        row = lanes.index(i.agent or "operator")
        x, y = 106 + c * STEP_W, 10 + row * LANE_H
        label = i.verb + (f" “{i.body.splitlines()[-1][:14]}”" if i.body else "")
        full = i.show().strip()
        out.append(f'<g class="input" data-input="{k + 1}"><title>{esc(full)}</title>'
                   f'<rect x="{x}" y="{y + 4}" width="{STEP_W - 16}" height="{LANE_H - 8}" '
                   f'rx="4" fill="#ffffff" stroke="#7b8698"/>'
                   f'<text x="{x + 6}" y="{y + LANE_H // 2 + 4}" font-size="11">'
                   f"{k + 1}. {esc(label[:20])}</text></g>")
        if i.after:
            out.append(f'<text x="{x - 2}" y="{y + 2}" font-size="10" fill="#6a1b9a">'
                       f"+{i.after:g}s</text>")
    out.append("</svg>")
    return "".join(out)


def _verdict_body(v: Verdict) -> str:
    prog = "<br>".join(esc(i.show().strip()) for i in v.program.inputs)
    diff = "".join(f"<li>{esc(d)}</li>" for d in v.diff) or "<li>(none)</li>"
    states = ""
    if v.real or v.nearest:
        states = _table(("the implementation's final state", "the nearest model outcome"),
                        [(f"<pre>{esc(dedent(v.real))}</pre>",
                          f"<pre>{esc(dedent(v.nearest))}</pre>")]).replace(
                              "<table>", '<table class="sides">', 1)
    return "".join([
        f'<p class="explanation">{esc(v.headline())}</p>',
        f'<div class="scroll">{program_timeline(v.program)}</div>',
        f'<details class="section"><summary>the program</summary><p class="mono">{prog}</p>'
        "</details>",
        states,
        f'<p><b>difference from the nearest model outcome</b> '
        f'({v.outcomes:,} model outcomes):</p><ul class="difference mono">{diff}</ul>',
    ])


def scorecard_page(card: Scorecard, verdicts: Sequence[Verdict] = ()) -> str:
    areas = card.areas()
    rows, cls = [], []
    for area, row in areas.items():
        bad = int(str(row["failed"])) > 0
        rows.append((esc(area), str(row["passed"]), str(row["failed"]), str(row["n/a"]),
                     esc(row["first_failure"] or "-")))
        cls.append("violating" if bad else "")
    ok = card.applicable > 0 and card.passed == card.applicable
    sections = [section("score per rule area", _table(
        ("area", "passed", "failed", "n/a", "first failure"), rows, cls), bad=not ok,
        is_open=True, tag=f"{card.passed}/{card.applicable} ({card.percent:.0f}%)")]
    by_id = {f"outcome:{v.program.id}": v for v in verdicts}
    failed = [r for r in card.results if r.status == "failed"]
    # outcome programs first: their timelines and differences are the report's reason
    failed.sort(key=lambda r: r.id not in by_id)
    for r in failed:
        v = by_id.get(r.id)
        if v is not None:
            body = _verdict_body(v)
        else:
            body = (f'<p class="mono">scenario file {esc(r.file)}, rules '
                    f"{esc(', '.join(r.rules))}</p>"
                    f'<p class="explanation">{esc(r.difference)}</p>')
        sections.append(section(f"failed: {r.id}", body, bad=True,
                                is_open=len(sections) <= 4, tag=", ".join(r.rules)))
    passed = [r for r in card.results if r.status != "failed"]
    if passed:
        sections.append(section("the other cases", _table(
            ("case", "status", "rules", "seconds"),
            [(esc(r.id), esc(r.status), esc(", ".join(r.rules)), f"{r.seconds:.2f}")
             for r in passed])))
    meta = (f"{len(card.results)} cases, score {card.passed}/{card.applicable} applicable "
            f"({card.percent:.0f}%), wall time {card.seconds:.1f}s")
    return page(f"Conformance of {card.adapter}", esc(meta), sections)


# ------------------------------------------------------------------------ audit

_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")


def commits_named(report: Report) -> list[str]:
    """The commits the findings name (abbreviated hashes as the audit writes them)."""
    return sorted({w for f in report.findings for w in f.where if _COMMIT.match(w)})


def audit_page(report: Report, strict: bool = False,
               subjects: dict[str, str] | None = None) -> str:
    """The audit as a page; ``subjects`` (commit -> subject line) labels the commits."""
    bad = report.violations(strict)
    by_agent: dict[str, list[int]] = {}
    for k, f in enumerate(report.findings):
        by_agent.setdefault(f.agent or "(workspace)", []).append(k)
    sections = []
    commits: set[str] = set()
    files: set[str] = set()
    for agent, ks in by_agent.items():
        rows, cls = [], []
        for k in ks:
            f = report.findings[k]
            cs = [w for w in f.where if _COMMIT.match(w)]
            fs = [w for w in f.where if not _COMMIT.match(w)]
            counted = f.severity == "violation" or strict
            if counted:
                commits.update(cs)
                files.update(fs)
            rows.append((esc("VIOLATION" if f.severity == "violation" else "note"),
                         esc(f.check), esc(f.rules), esc(f.message),
                         "<br>".join(f"<code>{esc(c)}</code>" for c in cs) or "-",
                         "<br>".join(f"<code>{esc(x)}</code>" for x in fs) or "-"))
            cls.append("violating" if counted else "")
        n_bad = sum(1 for k in ks if report.findings[k].severity == "violation" or strict)
        sections.append(section(
            f"agent {agent}" if agent != "(workspace)" else agent,
            _table(("finding", "check", "rules", "what", "commits", "files"), rows, cls),
            bad=n_bad > 0, is_open=n_bad > 0,
            tag=f"{n_bad} violations" if n_bad else "notes only"))
    named = subjects or {}
    shown_commits = "".join(
        f"<li><code>{esc(c)}</code> {esc(named.get(c, ''))}</li>" for c in sorted(commits))
    shown_commits = f"<ul>{shown_commits}</ul>" if shown_commits else "none"
    shown_files = ", ".join(f"<code>{esc(x)}</code>" for x in sorted(files)) or "none"
    summary = (f'<div class="commits">offending commits: {shown_commits}</div>'
               f'<p class="files">offending files: {shown_files}</p>')
    verdict = "ok" if not bad else "FAILED"
    sections.insert(0, section("verdict", summary, bad=bool(bad), is_open=True,
                               tag=f"{verdict}: {len(bad)} violations"))
    meta = (f"{report.agents} agents, {report.commits} commits, {report.entries} transcript "
            f"entries, {report.results} results, {report.pending} pending deposits"
            + (" (strict: notes count as violations)" if strict else ""))
    return page(f"Audit of {report.workspace}", esc(meta), sections)


# ------------------------------------------------------------------------- bugs


def bugs_page(rows: Sequence[dict[str, object]], caught: int, total: int, wall: float,
              cpu: float) -> str:
    table_rows, cls = [], []
    for r in rows:
        prog = r.get("program") or []
        assert isinstance(prog, list)
        table_rows.append((
            f"<b>{esc(r['bug'])}</b><br><small>{esc(r.get('summary', ''))}</small>",
            esc(r["verdict"]), esc(r["examples"]), f"{float(str(r['seconds'])):.1f}",
            f"<details><summary>{len(prog)} rules</summary><pre>"
            + esc("\n".join(str(x) for x in prog)) + "</pre></details>" if prog else "-"))
        cls.append("" if r["caught"] else "violating")
    sections = [section("seeded bugs", _table(
        ("bug", "caught", "examples", "seconds", "shrunk program"), table_rows, cls),
        bad=caught < total, is_open=True, tag=f"{caught} caught of {total}")]
    return page("lernie-check bugs", esc(cliopts.timing(wall, cpu)), sections)
