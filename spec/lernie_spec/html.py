"""Self-contained HTML reports: one file, no network, no script or font from elsewhere.

`page` wraps sections in one document with its own stylesheet and a few lines of
inline script (expand and collapse all); every section is a `<details>` element, so
a report reads without script too. `counterexample` draws a trace as an SVG swimlane:
one lane per process (and `env` for external inputs), each step a box in the lane of
the process that took it, the inbox and lock state beside every step where it
changes, the violating step in red with `lernie_spec.explain`'s sentence under the
drawing, and for a lasso a bracket over the cycle that returns to its first state.
Below the drawing, the steps again as a table, one collapsible row per step with
the full state after it.
"""

from __future__ import annotations

import textwrap
from html import escape

from lernie_spec.explain import explain
from lernie_spec.explore import Violation
from lernie_spec.model import Scope
from lernie_spec.trace import rows, title

CSS = """
:root { --ink:#1d2330; --mute:#5c6473; --line:#c9ced8; --bad:#c62828; --badbg:#fdecea;
        --ok:#2e7d32; --okbg:#e8f5e9; --lane:#f5f7fb; --box:#ffffff; --loop:#6a1b9a; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       color: var(--ink); margin: 0; padding: 1.2rem 1.6rem 3rem; background: #fff; }
h1 { font-size: 1.35rem; margin: 0 0 .3rem; }
h2 { font-size: 1.1rem; display: inline; }
.meta { color: var(--mute); margin: 0 0 1rem; font-size: .9rem; }
details.section { border: 1px solid var(--line); border-radius: 6px; margin: .8rem 0;
                  padding: .5rem .8rem; }
details.section > summary { cursor: pointer; }
.bad { color: var(--bad); } .ok { color: var(--ok); }
.pill { display: inline-block; padding: 0 .5em; border-radius: 1em; font-size: .8rem;
        font-weight: 600; margin-left: .5em; }
.pill.bad { background: var(--badbg); } .pill.ok { background: var(--okbg); }
.explanation { border-left: 4px solid var(--bad); background: var(--badbg);
               padding: .6rem .8rem; margin: .6rem 0; max-width: 70rem; }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 4px; }
table { border-collapse: collapse; font-size: .85rem; margin: .5rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .25rem .5rem; text-align: left;
         vertical-align: top; }
th { background: var(--lane); }
td:first-child { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.violating td { background: var(--badbg); }
tr.loop td:first-child { border-left: 3px solid var(--loop); }
code, pre, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
                   font-size: .82rem; }
pre { background: var(--lane); padding: .5rem; overflow-x: auto; white-space: pre-wrap;
      overflow-wrap: anywhere; margin: 0; }
table.sides { width: 100%; table-layout: fixed; }
details.step > summary { cursor: pointer; list-style: none; }
details.step > summary::-webkit-details-marker { display: none; }
details.step > summary::before { content: "▸ "; color: var(--mute); }
details.step[open] > summary::before { content: "▾ "; }
.controls button { font: inherit; font-size: .8rem; margin-right: .4rem; }
svg text { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
"""

SCRIPT = """
function setAll(open) {
  document.querySelectorAll('details').forEach(function (d) { d.open = open; });
}
"""


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def page(title: str, meta: str, sections: list[str]) -> str:
    """One HTML document: a heading, a line of facts, the sections."""
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f"<style>{CSS}</style>",
        f"<script>{SCRIPT}</script>",
        "</head><body>",
        f"<h1>{esc(title)}</h1>",
        f'<p class="meta">{meta}</p>',
        '<p class="controls"><button type="button" onclick="setAll(true)">expand all'
        '</button><button type="button" onclick="setAll(false)">collapse all</button></p>',
        *sections,
        "</body></html>",
        "",
    ])


def section(heading: str, body: str, bad: bool = False, is_open: bool = False,
            tag: str = "", ident: str = "") -> str:
    pill = (f'<span class="pill {"bad" if bad else "ok"}">{esc(tag)}</span>' if tag else "")
    return (f'<details class="section"{" open" if is_open else ""}'
            f'{f" id={chr(34)}{esc(ident)}{chr(34)}" if ident else ""}>'
            f"<summary><h2>{esc(heading)}</h2>{pill}</summary>{body}</details>")


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


