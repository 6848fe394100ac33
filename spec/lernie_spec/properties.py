"""The invariants of SPEC.md §16 as one table of predicates (`INVARIANTS`).

Every predicate judges the model's decisions against what happened, read from
the ghost history the transitions append to (`lernie_spec.model.Ghost`) and
from the difference between the state before and after a step; steps are
classified by the explicit fields of `Step` (`action`, `launched`,
`funding`). The functions below that re-derive the last prompter, the reply
debt, the warrant, the marks and the sweep's verdict are written here, plainly
and on their own, from SPEC.md's text: they call none of the model's decision
functions and read none of the fields those decisions maintain.

A state predicate (`Kind.STATE`) is checked on every state reached; a step
predicate (`Kind.STEP`) on every edge, where `step_violations` runs each of
its parts only if the edge has the facts the part reads (`Part.when`, which
restates the part's own first tests); I-13 (exchange termination) is a
property of the whole graph and lives in `lernie_spec.explore`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Final, NamedTuple, TypeVar

from lernie_spec.model import (
    DIED,
    FINAL,
    NOBODY,
    PLAIN,
    USER,
    Action,
    Agent,
    AgentHistory,
    Death,
    Entry,
    EntryKind,
    File,
    Funding,
    Ghost,
    Proc,
    ProcHistory,
    Role,
    Scope,
    State,
    Step,
)


class Kind(enum.Enum):
    STATE = "state"
    STEP = "step"
    GRAPH = "graph"


class Edge:
    """What a predicate judges: a step and its two states (no step: an initial
    state). What several predicates read off the difference of the two states
    is computed once per edge: `changed`, the indices of the agents whose record
    the step replaced (an unchanged agent is the same object), and `files`,
    (recipient, file) of every file the step published."""

    __slots__ = ("changed", "files", "post", "pre", "scope", "step")

    def __init__(self, pre: State | None, step: Step | None, post: State, scope: Scope) -> None:
        self.pre = pre
        self.step = step
        self.post = post
        self.scope = scope
        self.changed: list[int] = []
        self.files: list[tuple[int, File]] = []
        if pre is not None and pre.agents is not post.agents:
            xs, ys = pre.agents, post.agents
            self.changed = [a for a in range(len(xs)) if xs[a] is not ys[a]]
            if self.changed:
                self.files = new_files(pre, post, self.changed)


Predicate = Callable[[Edge], bool]


# What a step did, read once per edge (`edge_facts`), as bits. A step predicate
# holds by its own first tests on every edge that lacks the facts it reads: its
# `Part.when` names them, and `step_violations` runs it only on edges that have
# them. Each `when` below restates its predicate's opening tests, no more.
CHANGED: Final = 1  # the step replaced some agent's record
FILES: Final = 2  # the step published a file
LAUNCHED: Final = 4  # the step names agents it launched
LEASE: Final = 8  # the actor held its agent's lease before the step
PROBE: Final = 16  # the actor held a probe before the step
OTHER_WRITES: Final = 32  # an actor that is not a driver replaced some agent's record
RELEASED_ACTS: Final = 64  # an actor past its release replaced an agent or the in-flight set
PIN: Final = 128  # an actor's step funded by a self-launch or a revival
REVIVAL: Final = 256  # an actor's step funded by a revival
NEW: Final = 512  # the post-state is one the explorer has not seen before
PENDING_UP: Final = 1024  # some agent has more pending launches after the step than before
ENDS: Final = 2048  # the step ended its actor's process

Guard = Callable[[Action, int], bool]


def always(act: Action, facts: int) -> bool:
    return True


class Part(NamedTuple):
    """One conjunct of a step invariant and the edges it can fail on."""

    holds: Predicate
    when: Guard = always


class Invariant(NamedTuple):
    title: str
    kind: Kind
    holds: Predicate | None  # None for I-13 (the explorer's graph check)
    # A step invariant as the conjunction of parts, each run only where its
    # guard admits the edge (the explorer's fast path; `holds` is the same check
    # in one piece). Empty: the one part `holds`, on every edge.
    parts: tuple[Part, ...] = ()


# ----------------------------------------------------------- plain readings
# What SPEC.md says, over the ghost history. None of these call the model.


def parked_kind(kind: str) -> bool:
    """R-REL-2: only `stopped` and `budget-exhausted` results park."""
    return kind in ("stopped", "budget-exhausted")


def work_due(entries: tuple[Entry, ...]) -> str:
    """R-STEP-3 read from the entries: "unpaired", "call due" or "nothing due"."""
    open_uses = 0
    for e in entries:
        if e.kind is EntryKind.MODEL:
            if open_uses:
                return "unpaired"  # a tool_use never got its result
            open_uses = e.tool_uses
        elif e.kind is EntryKind.TOOL_RESULT:
            open_uses -= 1
    if open_uses > 0:
        return "unpaired"
    if not entries or entries[-1].kind is EntryKind.MODEL:
        return "nothing due"
    return "call due"


def is_terminal(e: Entry) -> bool:
    """R-DEBT-2: a model entry with no tool_use."""
    return e.kind is EntryKind.MODEL and e.tool_uses == 0


def last_prompter(entries: tuple[Entry, ...], me: int) -> int:
    """R-ADDR-2: newest delivered plain entry not sent by the agent itself."""
    for e in reversed(entries):
        if e.kind is EntryKind.DELIVERED and e.deposit_kind == PLAIN and e.sender != me:
            return e.sender
    return NOBODY


def reply(entries: tuple[Entry, ...], me: int, scope: Scope) -> tuple[bool, int]:
    """R-DEBT-2..4 and R-ADDR-3 at the newest terminal response: (owed, address),
    the address NOBODY when the last prompter is the operator."""
    terminals = [k for k, e in enumerate(entries) if is_terminal(e)]
    if not terminals:
        return False, NOBODY  # no terminal response: nothing can be owed
    newest = terminals[-1]
    before = terminals[-2] if len(terminals) > 1 else -1
    asks = False
    for e in entries[before + 1 : newest]:
        if e.kind is EntryKind.DELIVERED and e.sender != me:
            own_child = e.sender >= 0 and scope.parents[e.sender] == me
            if e.deposit_kind == PLAIN or own_child:
                asks = True
    owed = before < 0 or asks
    lp = last_prompter(entries[: newest + 1], me)
    if lp == USER:
        return owed, NOBODY
    return owed, scope.parents[me] if lp == NOBODY else lp


def returned_at_tip(h: AgentHistory) -> bool:
    """R-DEP-8: the returned mark was last set at the current tip."""
    return h.marked_at == h.commits


def carried_at_tip(h: AgentHistory) -> bool:
    """R-SCAN-11: some result by the agent carries its current tip (it is on disk:
    pending for, or delivered to, its recipient; results are never removed)."""
    return any(r.tip == h.commits for r in h.results)


def debt_of(entries: tuple[Entry, ...], upto: int) -> int:
    """The debt a reply published when the transcript held `upto` entries pays: the
    index of the newest terminal response among them (-1: none)."""
    for k in range(upto - 1, -1, -1):
        if is_terminal(entries[k]):
            return k
    return -1


def replies_for(h: AgentHistory, k: int) -> int:
    """How many final responses were published for the debt of terminal entry k, by
    any path (the exit protocol, a sweep's re-send, a hop's re-send)."""
    return sum(1 for r in h.results
               if r.kind == FINAL and debt_of(h.entries, r.entries) == k)


def owes_wakeup(d: Death, a: int) -> bool:
    """Whether a process that died owed agent a a wakeup when it died: it was a's
    driver (its drain, release rule or exit protocol was still to come), or it had
    published into a's inbox more often than it had probed (or flushed) a since."""
    if d.role is Role.DRIVER and d.agent == a:
        return True
    return sum(1 for r, k in d.published if r == a and not parked_kind(k)) > d.woke.count(a)


