"""Render a counterexample: a swimlane table, a Mermaid diagram, or JSON.

A trace is replayed to give every process its own column (W = writer verb,
D = driver, S = scanner, followed by the agent), plus an `env` column for
external inputs and launches that start no process, and `inbox` and `locks`
columns showing the state after each step. Each row names the rule it models.
Every rendering ends with `lernie_spec.explain`'s sentence: which invariant the
last step breaks and why, with the values involved. The swimlane fits `width`
columns by wrapping its widest cells (0: one line per step, however wide).
"""

from __future__ import annotations

import json
import textwrap

from lernie_spec.explain import explain
from lernie_spec.explore import Violation
from lernie_spec.model import PLAIN, Role, Scope, State, name
from lernie_spec.properties import TITLES

Row = dict[str, str]


def _label(role: Role, agent: int) -> str:
    return role.value + ("" if agent < 0 else ":" + name(agent))


def inbox_text(st: State) -> str:
    parts = []
    for a, ag in enumerate(st.agents):
        if ag.exists or ag.inbox:
            files = ",".join(
                f"{name(f.sender)}-{f.n:03d}" + ("" if f.kind == PLAIN else f"[{f.kind}]")
                for f in ag.inbox)
            parts.append(f"{name(a)}:[{files}]")
    return " ".join(parts)


def rows(v: Violation) -> tuple[list[str], list[Row]]:
    """Columns (in order of appearance) and one row per step."""
    cols: list[str] = []
    ids: list[str] = []
    seen: dict[str, int] = {}
    out: list[Row] = []
    pre = v.init
    for k, (step, post) in enumerate(v.trace, 1):
        row: Row = {"#": str(k), "rule": step.rule}
        if len(post.procs) == len(pre.procs) + 1:
            p = post.procs[-1]
            base = _label(p.role, p.agent)
            seen[base] = seen.get(base, 0) + 1
            col = base if seen[base] == 1 else f"{base}#{seen[base]}"
            cols.append(col)
            ids.append(col)
            where = col
        elif step.actor >= 0:
            where = ids[step.actor]
        else:
            where = "env"
            if "env" not in cols:
                cols.insert(0, "env")
        if step.actor >= 0 and len(post.procs) == len(pre.procs) - 1:
            del ids[step.actor]
            row[where] = step.text + " (exits)" if step.text != "CRASH" else "CRASH"
        else:
            row[where] = step.text
        row["inbox"] = inbox_text(post)
        holders = []
        for a, ag in enumerate(post.agents):
            who = [ids[j] for j, p in enumerate(post.procs)
                   if (p.lease and p.agent == a) or p.probe_on == a]
            if ag.forked_holder:
                who.append("forked child")
            if who:
                holders.append(f"{name(a)}:{'+'.join(who)}")
        row["locks"] = " ".join(holders) or "-"
        out.append(row)
        pre = post
    return cols, out


def title(variant: str, v: Violation) -> str:
    what = TITLES.get(v.invariant, "")
    n = len(v.trace)
    shape = f"{n} steps" if not v.loop else f"{n - v.loop} steps, then a {v.loop}-step cycle"
    return f"{variant}: violates {v.invariant} ({what}), shortest trace: {shape}"


def _fit(heads: list[str], natural: dict[str, int], width: int) -> dict[str, int]:
    """Column widths summing (with their ` | ` separators) to at most `width`: the widest
    column gives up a character until the table fits or every column is at its floor."""
    w = dict(natural)
    if width <= 0:
        return w
    sep = 3 * (len(heads) - 1)
    floor = {h: max(len(h), 4) if h not in ("#", "rule") else natural[h] for h in heads}
    while sum(w.values()) + sep > width:
        h = max(heads, key=lambda k: (w[k] - floor[k], w[k]))
        if w[h] <= floor[h]:
            break
        w[h] -= 1
    return w


def _cell_lines(text: str, w: int) -> list[str]:
    if len(text) <= w:
        return [text]
    return textwrap.wrap(text, w, break_on_hyphens=False) or [""]


def swimlane(variant: str, v: Violation, scope: Scope | None = None, width: int = 0) -> str:
    """The trace as a table, one row per step, ending with the explanation; `width` > 0
    wraps cells so that no line is longer than `width` (the table's floor permitting)."""
    cols, rs = rows(v)
    heads = ["#", "rule", *cols, "inbox", "locks"]
    natural = {h: max([len(h)] + [len(r.get(h, "")) for r in rs]) for h in heads}
    w = _fit(heads, natural, width)
    wrap = width if width > 0 else 10**6
    lines = [*textwrap.wrap(title(variant, v), wrap), ""]
    lines.append(" | ".join(h.ljust(w[h]) for h in heads).rstrip())
    lines.append("-+-".join("-" * w[h] for h in heads))
    loop_at = len(rs) - v.loop if v.loop else -1
    for k, r in enumerate(rs):
        if k == loop_at:
            lines += textwrap.wrap(f"~~ cycle starts (steps {k + 1}..{len(rs)} return to the "
                                   f"state after step {k}; no external input) ~~", wrap)
        cells = {h: _cell_lines(r.get(h, ""), w[h]) for h in heads}
        for j in range(max(len(c) for c in cells.values())):
            lines.append(" | ".join((cells[h][j] if j < len(cells[h]) else "").ljust(w[h])
                                    for h in heads).rstrip())
    lines.append("")
    lines += textwrap.wrap(explain(v, scope), wrap)
    return "\n".join(lines)


def mermaid(variant: str, v: Violation, scope: Scope | None = None) -> str:
    cols, rs = rows(v)
    ident = {c: f"p{k}" for k, c in enumerate(cols)}
    lines = ["sequenceDiagram", f"    title {title(variant, v)}"]
    for c in cols:
        lines.append(f"    participant {ident[c]} as {c}")
    lines.append("    participant inbox as inboxes")
    loop_at = len(rs) - v.loop if v.loop else -1
    for k, r in enumerate(rs):
        if k == loop_at:
            lines.append("    loop forever (no external input)")
        who = next(c for c in cols if c in r)
        text = r[who].replace(";", ",").replace("#", "")
        lines.append(f"    Note over {ident[who]}: {r['#']}. {r['rule']} {text}")
        if r["rule"] in ("R-DEP-6", "R-DRAIN-4", "R-SCAN-1"):
            lines.append(f"    {ident[who]}->>inbox: {r['inbox'] or '-'}")
    if v.loop:
        lines.append("    end")
    why = explain(v, scope).replace(";", ",").replace("#", "")
    lines.append(f"    Note over {ident[cols[-1]] if cols else 'inbox'}: {why}")
    return "\n".join(lines)


def as_json(variant: str, v: Violation, scope: Scope | None = None) -> str:
    return json.dumps(as_doc(variant, v, scope), indent=2)


def as_doc(variant: str, v: Violation, scope: Scope | None = None) -> dict[str, object]:
    cols, rs = rows(v)
    return {
        "variant": variant,
        "invariant": v.invariant,
        "title": TITLES.get(v.invariant, ""),
        "length": len(v.trace),
        "loop": v.loop,
        "columns": cols,
        "steps": [
            {"n": int(r["#"]), "rule": r["rule"],
             "actor": next(c for c in cols if c in r), "text": r[next(c for c in cols if c in r)],
             "external": v.trace[k][0].external, "inbox": r["inbox"], "locks": r["locks"]}
            for k, r in enumerate(rs)
        ],
        "explanation": explain(v, scope),
    }