LANE_W = 190
ROW_H = 40
HEAD_H = 44
STATE_W = 260
LEFT = 40


def swimlane_svg(v: Violation, why: str = "") -> str:
    """The SVG drawing of a trace (see the module docstring); `why` is written under the
    violating step (or under the cycle of a lasso)."""
    cols, rs = rows(v)
    n = len(rs)
    lanes = {c: LEFT + k * LANE_W for k, c in enumerate(cols)}
    inbox_x = LEFT + len(cols) * LANE_W + 10
    locks_x = inbox_x + STATE_W + 10
    width = locks_x + STATE_W + 10
    per_line = max(40, (width - LEFT) // 7)
    why_lines = textwrap.wrap(f"{v.invariant} breaks "
                              + ("in this cycle" if v.loop else f"at step {n}") + ": "
                              + why.split(": ", 1)[-1], per_line) if why else []
    height = HEAD_H + n * ROW_H + 20 + 18 * len(why_lines) + (10 if why_lines else 0)
    loop_at = n - v.loop if v.loop else -1
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="swimlane" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{esc(title("", v).lstrip(": "))}">']
    # lane heads and lines: a process's lane runs from its first to its last step
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for k, r in enumerate(rs):
        for c in cols:
            if c in r:
                first.setdefault(c, k)
                last[c] = k
    for c, x in lanes.items():
        cx = x + LANE_W // 2
        out.append(f'<g class="lane" data-lane="{esc(c)}">'
                   f'<rect x="{x + 4}" y="4" width="{LANE_W - 8}" height="{HEAD_H - 12}" '
                   f'rx="4" fill="#e3e8f2" stroke="#9aa4b5"/>'
                   f'<text x="{cx}" y="{HEAD_H // 2 + 2}" text-anchor="middle" '
                   f'font-size="13" font-weight="700" fill="#1d2330">{esc(c)}</text>')
        y0 = HEAD_H + first.get(c, 0) * ROW_H
        y1 = HEAD_H + (last.get(c, 0) + 1) * ROW_H
        out.append(f'<line x1="{cx}" y1="{HEAD_H - 8}" x2="{cx}" y2="{y1}" stroke="#b8c0cd" '
                   f'stroke-dasharray="{"4 4" if c == "env" else "none"}" stroke-width="2"/>'
                   f'<line x1="{cx}" y1="{HEAD_H - 8}" x2="{cx}" y2="{y0}" stroke="#fff" '
                   f'stroke-width="3"/></g>')
    for x, label in ((inbox_x, "inbox"), (locks_x, "locks")):
        out.append(f'<g class="lane state" data-lane="{label}"><rect x="{x}" y="4" '
                   f'width="{STATE_W}" height="{HEAD_H - 12}" rx="4" fill="#eef0e6" '
                   f'stroke="#a3a78f"/><text x="{x + STATE_W // 2}" y="{HEAD_H // 2 + 2}" '
                   f'text-anchor="middle" font-size="13" font-weight="700">{label}</text></g>')
    if v.loop:
        y0 = HEAD_H + loop_at * ROW_H + 2
        y1 = HEAD_H + n * ROW_H - 2
        out.append(f'<g class="loop"><path d="M {LEFT - 6} {y0} H {LEFT - 24} V {y1} '
                   f'H {LEFT - 6}" fill="none" stroke="#6a1b9a" stroke-width="3"/>'
                   f'<path d="M {LEFT - 6} {y0} l -7 -5 v 10 z" fill="#6a1b9a"/>'
                   f'<text x="{LEFT - 30}" y="{(y0 + y1) // 2}" font-size="11" fill="#6a1b9a" '
                   f'transform="rotate(-90 {LEFT - 30} {(y0 + y1) // 2})" '
                   f'text-anchor="middle">cycle: back to step {loop_at}</text></g>')
    prev_inbox: str | None = None
    prev_locks: str | None = None
    for k, r in enumerate(rs):
        y = HEAD_H + k * ROW_H
        who = next(c for c in cols if c in r)
        x = lanes[who]
        bad = k == n - 1 and not v.loop
        fill, stroke = ("#fdecea", "#c62828") if bad else (
            ("#f3e5f5", "#6a1b9a") if v.loop and k >= loop_at else ("#ffffff", "#7b8698"))
        text = r[who]
        cls = "step violating" if bad else "step"
        out.append(f'<g class="{cls}" data-step="{k + 1}"><title>{esc(r["#"])}. '
                   f'{esc(r["rule"])} {esc(text)}</title>'
                   f'<rect x="{x + 6}" y="{y + 4}" width="{LANE_W - 12}" height="{ROW_H - 8}" '
                   f'rx="5" fill="{fill}" stroke="{stroke}" '
                   f'stroke-width="{3 if bad else 1.2}"/>'
                   f'<text x="{x + 12}" y="{y + 17}" font-size="10" fill="#5c6473">'
                   f'{esc(r["#"])} {esc(r["rule"])}</text>'
                   f'<text x="{x + 12}" y="{y + 30}" font-size="11" fill="#1d2330">'
                   f'{esc(_clip(text, 26))}</text></g>')
        for xs, value, prev in ((inbox_x, r["inbox"], prev_inbox),
                                (locks_x, r["locks"], prev_locks)):
            changed = value != prev
            colour = "#1d2330" if changed else "#a0a7b4"
            shown = value or "-"
            out.append(f'<text class="state{" changed" if changed else ""}" x="{xs + 6}" '
                       f'y="{y + 24}" font-size="11" fill="{colour}">'
                       f'<title>{esc(shown)}</title>'
                       f'{esc(_clip(shown, 38) if changed else "·")}</text>')
        prev_inbox, prev_locks = r["inbox"], r["locks"]
        out.append(f'<line x1="{LEFT}" y1="{y + ROW_H}" x2="{width - 6}" y2="{y + ROW_H}" '
                   f'stroke="#eef0f4"/>')
    if why_lines:
        y = HEAD_H + n * ROW_H + 24
        spans = "".join(f'<tspan x="{LEFT}" dy="{0 if k == 0 else 18}">{esc(line)}</tspan>'
                        for k, line in enumerate(why_lines))
        out.append(f'<g class="why"><text x="{LEFT}" y="{y}" font-size="12" '
                   f'font-weight="600" fill="#c62828">{spans}</text></g>')
    out.append("</svg>")
    return "".join(out)


def counterexample(variant: str, v: Violation, scope: Scope | None = None,
                   scope_name: str = "") -> str:
    """A section's body: the title, the drawing, the explanation, the steps."""
    cols, rs = rows(v)
    why = explain(v, scope)
    n = len(rs)
    loop_at = n - v.loop if v.loop else -1
    steps = []
    for k, r in enumerate(rs):
        who = next(c for c in cols if c in r)
        cls = "violating" if k == n - 1 and not v.loop else "loop" if k >= loop_at >= 0 else ""
        steps.append(
            f'<tr class="{cls}"><td class="num">{esc(r["#"])}</td>'
            f'<td><code>{esc(r["rule"])}</code></td><td>{esc(who)}</td><td>'
            f'<details class="step"><summary>{esc(r[who])}</summary>'
            f'<div class="mono">inbox: {esc(r["inbox"] or "-")}<br>'
            f'locks: {esc(r["locks"])}</div></details></td></tr>')
    loop_note = (f'<p class="mono" style="color:#6a1b9a">steps {loop_at + 1}..{n} form a '
                 f"cycle: they return to the state after step {loop_at} with no external "
                 "input, forever.</p>" if v.loop else "")
    return "".join([
        f'<p class="mono">{esc(title(variant, v))}'
        + (f" (world: {esc(scope_name)})" if scope_name else "") + "</p>",
        f'<div class="scroll">{swimlane_svg(v, why)}</div>',
        loop_note,
        f'<p class="explanation" data-invariant="{esc(v.invariant)}">{esc(why)}</p>',
        '<details class="section steps" open><summary>steps (click one for the state '
        "after it)</summary>",
        "<table><thead><tr><th>#</th><th>rule</th><th>process</th><th>step</th></tr></thead>"
        f"<tbody>{''.join(steps)}</tbody></table></details>",
    ])