def stranded_by_death(h: AgentHistory, a: int, serial: int) -> bool:
    """R-SCAN-2 recovery: the pending file with this serial was in a's inbox when a
    process that owed a a wakeup died (a scan's flush launches it)."""
    return any(serial in d.pending and owes_wakeup(d, a) for d in h.deaths)


def died_holding(h: AgentHistory) -> bool:
    """R-SCAN-10 recovery: the last lease on the agent was lost by a death or an
    error exit, not given up by a release (a scan revives the agent)."""
    return bool(h.leases) and h.leases[-1] == "lost"


def parked_at_tip(h: AgentHistory) -> bool:
    """R-WS-5: a stopped or budget-exhausted mark sits at the tip."""
    return h.parked_at == h.commits


def held(st: State, a: int) -> bool:
    """R-LOCK-1: some process (or a forked copy of its descriptor) holds a's lock."""
    return st.agents[a].forked_holder or any(
        (p.lease and p.agent == a) or p.probe_on == a for p in st.procs)


def expected_sweep(st: State, scope: Scope) -> set[tuple[int, int, str]]:
    """R-SCAN-4/5/9: (author, recipient, kind) of every result the sweep owes.
    A terminal entry not yet committed owes nothing yet (R-SCAN-9 reads the tip)."""
    out: set[tuple[int, int, str]] = set()
    for c, ag in enumerate(st.agents):
        h = ag.history.value
        if (not ag.exists or held(st, c) or returned_at_tip(h) or carried_at_tip(h)
                or h.unsynced):
            continue
        due = work_due(h.entries)
        par = scope.parents[c]
        if due != "nothing due":
            if (not ag.inbox and not parked_at_tip(h) and par != NOBODY
                    and st.agents[par].exists):
                out.add((c, par, DIED))
        elif h.entries and is_terminal(h.entries[-1]):
            owed, to = reply(h.entries, c, scope)
            if owed and to >= 0 and st.agents[to].exists:
                out.add((c, to, FINAL))
    return out


def trailing_open_window(entries: tuple[Entry, ...]) -> bool:
    """R-STEP-2: the newest model entry has tool uses, and nothing but fewer tool
    results than it has uses follows it."""
    results = 0
    for e in reversed(entries):
        if e.kind is EntryKind.TOOL_RESULT:
            results += 1
        elif e.kind is EntryKind.MODEL:
            return e.tool_uses > results
        else:
            return False
    return False


def given_up(h: AgentHistory) -> bool:
    """R-SCAN-10's crash-loop guard: three revivals already at the current tip."""
    return h.revived_at.count(h.commits) >= 3


def expected_revival(st: State, scope: Scope) -> set[int]:
    """R-SCAN-10: the agents a scan's sweep must relaunch: not held, no pending mail,
    and either dead with work due (a model call due, or a trailing open tool window;
    no stop or budget mark at the tip) or holding a terminal entry that never got
    its commit; the crash-loop guard excepted."""
    out = set()
    for c, ag in enumerate(st.agents):
        h = ag.history.value
        if not ag.exists or held(st, c) or ag.inbox or given_up(h):
            continue
        stray = h.unsynced and bool(h.entries) and is_terminal(h.entries[-1])
        due = work_due(h.entries) == "call due" or trailing_open_window(h.entries)
        if stray or (due and not parked_at_tip(h)):
            out.add(c)
    return out


def new_files(pre: State, post: State, agents: list[int] | None = None
              ) -> list[tuple[int, File]]:
    """(recipient, file) of every file a step published (looking only at
    `agents` when given: the ones whose record changed)."""
    out = []
    if pre.agents is post.agents:
        return []
    for a in range(len(pre.agents)) if agents is None else agents:
        x, y = pre.agents[a], post.agents[a]
        if x.inbox is y.inbox:
            continue
        before = set(x.inbox)
        out += [(a, f) for f in y.inbox if f not in before]
    return out


def _actor(e: Edge) -> int:
    return e.step.actor if e.step is not None else -1


