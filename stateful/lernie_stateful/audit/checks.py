"""The audit's checks: the invariants judged on what the walk read.

Each check reads the :class:`~lernie_stateful.audit.walk.History` and adds findings to
the report; none touches the disk or git again. :func:`judge` runs them in a fixed order
(the order of the report's lines): the numbering of every agent's commits, then each
agent's entries and stray files, the inboxes, names and goals, residue, deliveries, and
results, debts and marks.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict

from lernie_stateful.audit.findings import Report
from lernie_stateful.audit.readings import (
    FINAL,
    MARK_KINDS,
    OBITUARIES,
    Deposit,
    entry_name,
    parent_of,
    pending_name,
    read_deposit,
    result_text,
    terminal_ref,
    text_of,
    tool_calls,
    u32,
)
from lernie_stateful.audit.walk import Agent, Copy, Entry, History

_SUBJECT = re.compile(r"transcript (\S+): (.+) \[(.+)\]")


def judge(h: History) -> Report:
    """Every check on what the walk read, in the order the report lists them; the report's
    counts come from the walk too."""
    rep = Report(str(h.ws))
    rep.driven = list(h.driven)
    rep.agents = len(h.agents)
    rep.commits = sum(len(a.commits) for a in h.agents.values())
    rep.entries = sum(len(a.entries) for a in h.agents.values())
    rep.pending = h.pending
    for a in h.agents.values():
        _numbering(h, rep, a)
    for a in h.agents.values():
        _check_entries(h, rep, a)
        _strays(h, rep, a)
    _inboxes(h, rep)
    _names(h, rep)
    _residue(h, rep)
    _deliveries(h, rep)
    _results_and_marks(h, rep)
    return rep


# -- numbering (R-WS-4, R-TR-1..3, I-4) ----------------------------------


def _numbering(h: History, rep: Report, a: Agent) -> None:
    """R-WS-4, R-TR-1..3: the agent's own commits, checked one by one."""
    agent = a.id
    if not a.commits:
        rep.add("violation", "numbering", "R-WS-4", agent,
                "the branch tip is not a commit of this agent (no creation commit)",
                a.tip[:12])
        return
    creation, subject = a.commits[0].sha, a.commits[0].subject
    expected = (f"step 001: dispatch [{agent}]" if parent_of(agent) is None
                else f"dispatch: worker [{agent}]")
    if subject != expected:
        rep.add("violation", "numbering", "R-WS-4", agent,
                f"creation commit subject {subject!r}, expected {expected!r}", creation[:12])
    for name in a.creation_messages:
        rep.add("violation", "numbering", "R-WS-4", agent,
                f"the creation commit already holds {name} (a transcript starts empty)",
                creation[:12])
    present: dict[str, None] = {}  # entry names landed so far, in order
    prefix = h.lay.messages + "/"
    for c in a.commits[1:]:
        commit, parents, subject, changes = c.sha, c.parents, c.subject, c.changes
        short = commit[:12]
        if len(parents) != 1:
            rep.add("violation", "numbering", "R-TR-3", agent,
                    f"merge commit {subject!r} on an agent branch", short)
        touched = [(s, p) for s, p in changes if p.startswith(prefix)]
        for status, path in touched:
            if status != "A":
                rep.add("violation", "numbering", "R-TR-3, I-4", agent,
                        f"{path} changed after it landed (git status {status})", short, path)
        added = [p[len(prefix):] for s, p in touched if s == "A"]
        m = _SUBJECT.fullmatch(subject)
        stray = subject == f"transcript: recover delivered stray [{agent}]"
        if not m and not stray:
            rep.add("violation", "numbering", "R-TR-3", agent,
                    f"commit with an unexpected subject {subject!r}", short)
        recovered_results = [n for n in added if stray and _is_tool_result(h, n)]
        if recovered_results:
            rep.add("violation", "numbering", "R-DRAIN-2, R-TOOL-8", agent,
                    f"the stray recovery commits the tool result {recovered_results[0]}: it "
                    "belongs in its own commit with its call's work", short,
                    *(prefix + n for n in recovered_results))
        if m and len(added) != 1:
            rep.add("violation", "numbering", "R-TR-3", agent,
                    f"commit {subject!r} adds {len(added)} entries, not one"
                    + (f" ({', '.join(added)}: an entry without its own commit)"
                    if added else ""), short, *(prefix + n for n in added))
        for name in added:
            parsed = entry_name(name)
            if parsed is None:
                rep.add("violation", "numbering", "R-TR-1", agent,
                        f"{prefix}{name} is not an entry name", short)
                continue
            seq, origin, delivered = parsed
            counted = [u32(n.split("-", 1)[0]) for n in present]
            want = max((s for s in counted if s is not None), default=0) + 1
            if seq != want:
                rep.add("violation", "numbering", "R-TR-2, I-4", agent,
                        f"{prefix}{name} takes number {seq}, the counter says {want}",
                        short, prefix + name)
            seq_text = name.split("-", 1)[0]
            if len(seq_text) < 3 or (len(seq_text) > 3 and seq_text.startswith("0")):
                rep.add("violation", "numbering", "R-TR-1", agent,
                        f"{prefix}{name}: the number is not zero-padded to three digits",
                        short)
            if m and (m.group(1) != seq_text or m.group(2) != origin):
                rep.add("violation", "numbering", "R-TR-3", agent,
                        f"subject {subject!r} does not name {name}", short, prefix + name)
            if m and not (origin == h.lay.tool_origin and not delivered):
                others = [p for s, p in changes if not p.startswith(prefix)]
                if others:
                    rep.add("violation", "numbering", "R-TR-3", agent,
                            f"{name} is not committed alone (also {', '.join(others)})",
                            short)
            present[name] = None


