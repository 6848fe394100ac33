"""Render a counterexample: a swimlane table, a Mermaid diagram, or JSON.

A trace is replayed to give every process its own column (W = writer verb,
D = driver, S = scanner, followed by the agent), plus an `env` column for
external inputs and launches that start no process, and `inbox` and `locks`
columns showing the state after each step. Each row names the rule it models.
"""

from __future__ import annotations

import json

from lernie_spec.explore import Violation
from lernie_spec.model import PLAIN, Role, State, name
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


def _title(variant: str, v: Violation) -> str:
    what = TITLES.get(v.invariant, "")
    n = len(v.trace)
    shape = f"{n} steps" if not v.loop else f"{n - v.loop} steps, then a {v.loop}-step cycle"
    return f"{variant}: violates {v.invariant} ({what}), shortest trace: {shape}"


def swimlane(variant: str, v: Violation) -> str:
    cols, rs = rows(v)
    heads = ["#", "rule", *cols, "inbox", "locks"]
    width = {h: max([len(h)] + [len(r.get(h, "")) for r in rs]) for h in heads}
    lines = [_title(variant, v), ""]
    lines.append(" | ".join(h.ljust(width[h]) for h in heads).rstrip())
    lines.append("-+-".join("-" * width[h] for h in heads))
    loop_at = len(rs) - v.loop if v.loop else -1
    for k, r in enumerate(rs):
        if k == loop_at:
            lines.append(f"~~ cycle starts (steps {k + 1}..{len(rs)} return to the state "
                         f"after step {k}; no external input) ~~")
        lines.append(" | ".join(r.get(h, "").ljust(width[h]) for h in heads).rstrip())
    return "\n".join(lines)


def mermaid(variant: str, v: Violation) -> str:
    cols, rs = rows(v)
    ident = {c: f"p{k}" for k, c in enumerate(cols)}
    lines = ["sequenceDiagram", f"    title {_title(variant, v)}"]
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
    return "\n".join(lines)


def as_json(variant: str, v: Violation) -> str:
    cols, rs = rows(v)
    doc = {
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
    }
    return json.dumps(doc, indent=2)