def _proc_after(e: Edge) -> int:
    """Index of the actor in the post-state, -1 when the step ended it."""
    assert e.pre is not None and e.step is not None
    i = e.step.actor
    if i < 0 or len(e.post.procs) < len(e.pre.procs):
        return -1
    return i


def _steps(e: Edge) -> tuple[State, Step]:
    assert e.pre is not None and e.step is not None
    return e.pre, e.step


# ------------------------------------------------------------- predicates


def i1_one_executor(e: Edge) -> bool:
    """Every entry or commit on a's branch is made by the holder of a's lease."""
    pre, step = _steps(e)
    for a in e.changed:
        x, y = pre.agents[a], e.post.agents[a]
        if not x.exists:
            continue
        hx, hy = x.history.value, y.history.value
        if hy.commits != hx.commits or len(hy.entries) != len(hx.entries):
            i = step.actor
            if i < 0 or not (pre.procs[i].lease and pre.procs[i].agent == a):
                return False
    return True


def i1_state(st: State) -> bool:
    holders = [ag for ag, x in enumerate(st.agents) if x.forked_holder]
    if len(st.procs) < 2 and not holders:
        return True
    for p in st.procs:
        if p.lease:
            holders.append(p.agent)
        if p.probe_on != NOBODY:
            holders.append(p.probe_on)
    return len(holders) == len(set(holders))


def i1(e: Edge) -> bool:
    """At most one holder per lock (a lease, a probe's instant or a forked copy
    of a descriptor), and only the lease holder writes the agent's branch."""
    return i1_state(e.post) and i1_one_executor(e)


def i2_lease_continuity(e: Edge) -> bool:
    """A lease is given up only by a release, an error exit or a crash: in
    particular the baton (R-LOCK-3) keeps it with the same process."""
    pre, step = _steps(e)
    i = step.actor
    if i < 0 or not pre.procs[i].lease:
        return True
    if step.action in (Action.RELEASE_LEASE, Action.DECLINE, Action.ERROR_EXIT, Action.CRASH):
        return True
    j = _proc_after(e)
    return j >= 0 and e.post.procs[j].lease and e.post.procs[j].agent == pre.procs[i].agent


def i3_writers_never_drive(e: Edge) -> bool:
    """A probe's hold lasts one step, which releases it; writers and scanners
    never deliver or commit."""
    pre, step = _steps(e)
    i = step.actor
    if i < 0:
        return True
    p = pre.procs[i]
    if p.probe_on != NOBODY:
        if step.action not in (Action.PROBE_RELEASE_LAUNCH, Action.CRASH):
            return False
        j = _proc_after(e)
        if j >= 0 and e.post.procs[j].probe_on != NOBODY:
            return False
    if p.role is not Role.DRIVER:
        for a in e.changed:
            x, y = pre.agents[a], e.post.agents[a]
            if len(y.history.value.entries) != len(x.history.value.entries):
                return False
    return True


def i4_transcript_numbering(e: Edge) -> bool:
    """Entries are appended one per step and never changed once written."""
    pre, _ = _steps(e)
    for a in e.changed:
        x, y = pre.agents[a], e.post.agents[a]
        ex, ey = x.history.value.entries, y.history.value.entries
        if ey[: len(ex)] != ex or len(ey) - len(ex) > 1:
            return False
    return True


def i5_no_deposit_lost(e: Edge) -> bool:
    """Published-and-uncommitted deposits = pending files + moved-uncommitted entries."""
    st = e.post
    # (recipient, sender, kind): a Dep's fields, as a plain tuple (equal to the Dep)
    where = [(a, f.sender, f.kind) for a, ag in enumerate(st.agents) for f in ag.inbox]
    for ag in st.agents:
        where.extend(ag.uncommitted)
    return len(where) == len(st.in_flight) and sorted(where) == list(st.in_flight)


def i6_delivery_order(e: Edge) -> bool:
    """Each move takes the first file of the drain's listing still to move:
    plain mail before own-child results, each in mtime (listing) order."""
    pre, step = _steps(e)
    if step.action is not Action.MOVE_DEPOSIT:
        return True
    p = pre.procs[step.actor]
    a = p.agent
    gone = [f for f in pre.agents[a].inbox if f not in e.post.agents[a].inbox]
    if not gone:
        return True
    h = p.history.value
    left = [f for f in h.listing if f not in h.moved and f in pre.agents[a].inbox]

    def rank(f: File) -> tuple[bool, int]:
        own_child = f.kind != PLAIN and f.sender >= 0 and e.scope.parents[f.sender] == a
        return own_child, h.listing.index(f)

    return bool(left) and gone == [min(left, key=rank)]


def _at_rest(st: State) -> bool:
    return not st.procs and not any(ag.pending_launches for ag in st.agents)


def i7_no_lost_wakeup(e: Edge) -> bool:
    """Quiescent, crashes and error exits included: every pending deposit is a parked
    obituary or one a death stranded (it was pending when a process that owed it a
    wakeup died: the next scan's flush launches it), and no agent has work due unless
    a stop/budget mark sits at its tip or its last lease was lost by a death (the next
    scan revives it, I-20)."""
    st = e.post
    if not _at_rest(st) or any(ag.forked_holder for ag in st.agents):
        return True
    for a, ag in enumerate(st.agents):
        h = ag.history.value
        for f, serial in zip(ag.inbox, h.serials, strict=True):
            if not parked_kind(f.kind) and not stranded_by_death(h, a, serial):
                return False
        due = work_due(h.entries)
        if (due == "unpaired" or (due == "call due" and not parked_at_tip(h))) and (
                not died_holding(h)):
            return False
    return True


def _launch_diff(e: Edge) -> set[int]:
    assert e.pre is not None
    pre, post = e.pre.agents, e.post.agents
    return {a for a in e.changed if post[a].pending_launches > pre[a].pending_launches}