def _is_tool_result(h: History, name: str) -> bool:
    """Whether the entry name ``name`` is a tool result's (``NNN-tool.json``, R-TR-1)."""
    parsed = entry_name(name)
    return parsed is not None and parsed[1] == h.lay.tool_origin and not parsed[2]


# -- entries, strays, inboxes, names, residue -----------------------------


def _check_entries(h: History, rep: Report, a: Agent) -> None:
    """R-DEP-4/5, R-TR-4: every entry's bytes; R-STEP-2/3: tool calls answered."""
    open_calls: dict[str, Entry] = {}
    for e in a.entries:
        where = (e.commit[:12], f"{h.lay.messages}/{e.name}")
        if e.delivered:
            dep = e.parsed
            if isinstance(dep, str):
                rep.add("violation", "format", "R-DEP-4, R-DEP-5", a.id,
                        f"delivered entry is not a deposit: {dep}", *where)
                continue
            assert isinstance(dep, Deposit)
            if dep.get("from") != e.origin:
                rep.add("violation", "format", "R-DEP-4, R-TR-1", a.id,
                        f"delivered entry from {e.origin!r} says from: {dep.get('from')!r}",
                        *where)
            continue
        blocks = e.parsed
        if isinstance(blocks, str):
            rep.add("violation", "format", "R-TR-4", a.id, f"entry JSON: {blocks}", *where)
            continue
        assert isinstance(blocks, list)
        if e.origin == h.lay.tool_origin:
            for b in blocks:
                if b.get("type") == "tool_result":
                    open_calls.pop(str(b.get("tool_use_id")), None)
            continue
        if open_calls:
            rep.add("violation", "format", "R-STEP-2, R-STEP-3", a.id,
                    f"model entry after tool calls that never got a result: "
                    f"{', '.join(sorted(open_calls))}", *where)
            open_calls.clear()
        for call in tool_calls(blocks):
            open_calls[str(call["id"])] = e
    if open_calls:
        first = next(iter(open_calls.values()))
        rep.add("note", "residue", "R-STEP-2", a.id,
                f"tool calls without a result at the tip ({', '.join(sorted(open_calls))}): "
                "a crashed tool window, settled by the next hop",
                first.commit[:12], f"{h.lay.messages}/{first.name}")


