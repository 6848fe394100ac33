"""Why a counterexample's last step breaks its invariant, in one sentence.

`explain(violation, scope)` reads the same states the invariant judged (the last
step's pre- and post-state, or the cycle of a lasso) and says what the invariant
requires and which values fail it, naming agents, files and processes as the
swimlane does. It is written beside `lernie_spec.properties`, not inside it: it
never decides a verdict, it only puts the invariant's own words to the values.
An invariant without its own explainer gets its predicate's docstring.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

import lernie_spec.properties as P
from lernie_spec.explore import Violation
from lernie_spec.model import (
    FINAL,
    NOBODY,
    PLAIN,
    EntryKind,
    File,
    Proc,
    Scope,
    State,
    Step,
    name,
)


class At(NamedTuple):
    """The violating step: its pre-state (None for an initial state), step and post-state."""

    pre: State | None
    step: Step | None
    post: State
    scope: Scope
    vio: Violation


def _file(f: File) -> str:
    return f"{name(f.sender)}-{f.n:03d}" + ("" if f.kind == PLAIN else f"[{f.kind}]")


def _proc(p: Proc) -> str:
    return p.role.value + ("" if p.agent < 0 else ":" + name(p.agent))


def _files(fs: list[str]) -> str:
    return ", ".join(fs) if fs else "none"


def _i1(at: At) -> str:
    holders: list[str] = []
    for p in at.post.procs:
        if p.lease:
            holders.append(f"{_proc(p)} (lease on {name(p.agent)})")
        if p.probe_on != NOBODY:
            holders.append(f"{_proc(p)} (probe on {name(p.probe_on)})")
    for a, ag in enumerate(at.post.agents):
        if ag.forked_holder:
            holders.append(f"a forked child (on {name(a)})")
    return ("at most one process may hold an agent's lock, and only the lease holder writes "
            "its branch; after this step the holders are " + _files(holders))


def _i2(at: At) -> str:
    assert at.pre is not None and at.step is not None
    p = at.pre.procs[at.step.actor]
    return (f"a lease is given up only by a release, an error exit or a crash, but "
            f"{_proc(p)} lost its lease on {name(p.agent)} by '{at.step.text}' "
            f"({at.step.rule})")


def _i5(at: At) -> str:
    st = at.post
    where: Counter[tuple[int, int, str]] = Counter(
        (a, f.sender, f.kind) for a, ag in enumerate(st.agents) for f in ag.inbox)
    for ag in st.agents:
        where.update((d.recipient, d.sender, d.kind) for d in ag.uncommitted)
    flight = Counter((d.recipient, d.sender, d.kind) for d in st.in_flight)
    lost = sorted((flight - where).elements())
    extra = sorted((where - flight).elements())

    def dep(d: tuple[int, int, str]) -> str:
        kind = "" if d[2] == PLAIN else f" [{d[2]}]"
        return f"{name(d[1])}'s deposit to {name(d[0])}{kind}"

    parts = []
    if lost:
        parts.append("lost: " + ", ".join(dep(d) for d in lost))
    if extra:
        parts.append("counted twice: " + ", ".join(dep(d) for d in extra))
    return (f"every published deposit must stay a pending file or a delivered, uncommitted "
            f"entry exactly once: {len(st.in_flight)} published and uncommitted, "
            f"{sum(where.values())} found in inboxes and transcripts ({'; '.join(parts)})")


def _i7(at: At) -> str:
    st = at.post
    why = []
    for a, ag in enumerate(st.agents):
        waiting = [_file(f) for f in ag.inbox if not P.parked_kind(f.kind)]
        if waiting:
            why.append(f"{name(a)}'s inbox still holds {_files(waiting)}")
        h = ag.history.value
        due = P.work_due(h.entries)
        if due == "unpaired":
            why.append(f"{name(a)} has an unpaired tool call")
        elif due == "call due" and not P.parked_at_tip(h):
            why.append(f"{name(a)} has a model call due and no stop mark at its tip")
    return ("once no process runs and no launch is pending (with no crash or error used), "
            "no mail may wait and no agent may have work due, but "
            + ("; ".join(why) or "an agent has work due") + " and nothing will wake it")


def _i8(at: At) -> str:
    assert at.step is not None
    who = ", ".join(name(a) for a in at.step.launched) or "an agent"
    fund = at.step.funding.name.lower().replace("_", " ") if at.step.funding else "nothing"
    return (f"every launch must be paid for by an earlier event, once per event, but "
            f"'{at.step.text}' ({at.step.rule}) launches {who} funded by {fund}")


def _i9(at: At) -> str:
    assert at.pre is not None and at.step is not None
    p = at.pre.procs[at.step.actor]
    return (f"a process that set a stop or budget mark never self-launches or revives (pin 2), "
            f"but {_proc(p)} set one and then launched "
            f"{', '.join(name(a) for a in at.step.launched) or 'a driver'} "
            f"by '{at.step.text}'")


def _i11(at: At) -> str:
    e = P.Edge(at.pre, at.step, at.post, at.scope)
    for to, f in e.files:
        if f.kind == PLAIN or f.sender < 0:
            continue
        c = f.sender
        address = at.scope.parents[c] if f.kind != FINAL else P.reply(
            at.post.agents[c].history.value.entries, c, at.scope)[1]
        if to != address or to == c:
            belongs = (f"it belongs to {name(address)}" if address >= 0 else
                       "its transcript names no agent to answer (the last prompter is the "
                       "user, or nobody)")
            return (f"a result goes to the one address its event names, but {name(c)}'s "
                    f"{f.kind} result went to {name(to)} where {belongs}")
    return ("a revival must wake exactly the recipient of the final response, but "
            f"'{at.step.text if at.step else ''}' woke "
            f"{', '.join(name(a) for a in at.step.launched) if at.step else 'another agent'}")


def _i12(at: At) -> str:
    e = P.Edge(at.pre, at.step, at.post, at.scope)
    assert at.pre is not None
    for to, f in e.files:
        if f.kind != FINAL or f.sender < 0:
            continue
        c = f.sender
        entries = at.pre.agents[c].history.value.entries
        owed, _ = P.reply(entries, c, at.scope)
        if not owed:
            ends = [k for k, x in enumerate(entries) if P.is_terminal(x)]
            window = entries[ends[-2] + 1:ends[-1]] if len(ends) > 1 else ()
            got = [f"{name(x.sender)}'s {x.deposit_kind}" for x in window
                   if x.kind is EntryKind.DELIVERED and x.sender != c]
            return (f"a final response is deposited only when a reply is owed to an agent, "
                    f"but {name(c)} replied to {name(to)} although nothing delivered since "
                    f"its previous final response asks for one (delivered: "
                    f"{_files(got)}): a reply to a reply")
        return (f"a reply is owed once, but {name(c)} deposited a second final response to "
                f"{name(to)} for the same tip")
    return ("a reply owed to an agent must land before its author releases, but the release "
            f"'{at.step.text if at.step else ''}' left it undelivered")


def _i13(at: At) -> str:
    vio = at.vio
    loop = vio.trace[len(vio.trace) - vio.loop:]
    rules = sorted({s.rule for s, _ in loop})
    actors = []
    pre = vio.trace[len(vio.trace) - vio.loop - 1][1] if len(vio.trace) > vio.loop else vio.init
    for step, post in loop:
        if 0 <= step.actor < len(pre.procs):
            actors.append(_proc(pre.procs[step.actor]))
        pre = post
    return (f"an exchange must end once the operator stops sending, but the last {vio.loop} "
            f"steps ({', '.join(rules)}) return to the state they started from with no "
            f"external input, so {', '.join(dict.fromkeys(actors)) or 'the agents'} keep "
            f"replying to each other forever")


def _i14(at: At) -> str:
    e = P.Edge(at.pre, at.step, at.post, at.scope)
    for _, f in e.files:
        if f.kind == PLAIN or f.sender < 0:
            continue
        return (f"every published result moves its author's returned mark to the tip, but "
                f"after {name(f.sender)}'s {f.kind} result the mark is "
                f"{'at' if at.post.agents[f.sender].returned_at_tip else 'not at'} the tip")
    return P.INVARIANTS["I-14"].title


def _i16(at: At) -> str:
    assert at.pre is not None
    e = P.Edge(at.pre, at.step, at.post, at.scope)
    made = {(f.sender, to, f.kind) for to, f in e.files}
    owed = P.expected_sweep(at.pre, at.scope)

    def show(xs: set[tuple[int, int, str]]) -> str:
        return _files([f"{name(s)}→{name(t)} [{k}]" for s, t, k in sorted(xs)])

    return (f"the sweep deposits exactly the results R-SCAN-4/5/9 owe: it owed {show(owed)} "
            f"and deposited {show(made)}")


def _i17(at: At) -> str:
    e = P.Edge(at.pre, at.step, at.post, at.scope)
    assert at.pre is not None
    gone = [name(to) for to, _ in e.files if not at.pre.agents[to].exists]
    return (f"every publication goes to an agent that exists, but this step deposits to "
            f"{_files(gone)}, which does not exist yet")


def _i18(at: At) -> str:
    assert at.pre is not None and at.step is not None
    p = at.pre.procs[at.step.actor]
    ag = at.pre.agents[p.agent]
    what = "a delivered entry not yet committed" if ag.uncommitted else (
        "an executor's entry whose driver died before committing it")
    return (f"a drain or model step runs only with no stray entry left, but {_proc(p)} did "
            f"'{at.step.text}' while {name(p.agent)}'s transcript holds {what}")


def _i19(at: At) -> str:
    st = at.post
    why = []
    for a, ag in enumerate(st.agents):
        if ag.forked_holder:
            why.append(f"a forked child still holds {name(a)}'s lock")
        if not ag.exists:
            continue
        h = ag.history.value
        due = P.work_due(h.entries)
        stray = ag.uncommitted or ag.stray_step  # the next scan revives it (R-SCAN-10)
        if due != "nothing due" and not ag.inbox and not P.parked_at_tip(h) and not stray:
            why.append(f"{name(a)} has work due ({due}) with nothing to wake it")
    return ("with no process left and no launch in flight, no lock may be held and every "
            "agent with work due must be recoverable and every owed reply landed, but "
            + ("; ".join(why) or "an owed reply was lost"))


def _i20(at: At) -> str:
    assert at.pre is not None
    owed = P.expected_revival(at.pre, at.scope)
    missing = [name(a) for a in sorted(owed) if at.post.agents[a].pending_launches == 0]
    return ("a scan relaunches every dead agent with work due (R-SCAN-10), but after this "
            f"sweep {_files(missing)} has work due and no driver launched")


def _i21(at: At) -> str:
    assert at.pre is not None and at.step is not None
    p = at.pre.procs[at.step.actor]
    h = p.history.value
    sent = _files([name(r) for r, _ in h.published])
    woke = _files([name(a) for a, _ in h.launched])
    return (f"a process that ends other than by a death or an error exit has made every "
            f"wakeup it owed, but {_proc(p)} ended by '{at.step.text}' having published to "
            f"{sent} and woken {woke}")


def _i22(at: At) -> str:
    assert at.pre is not None and at.step is not None
    p = at.pre.procs[at.step.actor]
    stops = _files([name(a) for a in p.history.value.stop_requests])
    return (f"a driver alive when the operator stopped its agent or an ancestor takes no "
            f"model call and commits no tool result after that, but {_proc(p)} did "
            f"'{at.step.text}' after `lernie stop` of {stops}")


EXPLAINERS: dict[str, Callable[[At], str]] = {
    "I-21": _i21, "I-22": _i22,
    "I-1": _i1, "I-2": _i2, "I-5": _i5, "I-7": _i7, "I-8": _i8, "I-9": _i9, "I-11": _i11,
    "I-12": _i12, "I-13": _i13, "I-14": _i14, "I-16": _i16, "I-17": _i17, "I-18": _i18,
    "I-19": _i19, "I-20": _i20,
}


def _fallback(inv: str) -> str:
    spec = P.INVARIANTS.get(inv)
    if spec is None:
        return "the invariant does not hold"
    doc = (spec.holds.__doc__ or "") if spec.holds else ""
    words = " ".join(doc.split()) or spec.title
    return words[0].lower() + words[1:].rstrip(".") + ", and this step breaks it"


def at_step(vio: Violation, scope: Scope) -> At:
    if not vio.trace:
        return At(None, None, vio.init, scope, vio)
    pre = vio.trace[-2][1] if len(vio.trace) > 1 else vio.init
    step, post = vio.trace[-1]
    return At(pre, step, post, scope, vio)


def explain(vio: Violation, scope: Scope | None = None) -> str:
    """One sentence: `I-n (title) breaks at step k: <why, with the values>.`"""
    inv = vio.invariant
    title = P.TITLES.get(inv, "")
    where = (f"in the {vio.loop}-step cycle" if vio.loop else f"at step {len(vio.trace)}")
    fn = EXPLAINERS.get(inv)
    why = ""
    if fn is not None and scope is not None:
        try:
            why = fn(at_step(vio, scope))
        except (AssertionError, IndexError, KeyError, AttributeError, TypeError):
            why = ""  # the model changed shape: say what the invariant says instead
    if not why:
        why = _fallback(inv)
    return f"{inv} ({title}) breaks {where}: {why}."