def i8_funded_launches(e: Edge) -> bool:
    """Every launch is funded by what happened before it, once per funding event."""
    pre, step = _steps(e)
    if not _launch_diff(e) <= set(step.launched):
        return False
    if not step.launched:
        return True
    if step.funding is None or step.actor < 0:
        return False
    p = pre.procs[step.actor]
    h = p.history.value
    prior = [a for a, why in h.launched if why is step.funding]
    for t in step.launched:
        if step.funding is Funding.WRITER_DEPOSIT:
            deposits = sum(1 for r, _ in h.published if r == t)
            if deposits <= prior.count(t):
                return False
        elif step.funding is Funding.RELEASE_RULE:
            if not h.released or prior or not any(not parked_kind(f.kind) for f in h.reread_saw):
                return False
        elif step.funding is Funding.SELF_LAUNCH:
            if t != p.agent or h.committed_final < 0 or not h.released or prior:
                return False
        elif step.funding is Funding.REVIVAL:
            if h.committed_final < 0 or not h.released or prior:
                return False
            tip = pre.agents[p.agent].history.value
            if not any(r.kind == FINAL and r.recipient == t for r in tip.results):
                return False
        elif step.funding is Funding.FLUSH:
            if (p.role is not Role.SCANNER or not pre.agents[t].inbox or prior.count(t)
                    or held(pre, t)):  # R-SCAN-2: a busy probe launches nothing
                return False
        elif step.funding is Funding.SCAN_REVIVAL and (
                p.role is not Role.SCANNER or t not in expected_revival(pre, e.scope)):
            return False
    return True


def i9_pin_2(e: Edge) -> bool:
    """A process whose event set a stop/budget mark never self-launches or revives."""
    pre, step = _steps(e)
    if step.actor < 0 or step.funding not in (Funding.SELF_LAUNCH, Funding.REVIVAL):
        return True
    return not pre.procs[step.actor].history.value.parked_event


# an agent's record but its launch fields (`pending_launches`, then `forked_holder`)
_LAUNCH_AT: Final = Agent._fields.index("pending_launches")
assert Agent._fields[_LAUNCH_AT + 1] == "forked_holder"


def _same_but_launches(x: Agent, y: Agent) -> bool:
    """x and y agree in every field but the launch fields, and in the transcript, the
    commits, the results and the parking their histories record. Read field by field (a
    field the step kept is the same object in both) without copying either record."""
    u: tuple[object, ...] = x
    w: tuple[object, ...] = y
    for k in range(len(u)):
        if (k < _LAUNCH_AT or k > _LAUNCH_AT + 1) and u[k] is not w[k] and u[k] != w[k]:
            return False
    g, h = x.history.value, y.history.value
    return (g.entries == h.entries and g.commits == h.commits and g.results == h.results
            and g.parked_at == h.parked_at)


def i10_no_authority_after_release(e: Edge) -> bool:
    """After its release a process changes nothing but launches."""
    pre, step = _steps(e)
    if step.actor < 0 or not pre.procs[step.actor].history.value.released:
        return True
    if pre.in_flight != e.post.in_flight:
        return False
    return all(_same_but_launches(pre.agents[a], e.post.agents[a]) for a in e.changed)


def i11_one_address(e: Edge) -> bool:
    """Obituaries go to the parent; a final response to the address R-ADDR-3
    reads from the transcript, never to the author; the revival wakes exactly
    the deposit's recipient."""
    pre, step = _steps(e)
    for to, f in e.files:
        if f.kind == PLAIN or f.sender < 0:
            continue
        c = f.sender
        if f.kind != FINAL:
            if to != e.scope.parents[c]:
                return False
            continue
        _, address = reply(e.post.agents[c].history.value.entries, c, e.scope)
        if to == c or to != address:
            return False
    if step.funding is Funding.REVIVAL and step.actor >= 0:
        p = pre.procs[step.actor]
        sent = [r.recipient for r in pre.agents[p.agent].history.value.results
                if r.kind == FINAL and not r.by_sweep]
        if not sent or list(step.launched) != [sent[-1]]:
            return False
    return True


def i12_reply_owed_once(e: Edge) -> bool:
    """A final response is deposited iff a reply is owed to an agent, and then
    exactly once: counted over the ghost history, every reply published (by any
    path) pays the debt of the newest terminal response before it, which must be
    owed and not paid already. Obituaries: one `died` per tip, and no more
    `stopped`/`budget-exhausted` obituaries than stop and budget events, one per tip
    (R-TERM-7)."""
    pre, step = _steps(e)
    for _, f in e.files:
        if f.kind == PLAIN or f.sender < 0:
            continue
        c = f.sender
        h = pre.agents[c].history.value
        if f.kind == FINAL:
            k = debt_of(h.entries, len(h.entries))
            if k < 0 or not reply(h.entries[: k + 1], c, e.scope)[0] or replies_for(h, k):
                return False
        elif f.kind == DIED:
            if any(r.kind == DIED and r.tip == h.commits for r in h.results):
                return False
        elif sum(1 for r in h.results if parked_kind(r.kind)) >= len(h.parkings) or any(
                parked_kind(r.kind) and r.tip == h.commits for r in h.results):
            return False  # R-TERM-7: one parking obituary per tip
    if step.action is Action.RELEASE_LEASE and step.actor >= 0:
        p = pre.procs[step.actor]
        k = p.history.value.committed_final
        if k >= 0:
            h = pre.agents[p.agent].history.value
            owed, to = reply(h.entries[: k + 1], p.agent, e.scope)
            if owed and to >= 0 and replies_for(h, k) != 1:
                return False
    return True


def mark_left_behind(h: AgentHistory) -> bool:
    """R-SCAN-11: a result carries the tip and the returned mark is not there."""
    return carried_at_tip(h) and not returned_at_tip(h)