def _strays(h: History, rep: Report, a: Agent) -> None:
    """R-DRAIN-2, I-18: files in the worktree's messages/ that no commit holds."""
    committed = {e.name: e for e in a.entries}
    for name, data in a.worktree or ():
        where = h.stray_path(a.id, name)
        if name in committed:
            if committed[name].data != data:
                rep.add("violation", "numbering", "R-TR-3, I-4", a.id,
                        f"{name} in the worktree differs from its committed bytes",
                        where)
            continue
        rep.add("note", "residue", "R-DRAIN-2, I-18", a.id,
                f"uncommitted stray {name} (committed by the next hop's recovery)",
                where)


def _inboxes(h: History, rep: Report) -> None:
    """R-DEP-6/9: what lies in each inbox directory."""
    if h.inbox_error is not None:
        rep.add("violation", "residue", "R-WS-1", None,
                f"cannot list the inbox root: {h.inbox_error}", h.lay.inbox)
        return
    for d, files in h.inboxes:
        if files is None:
            rep.add("note", "residue", "R-WS-7", None, "a file where an inbox belongs",
                    f"{h.lay.inbox}/{d}")
            continue
        for f in files:
            name, data = f.name, f.data
            rel = f"{h.lay.inbox}/{d}/{name}"
            parsed = pending_name(name)
            if parsed is None:
                kind = ("a writer's temp file (its writer died before publishing)"
                        if name.startswith(".") and name.endswith(".tmp")
                        else "a file no reader takes as a deposit")
                rep.add("note", "residue", "R-DEP-6, R-DEP-9", d, kind, rel)
                continue
            if not isinstance(data, bytes):
                rep.add("violation", "format", "R-DEP-9", d, f"unreadable deposit: {data}",
                        rel)
                continue
            if d not in h.agents:
                rep.add("note", "residue", "R-SCAN-2", d,
                        "pending deposit in an inbox with no agent branch (debris)", rel)
            dep = read_deposit(data)
            if isinstance(dep, str):
                rep.add("violation", "format", "R-DEP-4, R-DEP-6", d,
                        f"torn or malformed pending deposit: {dep}", rel)
            elif dep.get("from") != parsed[0]:
                rep.add("violation", "format", "R-DEP-1, R-DEP-4", d,
                        f"deposit named for sender {parsed[0]!r} says from: "
                        f"{dep.get('from')!r}", rel)


def _names(h: History, rep: Report) -> None:
    """R-WS-4, R-ID-6, R-ID-8, R-PROBE-5/6: names unique, goals sent, pinned files there."""
    worn: dict[str, list[str]] = defaultdict(list)
    for a in h.agents.values():
        if a.name:
            worn[a.name].append(a.id)
    for name, ids in sorted(worn.items()):
        if len(ids) > 1:
            rep.add("violation", "names", "R-ID-6, R-ID-8", None,
                    f"the name {name!r} is worn by {len(ids)} agents ({', '.join(ids)}): "
                    "it resolves to none of them")
    made = [a for a in h.agents.values() if a.history]
    pinned = h.pinned
    for a in made:
        creation = a.history[0]
        goal = pinned.get(f"{creation}:{h.lay.goal}")
        if pinned.get(f"{creation}:{h.lay.name}") is None or goal is None:
            rep.add("violation", "names", "R-WS-4", a.id,
                    f"the creation commit lacks {h.lay.goal} or {h.lay.name}",
                    creation[:12])
            continue
        creator = parent_of(a.id) or h.lay.user
        text = goal.decode("utf-8", "replace")
        sent = any(
            c.recipient == a.id and c.sender == creator
            and isinstance(dep := read_deposit(c.data), Deposit) and dep.body == text
            for c in h.copies
        )
        if not sent:
            rep.add("violation", "names", "R-PROBE-5, R-PROBE-6", a.id,
                    f"its goal was never sent: no deposit from {creator} with the bytes of "
                    f"its {h.lay.goal} is pending for it or delivered to it",
                    creation[:12])