def i14_returned_mark(e: Edge) -> bool:
    """Every result an executor publishes moves its author's mark to the tip (in
    the same step, or, with `Scope.split_mark`, before its process releases or
    commits again); the sweep never reports a death whose mark is at the tip or
    whose result carrying the tip is on disk; a mark left behind by a kill is
    repaired by the next holder before the tip moves, and by any sweep that finds
    the agent not held (R-SCAN-11)."""
    pre, step = _steps(e)
    for _, f in e.files:
        if f.kind == PLAIN or f.sender < 0:
            continue
        hp = pre.agents[f.sender].history.value
        if (step.action is not Action.SWEEP and not e.scope.split_mark
                and not returned_at_tip(e.post.agents[f.sender].history.value)):
            return False
        if f.kind == DIED and (returned_at_tip(hp) or carried_at_tip(hp)):
            return False
    for a in e.changed:
        x, y = pre.agents[a].history.value, e.post.agents[a].history.value
        if y.commits != x.commits and mark_left_behind(x):
            return False  # the tip moved past a result whose mark was left behind
    if step.action is Action.RELEASE_LEASE and step.actor >= 0:
        a = pre.procs[step.actor].agent
        if mark_left_behind(e.post.agents[a].history.value):
            return False
    if step.action is Action.SWEEP:
        for a, ag in enumerate(e.post.agents):
            if ag.exists and not held(pre, a) and mark_left_behind(ag.history.value):
                return False
    return True


def i15_sweep_idempotence(e: Edge) -> bool:
    """After the sweep deposits for c, c's mark is at its tip (a second sweep is silent)."""
    _, step = _steps(e)
    if step.action is not Action.SWEEP:
        return True
    return all(returned_at_tip(e.post.agents[f.sender].history.value) for _, f in e.files
               if f.sender >= 0)


def i16_sweep_soundness(e: Edge) -> bool:
    """The sweep deposits exactly the results R-SCAN-4/5/9 owe."""
    pre, step = _steps(e)
    if step.action is not Action.SWEEP:
        return True
    made = {(f.sender, to, f.kind) for to, f in e.files}
    return made == expected_sweep(pre, e.scope)


def i17_existence(e: Edge) -> bool:
    """Every publication goes to an agent that exists."""
    pre, _ = _steps(e)
    return all(pre.agents[to].exists for to, _ in e.files)


_DRAIN_OR_MODEL: Final = frozenset({Action.LIST_INBOX, Action.MOVE_DEPOSIT, Action.MODEL_FINAL,
                             Action.MODEL_TOOL_USE, Action.SETTLE_WINDOW})


def i18_stray_recovery(e: Edge) -> bool:
    """A drain lists, moves, a model step runs and a crashed window is settled only with
    no stray entry left (a delivered one, or an executor's entry whose driver died
    between its rename and its commit: a settlement's commit must never carry it)."""
    pre, step = _steps(e)
    if step.action not in _DRAIN_OR_MODEL:
        return True
    ag = pre.agents[pre.procs[step.actor].agent]
    return not (ag.uncommitted or ag.stray_step)


def i19_recovery(e: Edge) -> bool:
    """With no process left and no launch in flight, crashes included: no lock is
    held, every agent with work due can be picked up (its mail, a parked mark, a
    reported death, a mark behind its tip, or a stray its tip does not hold), every
    reply owed to an agent has landed or is one the sweep re-sends, and no earlier
    owed reply was lost (R-DRAIN-8). That a scan then relaunches the dead is I-20."""
    st = e.post
    if not _at_rest(st):
        return True
    if any(ag.forked_holder for ag in st.agents):
        return False
    for a, ag in enumerate(st.agents):
        if not ag.exists:
            continue
        h = ag.history.value
        par = e.scope.parents[a]
        if h.unsynced:
            continue  # a terminal entry left uncommitted: the next scan revives it (I-20)
        if work_due(h.entries) != "nothing due":
            reported = returned_at_tip(h) and h.results[-1].kind == DIED
            # an entry moved into messages/ its tip does not hold (a driver killed between
            # a rename and its commit): the tip has not moved past the last result, so no
            # `died` is owed (R-SCAN-5), and the next scan revives the agent (R-SCAN-10),
            # whose hop commits the stray first (R-DRAIN-2)
            stray = bool(ag.uncommitted) or ag.stray_step
            if not (ag.inbox or parked_at_tip(h) or reported or par == NOBODY
                    or not returned_at_tip(h) or stray):
                return False
        elif h.entries and is_terminal(h.entries[-1]):
            owed, to = reply(h.entries, a, e.scope)
            landed = replies_for(h, len(h.entries) - 1) > 0
            if owed and to >= 0 and st.agents[to].exists and returned_at_tip(h) and not landed:
                return False
        if lost_replies(h, a, st, e.scope):
            return False
    return True


def lost_replies(h: AgentHistory, a: int, st: State, scope: Scope) -> bool:
    """R-DRAIN-8, R-SCAN-9, counted per debt: some terminal response that owed a reply
    to an agent has no reply published for it, but the newest entry while the next
    scan re-sends it (its mark is not at the tip, or it is an uncommitted stray); or
    some debt was paid more than once."""
    last = len(h.entries) - 1
    for k, x in enumerate(h.entries):
        if not is_terminal(x):
            continue
        n = replies_for(h, k)
        if n > 1:
            return True
        owed, to = reply(h.entries[: k + 1], a, scope)
        if n == 0 and owed and to >= 0 and st.agents[to].exists and not (
                k == last and (h.unsynced or not returned_at_tip(h))):
            return True
    return False


def i20_scan_revives(e: Edge) -> bool:
    """A scan leaves no dead agent with work due without a driver: after the
    sweep, every agent R-SCAN-10 names has a launch pending, and the sweep
    launched no other agent."""
    pre, step = _steps(e)
    if step.action is not Action.SWEEP:
        return True
    owed = expected_revival(pre, e.scope)
    if not _launch_diff(e) <= owed:
        return False
    return all(e.post.agents[a].pending_launches > 0 for a in owed)


def _woken_now(e: Edge) -> list[int]:
    """The agents the step itself wakes: a probe's target (busy or acquired), what it
    launches."""
    step = e.step
    assert step is not None
    out = list(step.launched)
    if step.action is Action.PROBE and step.target >= 0:
        out.append(step.target)
    return out


_DEATHS: Final = frozenset({Action.CRASH, Action.DECLINE, Action.ERROR_EXIT})


def i21_wakeups_made(e: Edge) -> bool:
    """A process that ends other than by a death or an error exit has made every
    wakeup it owed: a probe of every agent it published into, after each deposit
    (R-PROBE-2; for a final response, the recipient's, R-TERM-2 (4); a parked
    obituary wakes nobody, R-TERM-4); after a final
    response, exactly one self-launch (R-TERM-2 (4)); after a release whose re-read
    saw a warranted deposit, a probe of its own agent (R-REL-1). A scan's flush
    visits every inbox."""
    pre, step = _steps(e)
    i = step.actor
    if i < 0 or step.action in _DEATHS or step.action is Action.FLUSH or _proc_after(e) >= 0:
        return True
    p = pre.procs[i]
    h = p.history.value
    woke = [*h.woke, *_woken_now(e)]
    for r in {r for r, k in h.published if not parked_kind(k)}:  # pin 2 (R-TERM-4)
        if sum(1 for x, k in h.published if x == r and not parked_kind(k)) > woke.count(r):
            return False
    if h.committed_final >= 0:
        selfs = [a for a, why in h.launched if why is Funding.SELF_LAUNCH]
        if step.funding is Funding.SELF_LAUNCH:
            selfs += list(step.launched)
        if selfs != [p.agent]:
            return False
    return not (h.released and any(not parked_kind(f.kind) for f in h.reread_saw)
                and p.agent not in woke)


def descends(scope: Scope, c: int, a: int) -> bool:
    """R-STOP-3: c is a, or a's descendant by repeated parent_of."""
    while c != NOBODY:
        if c == a:
            return True
        c = scope.parents[c]
    return False


_CHECK_POINT_STEPS: Final = frozenset({Action.MODEL_FINAL, Action.MODEL_TOOL_USE, Action.ERROR_EXIT,
                                Action.TOOL_RESULT})


def i22_stop_reaches_the_subtree(e: Edge) -> bool:
    """A driver that was alive when the operator ran `lernie stop a`, for a its agent
    or an ancestor of it (R-STOP-1, R-STOP-3), takes no model call and commits no
    tool result after that: its next check point ends the step `stopped`."""
    pre, step = _steps(e)
    if step.actor < 0 or step.action not in _CHECK_POINT_STEPS:
        return True
    p = pre.procs[step.actor]
    if p.role is not Role.DRIVER:
        return True
    return not any(descends(e.scope, p.agent, a) for a in p.history.value.stop_requests)


def _on(*acts: Action) -> Guard:
    kinds = frozenset(acts)
    return lambda act, facts: act in kinds


def _with(bits: int) -> Guard:
    return lambda act, facts: bool(facts & bits)


_LEASE_KEPT: Final = frozenset({Action.RELEASE_LEASE, Action.DECLINE, Action.ERROR_EXIT,
                                 Action.CRASH})
_SWEEP: Final = _on(Action.SWEEP)

INVARIANTS: Final[dict[str, Invariant]] = {
    # I-1's state half reads only what a state's equality compares, and the
    # same for any order of its processes: on an edge into a state already
    # seen it repeats the verdict given when that state was first reached.
    "I-1": Invariant("one executor", Kind.STEP, i1, (
        Part(lambda e: i1_state(e.post), _with(NEW)),
        Part(i1_one_executor, _with(CHANGED)))),
    "I-2": Invariant("lease continuity", Kind.STEP, i2_lease_continuity, (
        Part(i2_lease_continuity,
             lambda act, facts: bool(facts & LEASE) and act not in _LEASE_KEPT),)),
    "I-3": Invariant("writers never drive", Kind.STEP, i3_writers_never_drive, (
        Part(i3_writers_never_drive, _with(PROBE | OTHER_WRITES)),)),
    "I-4": Invariant("transcript numbering", Kind.STEP, i4_transcript_numbering, (
        Part(i4_transcript_numbering, _with(CHANGED)),)),
    "I-5": Invariant("no deposit lost or duplicated", Kind.STATE, i5_no_deposit_lost),
    "I-6": Invariant("delivery order", Kind.STEP, i6_delivery_order, (
        Part(i6_delivery_order, _on(Action.MOVE_DEPOSIT)),)),
    "I-7": Invariant("no lost wakeup", Kind.STATE, i7_no_lost_wakeup),
    "I-8": Invariant("funded launches", Kind.STEP, i8_funded_launches, (
        Part(i8_funded_launches, _with(PENDING_UP | LAUNCHED)),)),
    "I-9": Invariant("pin 2", Kind.STEP, i9_pin_2, (Part(i9_pin_2, _with(PIN)),)),
    "I-10": Invariant("no authority after release", Kind.STEP, i10_no_authority_after_release, (
        Part(i10_no_authority_after_release, _with(RELEASED_ACTS)),)),
    "I-11": Invariant("one address per terminal event", Kind.STEP, i11_one_address, (
        Part(i11_one_address, _with(FILES | REVIVAL)),)),
    "I-12": Invariant("a reply is owed once", Kind.STEP, i12_reply_owed_once, (
        Part(i12_reply_owed_once,
             lambda act, facts: bool(facts & FILES) or act is Action.RELEASE_LEASE),)),
    "I-13": Invariant("exchange termination", Kind.GRAPH, None),
    "I-14": Invariant("returned mark", Kind.STEP, i14_returned_mark, (
        Part(i14_returned_mark, lambda act, facts: bool(facts & CHANGED)
             or act is Action.RELEASE_LEASE or act is Action.SWEEP),)),
    "I-15": Invariant("sweep idempotence", Kind.STEP, i15_sweep_idempotence, (
        Part(i15_sweep_idempotence, _SWEEP),)),
    "I-16": Invariant("sweep soundness", Kind.STEP, i16_sweep_soundness, (
        Part(i16_sweep_soundness, _SWEEP),)),
    "I-17": Invariant("existence before deposit", Kind.STEP, i17_existence, (
        Part(i17_existence, _with(FILES)),)),
    "I-18": Invariant("stray recovery", Kind.STEP, i18_stray_recovery, (
        Part(i18_stray_recovery, _on(*_DRAIN_OR_MODEL)),)),
    "I-19": Invariant("recovery after a crash", Kind.STATE, i19_recovery),
    "I-20": Invariant("a scan revives", Kind.STEP, i20_scan_revives, (
        Part(i20_scan_revives, _SWEEP),)),
    "I-21": Invariant("every owed wakeup made", Kind.STEP, i21_wakeups_made, (
        Part(i21_wakeups_made, lambda act, facts: bool(facts & ENDS) and act not in _DEATHS
             and act is not Action.FLUSH),)),
    "I-22": Invariant("a stop reaches the subtree", Kind.STEP, i22_stop_reaches_the_subtree, (
        Part(i22_stop_reaches_the_subtree, _on(*_CHECK_POINT_STEPS)),)),
}
TITLES: Final = {k: v.title for k, v in INVARIANTS.items()}
_STATE: Final = [(k, v.holds) for k, v in INVARIANTS.items() if v.kind is Kind.STATE and v.holds]
_PARTS: Final = [(k, part) for k, v in INVARIANTS.items() if v.kind is Kind.STEP and v.holds
          for part in (v.parts or (Part(v.holds),))]