def _residue(h: History, rep: Report) -> None:
    """D-16: a staging file left by a driver that died before the rename."""
    for a in h.staged:
        rep.add("note", "residue", "R-TR-3", a,
                "a staged entry never published (its driver died)",
                f"{h.lay.steps}/{a}/{h.lay.staging}")
    for d in h.worktree_dirs:
        if d not in h.agents:
            rep.add("note", "residue", "R-WS-3", d,
                    "a worktree directory with no agent branch (debris)",
                    f"{h.lay.agents}/{d}")


# -- deliveries (I-5) ----------------------------------------------------


def _resolve(h: History, target: str) -> str | None:
    """R-ID-6: an exact id, else the one agent wearing that name."""
    if target in h.agents:
        return target
    named = [a.id for a in h.agents.values() if a.name and a.name == target.strip()]
    return named[0] if len(named) == 1 else None


def _sends(h: History) -> list[tuple[str, str, str, str, bool]]:
    """Plain deposits an agent's transcript witnesses: (sender, recipient, content, place,
    certain). ``certain`` is False when the call's result says it died mid-way (a crash
    between the deposit and the result may or may not have published it)."""
    out = []
    for a in h.agents.values():
        calls: dict[str, tuple[dict[str, object], Entry]] = {}
        for e in a.entries:
            if e.blocks is None:
                continue
            if e.origin != h.lay.tool_origin:
                for c in tool_calls(e.blocks):
                    calls[str(c["id"])] = (c, e)
                continue
            for b in e.blocks:
                if b.get("type") != "tool_result":
                    continue
                found = calls.pop(str(b.get("tool_use_id")), None)  # answered once
                if found is None:
                    continue
                call, model_entry = found
                text = result_text(b)
                inp = call.get("input")
                if not isinstance(inp, dict):
                    continue
                place = f"{model_entry.commit[:12]} {h.lay.messages}/{model_entry.name}"
                certain = b.get("is_error") is False
                if not certain and not text.startswith("died"):
                    continue
                if call["name"] == "message":
                    to = _resolve(h, str(inp.get("agent", "")))
                    if to is not None:
                        out.append((a.id, to, str(inp.get("content", "")), place, certain))
                elif call["name"] == "dispatch" and certain:
                    try:
                        child = json.loads(text).get("agent")
                    except (ValueError, AttributeError):
                        child = None
                    if isinstance(child, str):
                        out.append((a.id, child, str(inp.get("goal", "")), place, True))
    return out


def _copy_key(c: Copy) -> tuple[str, bytes]:
    """What makes two copies one deposit: a result is one terminal event's, named by its
    sender, epitaph and ``terminal_ref`` (I-11: one result per event; its ``deposited_at``
    is left out, so a result sent again a second later is the same result); any other
    deposit is its bytes."""
    dep = read_deposit(c.data)
    if isinstance(dep, Deposit) and dep.get("terminal_ref"):
        event = f"{c.sender}\0{dep.get('epitaph') or ''}\0{dep.get('terminal_ref')}"
        return c.recipient, b"result\0" + event.encode("utf-8", "surrogateescape")
    return c.recipient, c.data