# The parts an edge with a given kind of step and facts runs, in table order
# (filled as new combinations appear: a few dozen).
_RUN: Final[dict[tuple[Action, int], list[tuple[str, Predicate]]]] = {}


def edge_facts(e: Edge, new: bool = True) -> int:
    """The facts (bits above) of a step edge; `new`: its post-state is unseen."""
    pre, step = e.pre, e.step
    assert pre is not None and step is not None
    facts = NEW if new else 0
    changed = bool(e.changed)
    if changed:
        facts |= CHANGED | (FILES if e.files else 0)
        xs, ys = pre.agents, e.post.agents
        for a in e.changed:
            if ys[a].pending_launches > xs[a].pending_launches:
                facts |= PENDING_UP
                break
    if step.launched:
        facts |= LAUNCHED
    i = step.actor
    if i >= 0:
        if len(e.post.procs) < len(pre.procs):
            facts |= ENDS
        p = pre.procs[i]
        if p.lease:
            facts |= LEASE
        if p.probe_on != NOBODY:
            facts |= PROBE
        if changed and p.role is not Role.DRIVER:
            facts |= OTHER_WRITES
        if p.history.value.released and (changed or pre.in_flight is not e.post.in_flight):
            facts |= RELEASED_ACTS
        if step.funding is Funding.SELF_LAUNCH:
            facts |= PIN
        elif step.funding is Funding.REVIVAL:
            facts |= PIN | REVIVAL
    return facts


def parts_for(act: Action, facts: int) -> list[tuple[str, Predicate]]:
    """The step predicates (parts) an edge of this kind and with these facts can fail."""
    run = _RUN.get((act, facts))
    if run is None:
        run = _RUN[act, facts] = [(k, part.holds) for k, part in _PARTS
                                  if part.when(act, facts)]
    return run


def quiescent(st: State) -> bool:
    """No process, no pending launch, no lingering lock holder."""
    return not st.procs and not any(a.pending_launches or a.forked_holder for a in st.agents)


def state_violations(st: State, scope: Scope) -> list[str]:
    e = Edge(None, None, st, scope)
    return [k for k, fn in _STATE if not fn(e)]


def step_violations(pre: State, step: Step, post: State, scope: Scope,
                    new: bool = True) -> list[str]:
    """The step invariants the edge violates, in table order. `new=False` (from
    the explorer only): post is equal to a state already reached, whose I-1
    state half was judged then."""
    e = Edge(pre, step, post, scope)
    key = (step.action, edge_facts(e, new))
    run = _RUN.get(key)
    if run is None:
        run = parts_for(*key)
    bad = [k for k, fn in run if not fn(e)]
    return list(dict.fromkeys(bad)) if len(bad) > 1 else bad


# ------------------------------------------------------------- ghost-aware search
# Two states equal in every field but their ghost history are one state to the
# explorer only if the invariants read the same of both histories: `ghost_key` is
# what they read, finitely (the transcript's readings, the marks, the publication
# counts per debt, the revivals at the tip, the deaths that excuse a stranded file,
# and each live process's history), and the explorer keys its table on the state
# with it (`lernie_spec.explore`). Under the reference most of it is a function of
# the state's own fields, so it splits few states; where a mutant makes a field and
# the history disagree, the two are explored apart.


def _transcript_key(entries: tuple[Entry, ...], me: int, scope: Scope) -> tuple[object, ...]:
    k = debt_of(entries, len(entries))
    asks = False
    for e in entries[k + 1:]:
        if e.kind is EntryKind.DELIVERED and e.sender != me and (
                e.deposit_kind == PLAIN or (e.sender >= 0 and scope.parents[e.sender] == me)):
            asks = True
    return (work_due(entries), trailing_open_window(entries), k >= 0, k == len(entries) - 1,
            asks, last_prompter(entries, me), reply(entries, me, scope))


def _debts_key(h: AgentHistory, me: int, scope: Scope) -> tuple[object, ...]:
    """Per debt: the addresses of older owed debts never paid, whether any debt was paid
    twice, and how often the newest was paid."""
    last = debt_of(h.entries, len(h.entries))
    unpaid = []
    twice = False
    paid: dict[int, int] = {}
    for r in h.results:
        if r.kind == FINAL:
            d = debt_of(h.entries, r.entries)
            paid[d] = paid.get(d, 0) + 1
    for k, x in enumerate(h.entries):
        if is_terminal(x):
            n = paid.get(k, 0)
            twice = twice or n > 1
            if n == 0 and k != last:
                owed, to = reply(h.entries[: k + 1], me, scope)
                if owed and to >= 0:
                    unpaid.append(to)
    return (tuple(unpaid), twice, min(paid.get(last, 0), 2))


def _agent_key(h: AgentHistory, me: int, scope: Scope) -> tuple[object, ...]:
    parked_obits = sum(1 for r in h.results if parked_kind(r.kind))
    tk = _transcript_key(h.entries, me, scope)
    return (tk, _debts_key(h, me, scope),
            returned_at_tip(h), carried_at_tip(h), parked_at_tip(h), h.unsynced,
            returned_at_tip(h) and h.results[-1].kind == DIED,
            any(r.kind == DIED and r.tip == h.commits for r in h.results),
            min(len(h.parkings) - parked_obits, 1),
            min(h.revived_at.count(h.commits), 3),
            # I-7 reads these only for a warranted pending file, and for work due
            tuple(stranded_by_death(h, me, s) for s in h.serials),
            tk[0] != "nothing due" and died_holding(h))


def _proc_key(p: Proc, scope: Scope) -> tuple[object, ...]:
    """What the invariants read of a live process's history that its own fields do not
    restate: the wakeups it still owes (I-7, I-21), a stop that reached it (I-22), and
    where it is in its exit (I-9, I-10, I-12, I-21). The drain's listing (I-6) and the
    launches already made (I-8) are its own fields' story: the listing left to move is
    `Proc.listing`, and a launch moves the program counter past it."""
    h = p.history.value
    owed: dict[int, int] = {}
    for r, k in h.published:
        if not parked_kind(k):
            owed[r] = owed.get(r, 0) + 1
    for r in h.woke:
        owed[r] = owed.get(r, 0) - 1
    stopped = p.role is Role.DRIVER and not h.released and any(
        descends(scope, p.agent, a) for a in h.stop_requests)
    return (tuple(sorted((r, n) for r, n in owed.items() if n > 0)), stopped,
            h.committed_final >= 0, h.parked_event, h.released)


class _Tables(NamedTuple):
    """One search's numbering of ghost readings (`ghost_key`)."""

    scope: Scope
    generation: int  # which table a cached number comes from (a new table renumbers)
    known: list[dict[AgentHistory, int]]  # per agent: each history's number, computed once
    table: dict[tuple[object, ...], int]  # each distinct reading's number


K = TypeVar("K")

_MEMO: Final[list[_Tables]] = []  # the tables of the search under way (one at a time)
_GENERATION: Final = [0]


def forget_ghost_keys() -> None:
    """Drop the tables of the last search (the explorer calls it when it returns, so a
    search leaves nothing behind)."""
    _MEMO.clear()


def number_in(table: dict[K, int], key: K) -> int:
    """A small number per distinct key (the next one for a key not seen before): the
    explorer hashes and compares numbers at once where the nested key would be walked."""
    n = table.get(key)
    if n is None:
        n = table[key] = len(table)
    return n


def _tables(scope: Scope) -> _Tables:
    if _MEMO:
        memo = _MEMO[0]
        if memo.scope is scope:
            return memo
    _MEMO.clear()  # one search at a time: the table of the last scope is enough
    _GENERATION[0] += 1
    memo = _Tables(scope, _GENERATION[0], [{} for _ in scope.initial], {})
    _MEMO.append(memo)
    return memo


def ghost_key(st: State, scope: Scope) -> tuple[object, ...]:
    """What the invariants read of st's ghost history (cached on each history)."""
    memo = _tables(scope)
    known, table, gen = memo.known, memo.table, memo.generation
    out: list[object] = []
    for a, ag in enumerate(st.agents):
        g: Ghost[AgentHistory] = ag.history
        k = g.key
        # cached with the table its number comes from (a new table renumbers)
        if k is None or k[0] != a or k[1] != gen:
            # many paths reach equal histories: computed once per history and agent
            h = g.value
            kk = known[a].get(h)
            if kk is None:
                kk = known[a][h] = number_in(table, _agent_key(h, a, scope))
            k = g.key = (a, gen, kk)
        out.append(k[2])
    procs = st.procs
    keys: list[int] = []
    for p in procs:
        gp: Ghost[ProcHistory] = p.history
        kp = gp.key
        if kp is None or kp[0] != p.agent or kp[1] != gen:
            kp = gp.key = (p.agent, gen, number_in(table, _proc_key(p, scope)))
        keys.append(kp[2])
    # Processes equal in every field (`==` ignores the ghost) are interchangeable: their
    # keys are sorted among their places, so the order they were listed in never splits
    # a state (the ghost of each process stays paired with its own fields otherwise).
    n = len(procs)
    if n == 2:
        if procs[0] == procs[1]:
            keys.sort()
    elif n > 2:
        for i in range(n):
            same = [j for j in range(n) if procs[j] == procs[i]]
            if len(same) > 1 and same[0] == i:
                for j, kj in zip(same, sorted(keys[j] for j in same), strict=True):
                    keys[j] = kj
    out.append(tuple(keys))
    return tuple(out)


def ghost_reading(st: State, scope: Scope) -> tuple[object, ...]:
    """`ghost_key` spelled out (not numbered by one search's table): for comparing what
    two different searches reached."""
    keys: list[tuple[object, ...]] = [_proc_key(p, scope) for p in st.procs]
    for i, p in enumerate(st.procs):
        same = [j for j, q in enumerate(st.procs) if q == p]
        if len(same) > 1 and same[0] == i:
            for j, kj in zip(same, sorted(keys[j] for j in same), strict=True):
                keys[j] = kj
    return (tuple(_agent_key(ag.history.value, a, scope) for a, ag in enumerate(st.agents)),
            tuple(keys))