def _deliveries(h: History, rep: Report) -> None:
    groups: dict[tuple[str, bytes], list[Copy]] = defaultdict(list)
    for c in h.copies:
        groups[_copy_key(c)].append(c)
    sends = _sends(h)
    witnessed = Counter((s, r, body) for s, r, body, _, _ in sends)
    for (recipient, _), copies in groups.items():
        if len(copies) < 2:
            continue
        sender = copies[0].sender
        dep = read_deposit(copies[0].data)
        body = dep.body if isinstance(dep, Deposit) else ""
        what_one = f"one deposit from {sender!r}"
        if isinstance(dep, Deposit) and dep.get("terminal_ref"):
            allowed = 1  # a terminal event has one result (I-11)
            what_one = (f"one {dep.get('epitaph')} result from {sender!r} carrying "
                        f"{(dep.get('terminal_ref') or '')[:12]}")
        elif sender == h.lay.user or sender not in h.agents:
            rep.add("note", "delivery", "I-5", recipient,
                    f"{len(copies)} byte-identical deposits from {sender!r}: history cannot "
                    "tell two sends in one second from a duplicate",
                    *(c.place for c in copies))
            continue
        else:
            allowed = max(1, witnessed[(sender, recipient, body)])
        if len(copies) > allowed:
            delivered = sum(c.delivered for c in copies)
            what = ("both pending and delivered" if 0 < delivered < len(copies)
                    else "delivered twice" if delivered > 1 else "pending twice")
            rep.add("violation", "delivery", "I-5, R-DRAIN-4", recipient,
                    f"{what_one} is {what} ({len(copies)} copies, "
                    f"{allowed} sent)", *(c.place for c in copies))
    bodies: Counter[tuple[str, str, str]] = Counter()
    for c in h.copies:
        dep = read_deposit(c.data)
        if isinstance(dep, Deposit) and not dep.get("terminal_ref"):
            bodies[(c.sender, c.recipient, dep.body)] += 1
    for s, r, body in witnessed:
        certain = sum(1 for x in sends if x[:3] == (s, r, body) and x[4])
        if bodies[(s, r, body)] < certain:
            places = [x[3] for x in sends if x[:3] == (s, r, body)]
            rep.add("violation", "delivery", "I-5", s,
                    f"a message to {r} that the sender's transcript says was deposited is "
                    f"neither pending nor delivered ({bodies[(s, r, body)]} of {certain} "
                    "found)", *places)


# -- results, debts and marks (I-11, I-12, I-14) ---------------------------


def _debt(h: History, a: Agent, upto: int) -> tuple[bool, str | None]:
    """R-DEBT-2..4 and R-ADDR-2/3 re-derived: (owed, address) for the terminal response
    at position ``upto`` of the agent's entries."""
    entries = sorted(a.entries[: upto + 1], key=lambda e: e.seq)
    terminals = [e for e in entries if e.terminal]
    owed = True
    if len(terminals) >= 2:
        previous = terminals[-2].seq
        owed = False
        for e in entries:
            if e.seq <= previous or not e.delivered or e.origin == a.id:
                continue
            ref = terminal_ref(e.data.decode("utf-8", "replace"))
            if ref is None or parent_of(e.origin) == a.id:
                owed = True
    prompter = None
    for e in reversed(entries):
        if e.delivered and e.origin != a.id and \
                terminal_ref(e.data.decode("utf-8", "replace")) is None:
            prompter = e.origin
            break
    if not owed or prompter == h.lay.user:
        return owed, None
    return owed, prompter if prompter is not None else parent_of(a.id)


def _results_and_marks(h: History, rep: Report) -> None:
    results: dict[str, list[tuple[Copy, Deposit, str]]] = defaultdict(list)
    for c in h.copies:
        dep = read_deposit(c.data)
        if isinstance(dep, Deposit) and dep.get("terminal_ref"):
            results[c.sender].append((c, dep, dep.get("terminal_ref") or ""))
    rep.results = sum(len(v) for v in results.values())
    for sender, found in sorted(results.items()):
        a = h.agents.get(sender)
        for c, dep, ref in found:
            where = c.place
            epitaph = dep.get("epitaph") or ""
            if a is None:
                rep.add("violation", "results", "R-DEP-5", sender,
                        f"result from an agent with no branch, {epitaph}", where)
                continue
            if c.recipient == sender:
                rep.add("violation", "results", "I-11, R-ADDR-3", sender,
                        f"{epitaph} result addressed to its own sender", where)
            if ref not in a.history:
                rep.add("violation", "results", "R-DEP-5", sender,
                        f"terminal_ref {ref[:12]} is not a commit of the sender's branch",
                        where)
                continue
            if epitaph in OBITUARIES:
                if c.recipient != parent_of(sender):
                    rep.add("violation", "results", "R-ADDR-1, I-11", sender,
                            f"{epitaph} obituary went to {c.recipient}, not to the parent "
                            f"{parent_of(sender)}", where)
                if dep.body:
                    rep.add("violation", "results", "R-DEP-5", sender,
                            f"{epitaph} obituary carries a body", where)
                continue
            if epitaph != FINAL:
                rep.add("violation", "results", "R-TERM-1", sender,
                        f"unknown epitaph {epitaph!r}", where)
                continue
            idx = next((i for i, e in enumerate(a.entries) if e.commit == ref), None)
            if idx is None or not a.entries[idx].terminal:
                rep.add("violation", "results", "R-DEP-5, R-TR-3", sender,
                        f"final-response names {ref[:12]}, which does not commit a terminal "
                        "response", where)
                continue
            owed, address = _debt(h, a, idx)
            e = a.entries[idx]
            if not owed:
                rep.add("violation", "results", "I-12, R-DEBT-4", sender,
                        f"reply to {c.recipient} answers no debt: nothing in the window "
                        f"before {e.name} asked", where, f"{ref[:12]} {e.name}")
            elif address != c.recipient:
                rep.add("violation", "results", "I-11, R-ADDR-3", sender,
                        f"reply went to {c.recipient}, the address is {address or 'nobody'}",
                        where, f"{ref[:12]} {e.name}")
            if e.blocks is not None and dep.body != text_of(e.blocks):
                rep.add("violation", "results", "R-DEP-5", sender,
                        "reply body differs from the text of its terminal entry",
                        where, f"{ref[:12]} {e.name}")
    # R-SCAN-9 / I-12: every owed reply to an agent left.
    for a in h.agents.values():
        sent = {ref for _, _, ref in results.get(a.id, [])}
        for i, e in enumerate(a.entries):
            if not e.terminal:
                continue
            owed, address = _debt(h, a, i)
            if not owed or address is None or address not in h.agents or e.commit in sent:
                continue
            at_tip = e.commit == a.tip
            rep.add("note" if at_tip else "violation", "results", "I-12, R-SCAN-9", a.id,
                    f"reply owed to {address} for {e.name} never left"
                    + (" (at the tip: `scan` re-sends it)" if at_tip else ""),
                    f"{e.commit[:12]} {h.lay.messages}/{e.name}")
    marks = h.marks
    for ref, commit in sorted(marks.items()):
        kind, _, agent = ref[len(h.lay.mark_ref_prefix):].partition("/")
        a = h.agents.get(agent)
        if kind in h.lay.other_marks and a is not None:
            continue  # the implementation's own kind of mark: nothing SPEC judges
        if a is None or kind not in MARK_KINDS:
            rep.add("note", "marks", "R-WS-5", agent or None,
                    f"mark {ref} names no agent or an unknown kind (debris)", ref)
            continue
        if commit not in a.history:
            rep.add("violation", "marks", "R-WS-5", agent,
                    f"{ref} points at {commit[:12]}, not a commit of the agent's branch", ref)
    for a in h.agents.values():
        mark = marks.get(f"{h.lay.mark_ref_prefix}returned/{a.id}")
        refs = [ref for _, _, ref in results.get(a.id, []) if ref in a.history]
        if not refs:
            if mark is not None and mark in a.history:
                rep.add("violation", "marks", "R-DEP-8, I-14", a.id,
                        f"returned mark at {mark[:12]} but no result from it exists",
                        f"{h.lay.mark_ref_prefix}returned/{a.id}")
            continue
        last = max(refs, key=a.history.index)
        if mark != last:
            rep.add("violation", "marks", "R-DEP-8, I-14", a.id,
                    f"returned mark is {mark[:12] if mark else 'missing'}, the newest result "
                    f"names {last[:12]}", f"{h.lay.mark_ref_prefix}returned/{a.id}")
