"""The executable model of the lernie agent-inbox protocol (SPEC.md §19).

Theory of operation
-------------------
A `State` is an immutable, hashable snapshot of everything the protocol can
observe: which agents exist, each agent's inbox (pending deposit files in
publication order, i.e. mtime order), an abstract transcript, the returned
mark, pending launches, the live processes with their program counters, and a
ghost multiset of every deposit published and not yet delivered (for I-5).

The transcript is abstracted to the facts every decision reads (R-STEP-3,
R-ADDR-2, R-DEBT-2..4): the last prompter, whether the agent has ever answered,
whether something asking arrived since its newest terminal response, whether
the newest terminal response owed a reply, which side the last wire message is
on, the tool-window status and the delivered-but-uncommitted entries. This
keeps the state space finite, so an endless exchange shows up as a cycle.

`successors(state, profile, scope)` lists every enabled step as
`(Step, State)`. Each step is one atomic action of one process, or one
external input. Every step function below names the rule it models; a
`Profile` switches individual rules off or to a historic spelling (see
`spec.variants`). The model never imports the implementation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

USER = -1  # the operator as a sender / last prompter (R-ID-7)
NOBODY = -2  # no last prompter / no recipient / no parent

PLAIN = "plain"
FINAL = "final-response"
STOPPED = "stopped"
BUDGET = "budget-exhausted"
DIED = "died"
PARKED = (STOPPED, BUDGET)

# window (R-STEP-2/3): no unpaired tool_use, a trailing open window, a buried one
CLOSED, OPEN, BURIED = 0, 1, 2


class Profile(NamedTuple):
    """Which rules a protocol version has (reference = all defaults)."""

    release_rule: bool = True  # R-REL-1 (bl-9c8f)
    exit_self_launch: bool = True  # R-TERM-2 (4) self (bl-5846)
    revival: bool = True  # R-TERM-2 (4) recipient (bl-4a6c)
    reply_debt: bool = True  # R-DEBT-4 (bl-82d8)
    reply_to_parent: bool = False  # pre-bl-a96a addressing
    create_only: bool = True  # R-DEP-6 (D-1); False = rename replaces
    stray_recovery: bool = True  # R-DRAIN-2
    crash_settlement: bool = True  # R-STEP-2 (bl-4187)
    stop_settles_window: bool = True  # R-TERM-1 stopped (bl-b98d)
    stopped_wakes_parent: bool = False  # pin 2 broken for `stopped`
    release_by_close: bool = False  # R-LOCK-2 (bl-7318)
    stop_cascade: bool = True  # R-STOP-1 descendants (bl-3114)


class Scope(NamedTuple):
    """The bounded world explored: agents, inputs, crashes, steps."""

    parents: tuple[int, ...] = (NOBODY, 0)  # agent i's parent; P=0 root, C=1 child
    initial: tuple[bool, ...] = (True, False)  # which agents exist at the start
    messages: int = 2  # operator `lernie message` calls
    advances: int = 1  # operator `lernie advance` runs
    stops: int = 1  # operator `lernie stop` calls
    scans: int = 1  # operator `lernie scan` calls
    crashes: int = 1  # process deaths (crash class)
    tools: int = 1  # model tool steps with no protocol effect
    sends: int = 1  # model `message` / `dispatch` tool calls
    exhaust: int = 1  # budget-exhausted events
    max_procs: int = 3  # live processes at once
    max_seq: int = 3  # deposit numbers (upstream numbering only; beyond: out of scope)
    launch_cap: int = 1  # pending launches per agent (more coalesce)


class File(NamedTuple):
    """A pending deposit `<sender>-<n>.md` of a given kind (R-DEP-1)."""

    sender: int
    n: int
    kind: str


class Dep(NamedTuple):
    """Ghost record of a published deposit (I-5)."""

    recipient: int
    sender: int
    kind: str


class Agent(NamedTuple):
    exists: bool
    inbox: tuple[File, ...] = ()
    lp: int = NOBODY  # last prompter (R-ADDR-2)
    answered: bool = False  # some terminal response exists (R-DEBT-4)
    asks: bool = False  # something asking delivered since the newest terminal
    owes: bool = False  # the newest terminal response's window asked (R-DEBT-2)
    due: bool = False  # last wire message on the user/tool side (R-STEP-3)
    window: int = CLOSED
    uncommitted: tuple[Dep, ...] = ()  # moved into messages/, not committed
    returned: bool = False  # refs/lernie/returned/<id> is at the branch tip (R-DEP-8)
    launches: int = 0  # spawned drivers not yet started (R-LAUNCH-1)
    linger: bool = False  # a forked child still holds the lock (bl-7318 only)


class Proc(NamedTuple):
    role: str  # "W" writer verb, "D" driver, "S" scanner
    agent: int  # driven agent (D) or target (W)
    pc: str
    lease: bool = False  # holds its own agent's executor lock
    probe: int = NOBODY  # agent whose lock a probe holds for an instant
    target: int = NOBODY  # deposit / probe target
    sender: int = NOBODY
    dkind: str = PLAIN  # kind of the deposit being written
    n: int = 0  # number chosen at list time (R-DEP-2)
    queue: tuple[tuple[int, int], ...] = ()  # drain listing: names (R-DRAIN-3)
    epitaph: str = ""  # terminal event of this hop
    recip: int = NOBODY  # its recipient (R-ADDR)
    stop: bool = False  # the stop flag (SIGTERM seen)
    tool: str = ""  # "noop", "message", "dispatch"
    released: bool = False  # past its voluntary release (R-TERM-5)


class Budget(NamedTuple):
    messages: int
    advances: int
    stops: int
    scans: int
    crashes: int
    tools: int
    sends: int
    exhaust: int


class State(NamedTuple):
    agents: tuple[Agent, ...]
    procs: tuple[Proc, ...]
    ghost: tuple[Dep, ...]  # sorted multiset of undelivered deposits
    budget: Budget


class Step(NamedTuple):
    """One edge: the rule id it models, who acted, and what happened."""

    rule: str
    actor: int  # index into the pre-state's procs; -1 for an external input
    text: str
    external: bool = False


Succ = list[tuple[Step, State]]
NAMES = ("P", "C", "S", "G")


def name(i: int) -> str:
    return "user" if i == USER else "-" if i == NOBODY else NAMES[i]


def initial(scope: Scope) -> State:
    agents = tuple(Agent(exists=e) for e in scope.initial)
    b = Budget(scope.messages, scope.advances, scope.stops, scope.scans, scope.crashes,
               scope.tools, scope.sends, scope.exhaust)
    return State(agents, (), (), b)


# ---------------------------------------------------------------- helpers


def parent_of(scope: Scope, a: int) -> int:
    """R-ID-1: the dispatcher, NOBODY for a root (fixed by the scope's tree)."""
    return scope.parents[a] if a >= 0 else NOBODY


def locked(st: State, a: int) -> bool:
    """R-LOCK-1: is agent a's executor lock held by anyone?"""
    if st.agents[a].linger:
        return True
    return any((p.lease and p.agent == a) or p.probe == a for p in st.procs)


def own_child_result(scope: Scope, a: int, f: File) -> bool:
    """R-DEP-10: a result whose sender's parent is a."""
    return f.kind != PLAIN and f.sender >= 0 and scope.parents[f.sender] == a


def warrants(f: File) -> bool:
    """R-REL-2: a deposit warrants a launch unless it is a parked obituary."""
    return f.kind not in PARKED


def _set_agent(st: State, a: int, ag: Agent) -> tuple[Agent, ...]:
    return (*st.agents[:a], ag, *st.agents[a + 1:])


def _put(st: State, i: int, p: Proc | None, agents: tuple[Agent, ...] | None = None,
         ghost: tuple[Dep, ...] | None = None, budget: Budget | None = None) -> State:
    """Replace process i (remove it when p is None or has finished)."""
    keep = p is not None and p.pc != "done"
    procs = st.procs[:i] + ((p,) if keep and p is not None else ()) + st.procs[i + 1 :]
    return State(st.agents if agents is None else agents, procs,
                 st.ghost if ghost is None else ghost, st.budget if budget is None else budget)


def _launch(st: State, scope: Scope, a: int) -> tuple[Agent, ...]:
    ag = st.agents[a]
    return _set_agent(st, a, ag._replace(launches=min(scope.launch_cap, ag.launches + 1)))


def _ghost_add(ghost: tuple[Dep, ...], d: Dep) -> tuple[Dep, ...]:
    return tuple(sorted((*ghost, d)))


def _ghost_remove(ghost: tuple[Dep, ...], d: Dep) -> tuple[Dep, ...]:
    g = list(ghost)
    g.remove(d)
    return tuple(g)


# ------------------------------------------------------- transcript effects


def recipient_final(prof: Profile, scope: Scope, ag: Agent, a: int) -> int:
    """R-ADDR-3 with R-DEBT-4: where a final response is deposited."""
    if prof.reply_debt and not ag.owes:
        return NOBODY
    if prof.reply_to_parent:
        return parent_of(scope, a)
    if ag.lp == USER:
        return NOBODY
    return parent_of(scope, a) if ag.lp == NOBODY else ag.lp


def _delivered(scope: Scope, ag: Agent, a: int, d: Dep) -> Agent:
    """The abstract transcript after one delivered `.md` entry (R-DRAIN-4):
    one reading (R-DEBT-1) updates the last prompter (R-ADDR-2) and whether
    the entry asks for a reply (R-DEBT-3)."""
    plain = d.kind == PLAIN
    asks = d.sender != a and (plain or (d.sender >= 0 and scope.parents[d.sender] == a))
    return ag._replace(
        due=True,
        window=BURIED if ag.window == OPEN else ag.window,
        lp=d.sender if plain and d.sender != a else ag.lp,
        asks=ag.asks or asks,
        uncommitted=(*ag.uncommitted, d),
    )


def _terminal(ag: Agent) -> Agent:
    """A committed terminal response closes the debt window (R-DEBT-2)."""
    return ag._replace(due=False, owes=(not ag.answered) or ag.asks, answered=True,
                       asks=False, returned=False)


# ------------------------------------------------------------ transitions
# Each returns the successors of process i (or of an external input).


def ext_message(st: State, prof: Profile, scope: Scope) -> Succ:
    """R-PROBE-4 `lernie message` by the operator (sender `user`, R-ID-7):
    the existence guard (R-ID-4, I-17) admits only existing agents; the
    writer lists the inbox and takes its number (R-DEP-2) as its first step.
    Roots exist from the start, so `lernie prompt` (R-PROBE-5) is this too."""
    out: Succ = []
    b = st.budget
    if b.messages == 0 or len(st.procs) >= scope.max_procs:
        return out
    for a, ag in enumerate(st.agents):
        n = _number(prof, ag, USER)
        if ag.exists and n <= scope.max_seq:
            w = Proc("W", a, "w.pub", target=a, sender=USER, n=n)
            s = st._replace(procs=(*st.procs, w), budget=b._replace(messages=b.messages - 1))
            out.append((Step("R-PROBE-4", -1, f"user: lernie message {name(a)}", True), s))
    return out


def _number(prof: Profile, ag: Agent, sender: int) -> int:
    """R-DEP-2: one more than the sender's largest pending number. With
    create-only publication (R-DEP-6) a number carries nothing but uniqueness,
    so the model lets the publish step take the smallest free one instead
    (keeps the state space finite); the listed number is then 0."""
    if prof.create_only:
        return 0
    return 1 + max((f.n for f in ag.inbox if f.sender == sender), default=0)


def _free(ag: Agent, sender: int) -> int:
    taken = {f.n for f in ag.inbox if f.sender == sender}
    n = 1
    while n in taken:
        n += 1
    return n


def deposit_list(st: State, prof: Profile, scope: Scope, i: int, nxt: str) -> Succ:
    """R-DEP-2 list the inbox and take the next number (temp write folded in).
    For a `dispatch` tool (R-PROBE-6) this step first forks the child's branch
    with an empty transcript (R-WS-3, R-WS-4)."""
    p = st.procs[i]
    ags = st.agents
    if p.tool == "dispatch" and not ags[p.target].exists:
        # R-PROBE-6 / R-WS-4: fork the child's branch with an empty transcript
        ags = _set_agent(st, p.target, Agent(exists=True))
    q = p._replace(pc=nxt, n=_number(prof, ags[p.target], p.sender))
    if q.n > scope.max_seq:
        return []
    text = f"list {name(p.target)} inbox" + (f": n={q.n}" if q.n else "")
    return [(Step("R-DEP-2", i, text), _put(st, i, q, agents=ags))]


def deposit_publish(st: State, prof: Profile, scope: Scope, i: int, nxt: str) -> Succ:
    """R-DEP-1/R-DEP-6 publish under `<sender>-<n>.md`: create-only (a taken
    name takes the next number) or, upstream, a rename that replaces. A result
    moves the returned mark to the tip with it (R-DEP-8). Every writer's program
    publishes before it probes (R-PROBE-2)."""
    p = st.procs[i]
    ag = st.agents[p.target]
    n = p.n
    inbox = ag.inbox
    note = ""
    if prof.create_only:
        n = _free(ag, p.sender)
    elif any((f.sender, f.n) == (p.sender, n) for f in inbox):
        inbox = tuple(f for f in inbox if (f.sender, f.n) != (p.sender, n))
        note = " REPLACING the file there"
    f = File(p.sender, n, p.dkind)
    ag2 = ag._replace(inbox=(*inbox, f))
    agents = _set_agent(st, p.target, ag2)
    if p.dkind != PLAIN and p.sender >= 0:  # R-DEP-8 returned mark
        s0 = p.sender
        agents = (*agents[:s0], agents[s0]._replace(returned=True), *agents[s0 + 1 :])
    ghost = _ghost_add(st.ghost, Dep(p.target, p.sender, p.dkind))
    kind = "" if p.dkind == PLAIN else f" [{p.dkind}]"
    text = f"publish {name(p.target)}/{name(p.sender)}-{n:03d}{kind}{note}"
    return [(Step("R-DEP-6", i, text), _put(st, i, p._replace(pc=nxt, n=0, dkind=PLAIN),
                                             agents=agents, ghost=ghost))]


def probe_acquire(st: State, prof: Profile, scope: Scope, i: int, nxt: str, busy: str) -> Succ:
    """R-PROBE-1 try-acquire the target's lock; busy means someone drives it."""
    p = st.procs[i]
    if locked(st, p.target):
        return [(Step("R-PROBE-1", i, f"probe {name(p.target)}: BUSY"),
                 _put(st, i, p._replace(pc=busy)))]
    return [(Step("R-PROBE-1", i, f"probe {name(p.target)}: acquired"),
             _put(st, i, p._replace(pc=nxt, probe=p.target)))]


def probe_release_launch(st: State, prof: Profile, scope: Scope, i: int, nxt: str) -> Succ:
    """R-LAUNCH-1 (with R-PROBE-1): release the probe's lock first, then launch;
    the writer held the lock for this one step only (R-PROBE-3)."""
    p = st.procs[i]
    s = _put(st, i, p._replace(pc=nxt, probe=NOBODY), agents=_launch(st, scope, p.target))
    return [(Step("R-LAUNCH-1", i, f"release {name(p.target)}, launch driver"), s)]


def ext_advance(st: State, prof: Profile, scope: Scope) -> Succ:
    """R-STEP-1 an operator's hand-run `lernie advance` (I-8: operator)."""
    b = st.budget
    if b.advances == 0:
        return []
    out: Succ = []
    s = st._replace(budget=b._replace(advances=b.advances - 1))
    for a, ag in enumerate(st.agents):
        if ag.exists and len(st.procs) < scope.max_procs:
            for step, s2 in _start(s, prof, a, "operator: lernie advance"):
                out.append((step._replace(external=True), s2))
    return out


def start_driver(st: State, prof: Profile, scope: Scope, a: int) -> Succ:
    """R-STEP-1 a launched driver starts: try-acquire the lease or exit 0."""
    ag = st.agents[a]
    s = st._replace(agents=_set_agent(st, a, ag._replace(launches=ag.launches - 1)))
    return _start(s, prof, a, "launched driver")


def _start(st: State, prof: Profile, a: int, who: str) -> Succ:
    """R-STEP-1 take the lease with a try-acquire, or exit 0 as already driven."""
    if locked(st, a):
        return [(Step("R-STEP-1", -1, f"{who} {name(a)}: busy, exit 0"), st)]
    d = Proc("D", a, "", lease=True)
    s = st._replace(procs=(*st.procs, d))
    i = len(s.procs) - 1
    return [(Step("R-STEP-1", -1, f"{who} {name(a)}: lease taken"),
             _put(s, i, _hop_start(s, prof, d)))]


def _hop_start(st: State, prof: Profile, p: Proc) -> Proc:
    """R-DRAIN-2 then R-STEP-2 then R-DRAIN-3: where a hop begins its work."""
    ag = st.agents[p.agent]
    if ag.uncommitted and prof.stray_recovery:
        return p._replace(pc="stray")
    if ag.window == OPEN and prof.crash_settlement:
        return p._replace(pc="settle")
    return p._replace(pc="list")


def recover_stray(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-DRAIN-2 commit uncommitted `messages/` entries before any move."""
    p = st.procs[i]
    ag = st.agents[p.agent]
    ghost = st.ghost
    for d in ag.uncommitted:
        ghost = _ghost_remove(ghost, d)
    ag2 = ag._replace(uncommitted=(), returned=False)
    s = st._replace(agents=_set_agent(st, p.agent, ag2), ghost=ghost)
    return [(Step("R-DRAIN-2", i, "commit delivered stray"), _put(s, i, _hop_start(s, prof, p)))]


def settle_window(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-STEP-2 settle a trailing orphan tool window with is_error results."""
    p = st.procs[i]
    ag = st.agents[p.agent]._replace(window=CLOSED, due=True, returned=False)
    s = st._replace(agents=_set_agent(st, p.agent, ag))
    return [(Step("R-STEP-2", i, "settle orphan tool_use"), _put(s, i, p._replace(pc="list")))]


def drain_list(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-DRAIN-3 list the pending deposits once (R-DEP-11), at the hop's step
    boundary only (R-DRAIN-1); plain mail first, then own-child results
    (R-DRAIN-4), each in mtime order."""
    p = st.procs[i]
    a = p.agent
    inbox = st.agents[a].inbox
    plain = [(f.sender, f.n) for f in inbox if not own_child_result(scope, a, f)]
    res = [(f.sender, f.n) for f in inbox if own_child_result(scope, a, f)]
    q = tuple(plain + res)
    if not q:
        return [(Step("R-DRAIN-3", i, "list inbox: empty"), _put(st, i, _warrant(st, prof, p)))]
    names = ", ".join(f"{name(s)}-{n:03d}" for s, n in q)
    return [(Step("R-DRAIN-3", i, f"list inbox: {names}"),
             _put(st, i, p._replace(pc="move", queue=q)))]


def drain_move(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-DRAIN-4 move the next listed file into `messages/` (by name)."""
    p = st.procs[i]
    a = p.agent
    ag = st.agents[a]
    (snd, n), rest = p.queue[0], p.queue[1:]
    f = next((f for f in ag.inbox if (f.sender, f.n) == (snd, n)), None)
    if f is None:  # vanished: nothing to move
        q = p._replace(queue=rest)
        q = q._replace(pc="move") if rest else _warrant(st, prof, q)
        return [(Step("R-DRAIN-4", i, f"{name(snd)}-{n:03d} gone"), _put(st, i, q))]
    d = Dep(a, f.sender, f.kind)
    ag2 = _delivered(scope, ag._replace(inbox=tuple(x for x in ag.inbox if x != f)), a, d)
    s = st._replace(agents=_set_agent(st, a, ag2))
    kind = "" if f.kind == PLAIN else f" [{f.kind}]"
    return [(Step("R-DRAIN-4", i, f"move {name(snd)}-{n:03d}{kind} into messages/"),
             _put(s, i, p._replace(pc="commit", queue=rest)))]


def commit_entry(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-TR-3 commit the entry just moved, on its own."""
    p = st.procs[i]
    ag = st.agents[p.agent]
    d = ag.uncommitted[-1]
    ag2 = ag._replace(uncommitted=ag.uncommitted[:-1], returned=False)
    s = st._replace(agents=_set_agent(st, p.agent, ag2), ghost=_ghost_remove(st.ghost, d))
    q = p._replace(pc="move") if p.queue else _warrant(s, prof, p)
    return [(Step("R-TR-3", i, f"commit {name(d.sender)} entry"), _put(s, i, q))]


def _warrant(st: State, prof: Profile, p: Proc) -> Proc:
    """R-STEP-3 (decided from the transcript alone, folded into the step that
    ends the drain): Unpaired declines, ModelCallDue steps, NothingDue idles."""
    ag = st.agents[p.agent]
    if ag.window == BURIED or (ag.window == OPEN and not prof.crash_settlement):
        return p._replace(pc="decline")
    return p._replace(pc="step" if ag.due else "release")


def decline(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-STEP-5 an error exit: release by LOCK_UN, no release rule, no launch."""
    st.procs[i]
    return [(Step("R-STEP-5", i, "Unpaired tool_use: declined, exit 1"), _put(st, i, None))]


def model_step(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-STEP-4 stop check, budget check, one model call committed as one entry;
    the call's outcome is a nondeterministic choice (R-STEP-7 tools)."""
    p = st.procs[i]
    a = p.agent
    ag = st.agents[a]
    b = st.budget
    out: Succ = []
    if p.stop:
        return _terminate(st, prof, scope, i, STOPPED, "stop flag seen before the call")
    if b.exhaust:
        s = st._replace(budget=b._replace(exhaust=b.exhaust - 1))
        out += _terminate(s, prof, scope, i, BUDGET, "budget check: exhausted")
    # terminal response (text or empty: no decision reads the body)
    ag2 = _terminal(ag)
    s = st._replace(agents=_set_agent(st, a, ag2))
    r = recipient_final(prof, scope, ag2, a)
    q = p._replace(epitaph=FINAL, recip=r, target=r, sender=a, dkind=FINAL,
                   pc="x.list" if r != NOBODY else "release")
    out.append((Step("R-TERM-1", i, f"model: terminal response (reply to {name(r)})"),
                _put(s, i, q)))
    tw = st.agents[a]._replace(due=False, window=OPEN, returned=False)
    if b.tools:
        s = st._replace(agents=_set_agent(st, a, tw), budget=b._replace(tools=b.tools - 1))
        out.append((Step("R-STEP-7", i, "model: tool_use (no protocol effect)"),
                    _put(s, i, p._replace(pc="t.result", tool="noop"))))
    if b.sends:
        s = st._replace(agents=_set_agent(st, a, tw), budget=b._replace(sends=b.sends - 1))
        for t, tag in enumerate(st.agents):
            if tag.exists and t != a:
                q = p._replace(pc="t.list", tool="message", target=t, sender=a, dkind=PLAIN)
                out.append((Step("R-STEP-7", i, f"model: tool_use message {name(t)}"),
                            _put(s, i, q)))
        for c, par in enumerate(scope.parents):
            if par == a and not st.agents[c].exists:
                q = p._replace(pc="t.list", tool="dispatch", target=c, sender=a, dkind=PLAIN)
                out.append((Step("R-PROBE-6", i, f"model: tool_use dispatch {name(c)}"),
                            _put(s, i, q)))
                break
    return out


def tool_result(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-LOCK-3 commit the tool result, stop check, then exec the successor hop
    with the lease kept (the baton; adoption R-LOCK-4 is the same process).
    A stop flag seen here ends the step `stopped` (R-TERM-6, R-STOP-6)."""
    p = st.procs[i]
    a = p.agent
    if p.stop and not prof.stop_settles_window:
        return _terminate(st, prof, scope, i, STOPPED, "stop flag in the tool window (left open)")
    ag = st.agents[a]._replace(window=CLOSED, due=True, returned=False)
    s = st._replace(agents=_set_agent(st, a, ag))
    q = p._replace(tool="", target=NOBODY, sender=NOBODY, n=0)
    if p.stop:
        return _terminate(_put(s, i, q), prof, scope, i, STOPPED, "tool result; stop flag seen")
    return [(Step("R-LOCK-3", i, "commit tool result; exec successor hop (lease kept)"),
             _put(s, i, _hop_start(s, prof, q)))]


def _terminate(st: State, prof: Profile, scope: Scope, i: int, ep: str, why: str) -> Succ:
    """R-TERM-1 a stopped / budget-exhausted event: obituary to the parent
    (R-ADDR-1)."""
    p = st.procs[i]
    r = parent_of(scope, p.agent)  # R-ADDR-1
    s = st
    q = p._replace(epitaph=ep, recip=r, pc="x.list" if r != NOBODY else "release",
                   target=r, sender=p.agent, dkind=ep, tool="")
    return [(Step("R-TERM-1", i, f"{why}: {ep} (obituary to {name(r)})"), _put(s, i, q))]


def release(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-LOCK-2 release the lease by LOCK_UN (bl-7318 variant: by close, a
    forked child may keep the lock a while). After it the process has no
    authority (R-TERM-5): only re-read, probes and launches remain."""
    p = st.procs[i]
    q = p._replace(lease=False, released=True,
                   pc="reread" if prof.release_rule else _after_reread(prof, p))
    out: Succ = [(Step("R-LOCK-2", i, "release lease"), _put(st, i, q))]
    if prof.release_by_close:
        ag = st.agents[p.agent]._replace(linger=True)
        s = _put(st, i, q, agents=_set_agent(st, p.agent, ag))
        out.append((Step("R-LOCK-2", i, "close lease fd; a forked child keeps the lock"), s))
    return out


def linger_ends(st: State, prof: Profile, scope: Scope, a: int) -> Succ:
    """R-LOCK-2 (bl-7318 only) the forked child execs; its copy of the fd closes."""
    s = st._replace(agents=_set_agent(st, a, st.agents[a]._replace(linger=False)))
    return [(Step("R-LOCK-2", -1, f"forked child execs: {name(a)} lock freed"), s)]


def reread(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-REL-1 after releasing, re-read the inbox; an unseen warranted deposit
    (R-REL-2) means the releaser completes the writer's launch. The seen-set
    (R-DRAIN-5) is what the hop listed and left: the queue, empty by now."""
    p = st.procs[i]
    seen = set(p.queue)
    owed = [f for f in st.agents[p.agent].inbox if (f.sender, f.n) not in seen and warrants(f)]
    if owed:
        q = p._replace(pc="r.acq", target=p.agent)
        return [(Step("R-REL-1", i, "re-read inbox: unseen mail, probe self"), _put(st, i, q))]
    return [(Step("R-REL-1", i, "re-read inbox: nothing unseen"),
             _put(st, i, p._replace(pc=_after_reread(prof, p))))]


def rule_probe(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-REL-1 the release rule's launch goes through the writer's probe."""
    return probe_acquire(st, prof, scope, i, "r.rel", _after_reread(prof, st.procs[i]))


def rule_launch(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-REL-1 (R-LAUNCH-1): the release rule's probe releases, then launches."""
    return probe_release_launch(st, prof, scope, i, _after_reread(prof, st.procs[i]))


def _after_reread(prof: Profile, p: Proc) -> str:
    """R-TERM-3/R-TERM-4 pins 1 and 2: only a final response launches a driver
    at itself and then its recipient (R-TERM-2 (4)); nothing else does."""
    wake = p.epitaph == FINAL or (p.epitaph == STOPPED and prof.stopped_wakes_parent)
    if not wake:
        return "done"
    if p.epitaph == FINAL and prof.exit_self_launch:
        return "self"
    return "v.acq" if p.recip != NOBODY and prof.revival else "done"


def self_launch(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-TERM-2 (4) after a final response: launch a driver at itself, no probe."""
    p = st.procs[i]
    nxt = "v.acq" if p.recip != NOBODY and prof.revival else "done"
    s = st._replace(agents=_launch(st, scope, p.agent))
    return [(Step("R-TERM-2", i, f"launch driver at {name(p.agent)} (self)"),
             _put(s, i, p._replace(pc=nxt, target=p.recip)))]


def revive(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-ADDR-3 the revival probe targets the deposit's recipient (one address)."""
    p = st.procs[i]._replace(target=st.procs[i].recip)
    return probe_acquire(_put(st, i, p), prof, scope, i, "v.rel", "done")


def stop_agent(st: State, prof: Profile, scope: Scope) -> Succ:
    """R-STOP-1 `lernie stop`: set the stop flag of the lock holder of the agent
    and (cascade, R-STOP-3) of each descendant's holder."""
    b = st.budget
    if b.stops == 0:
        return []
    out: Succ = []
    for a, ag in enumerate(st.agents):
        if not ag.exists:
            continue
        targets = {a}
        if prof.stop_cascade:
            targets |= {c for c in range(len(st.agents)) if _descends(scope, c, a)}
        hit = [j for j, p in enumerate(st.procs)
               if p.role == "D" and p.lease and p.agent in targets and not p.stop]
        # The flag is read only at check points, so setting it just before one
        # is equivalent to setting it any earlier (a sound reduction).
        if not any(st.procs[j].pc in ("step", "t.result") for j in hit):
            continue
        procs = tuple(p._replace(stop=True) if j in hit else p for j, p in enumerate(st.procs))
        s = st._replace(procs=procs, budget=b._replace(stops=b.stops - 1))
        out.append((Step("R-STOP-1", -1, f"operator: lernie stop {name(a)}", True), s))
    return out


def _descends(scope: Scope, c: int, a: int) -> bool:
    p = scope.parents[c]
    while p != NOBODY:
        if p == a:
            return True
        p = scope.parents[p]
    return False


def ext_scan(st: State, prof: Profile, scope: Scope) -> Succ:
    """R-SCAN-1 `lernie scan` starts (the sweep, then the flush)."""
    b = st.budget
    if b.scans == 0 or len(st.procs) >= scope.max_procs:
        return []
    s = st._replace(procs=(*st.procs, Proc("S", NOBODY, "s.sweep")),
                    budget=b._replace(scans=b.scans - 1))
    return [(Step("R-SCAN-1", -1, "operator: lernie scan", True), s)]


def sweep(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-SCAN-1/R-SCAN-4/R-SCAN-5 for every agent not driven that died mid-work
    (no pending mail; work due or a tool window open) whose parent is registered
    and whose returned mark is not at its tip: deposit `died` there on its
    behalf, moving the mark (one atomic pass; R-SCAN-6 holds each lock)."""
    agents = st.agents
    ghost = st.ghost
    swept = []
    for c, ag in enumerate(st.agents):
        par = scope.parents[c]
        if not ag.exists or locked(st, c) or par == NOBODY or not agents[par].exists:
            continue
        if ag.returned or ag.inbox or not (ag.due or ag.window != CLOSED):
            continue
        pa = agents[par]
        f = File(c, _free(pa, c), DIED)
        agents = (*agents[:par], pa._replace(inbox=(*pa.inbox, f)), *agents[par + 1:])
        agents = (*agents[:c], agents[c]._replace(returned=True), *agents[c + 1:])
        ghost = _ghost_add(ghost, Dep(par, c, DIED))
        swept.append(name(c))
    text = f"sweep: died for {', '.join(swept)}" if swept else "sweep: nothing"
    s = _put(st, i, st.procs[i]._replace(pc="s.flush"), agents=agents, ghost=ghost)
    return [(Step("R-SCAN-1", i, text), s)]


def flush(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-SCAN-2 launch every registered agent with pending mail and a free lock."""
    s = st
    hit = []
    for a, ag in enumerate(st.agents):
        if ag.exists and ag.inbox and not locked(st, a):
            s = s._replace(agents=_launch(s, scope, a))
            hit.append(name(a))
    text = f"flush: launch {', '.join(hit)}" if hit else "flush: nothing"
    return [(Step("R-SCAN-2", i, text), _put(s, i, None))]


def crash(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """Crash class (R-STEP-5, digest §20.3): the process dies at this point;
    the kernel drops its locks; nothing else happens."""
    b = st.budget
    s = _put(st, i, None, budget=b._replace(crashes=b.crashes - 1))
    return [(Step("CRASH", i, "CRASH"), s)]


# ---------------------------------------------------------------- dispatch

_Fn = Callable[[State, Profile, Scope, int], Succ]


def _sub(fn: Callable[..., Succ], *args: str) -> _Fn:
    return lambda st, prof, scope, i: fn(st, prof, scope, i, *args)


PC: dict[str, _Fn] = {
    "w.pub": _sub(deposit_publish, "w.acq"),
    "w.acq": _sub(probe_acquire, "w.rel", "done"),
    "w.rel": _sub(probe_release_launch, "done"),
    "stray": recover_stray,
    "settle": settle_window,
    "list": drain_list,
    "move": drain_move,
    "commit": commit_entry,
    "decline": decline,
    "step": model_step,
    "t.list": _sub(deposit_list, "t.pub"),
    "t.pub": _sub(deposit_publish, "t.acq"),
    "t.acq": _sub(probe_acquire, "t.rel", "t.result"),
    "t.rel": _sub(probe_release_launch, "t.result"),
    "t.result": tool_result,
    "x.list": _sub(deposit_list, "x.pub"),
    "x.pub": _sub(deposit_publish, "release"),
    "release": release,
    "reread": reread,
    "r.acq": rule_probe,
    "r.rel": rule_launch,
    "self": self_launch,
    "v.acq": revive,
    "v.rel": _sub(probe_release_launch, "done"),
    "s.sweep": sweep,
    "s.flush": flush,
}


def successors(st: State, prof: Profile, scope: Scope) -> Succ:
    """Every enabled step from st."""
    out: Succ = []
    for i, p in enumerate(st.procs):
        out += PC[p.pc](st, prof, scope, i)
        if st.budget.crashes:
            out += crash(st, prof, scope, i)
    room = len(st.procs) < scope.max_procs
    for a, ag in enumerate(st.agents):
        if ag.launches and room:
            out += start_driver(st, prof, scope, a)
        if ag.linger:
            out += linger_ends(st, prof, scope, a)
    out += ext_message(st, prof, scope)
    out += ext_advance(st, prof, scope)
    out += stop_agent(st, prof, scope)
    out += ext_scan(st, prof, scope)
    return out


# ------------------------------------------------- rules <-> transitions
# Every rule id of SPEC.md is either modelled by exactly one function here
# (a transition, or the decision helper a transition folds in) or listed,
# with the reason, in NOT_MODELLED. tests/model/test_rules.py enforces both.

RULES: dict[str, Callable[..., object]] = {
    "R-ID-1": parent_of,
    "R-ID-4": ext_message,  # only existing agents are messaged (I-17)
    "R-ID-7": ext_message,
    "R-WS-3": deposit_list,  # dispatch forks the child's branch
    "R-WS-4": deposit_list,
    "R-TR-3": commit_entry,
    "R-DEP-1": deposit_publish,
    "R-DEP-2": _number,
    "R-DEP-6": deposit_publish,
    "R-DEP-8": deposit_publish,
    "R-DEP-10": own_child_result,
    "R-DEP-11": drain_list,
    "R-LOCK-1": locked,
    "R-LOCK-2": release,
    "R-LOCK-3": tool_result,
    "R-LOCK-4": tool_result,
    "R-LAUNCH-1": probe_release_launch,
    "R-PROBE-1": probe_acquire,
    "R-PROBE-2": deposit_publish,  # every writer's pc runs publish before probe
    "R-PROBE-3": probe_release_launch,
    "R-PROBE-4": ext_message,
    "R-PROBE-5": ext_message,  # roots pre-exist; `prompt` is then a message
    "R-PROBE-6": deposit_list,
    "R-DRAIN-1": drain_list,
    "R-DRAIN-2": recover_stray,
    "R-DRAIN-3": drain_list,
    "R-DRAIN-4": drain_move,
    "R-DRAIN-5": reread,
    "R-STEP-1": start_driver,
    "R-STEP-2": settle_window,
    "R-STEP-3": _warrant,
    "R-STEP-4": model_step,
    "R-STEP-5": decline,
    "R-STEP-7": model_step,
    "R-TERM-1": _terminate,
    "R-TERM-2": self_launch,
    "R-TERM-3": _after_reread,
    "R-TERM-4": _after_reread,
    "R-TERM-5": release,
    "R-TERM-6": tool_result,
    "R-REL-1": reread,
    "R-REL-2": warrants,
    "R-ADDR-1": _terminate,
    "R-ADDR-2": _delivered,
    "R-ADDR-3": recipient_final,
    "R-DEBT-1": _delivered,
    "R-DEBT-2": _terminal,
    "R-DEBT-3": _delivered,
    "R-DEBT-4": recipient_final,
    "R-SCAN-1": sweep,
    "R-SCAN-2": flush,
    "R-SCAN-4": sweep,
    "R-SCAN-5": sweep,
    "R-SCAN-6": sweep,
    "R-STOP-1": stop_agent,
    "R-STOP-3": stop_agent,
    "R-STOP-6": tool_result,
}

NOT_MODELLED: dict[str, str] = {
    "R-ID-2": "depth feeds budgets only; budget exhaustion is a bounded choice",
    "R-ID-3": "ids are abstract indices: no string to guard",
    "R-ID-5": "ids are abstract indices: minting has no race",
    "R-ID-6": "name resolution happens before any protocol step",
    "R-ID-8": "display names decide nothing in the protocol",
    "R-WS-1": "layout: the model starts from a created workspace",
    "R-WS-2": "workspace guard: a string/path check",
    "R-WS-5": "ref names: the returned mark is a field",
    "R-WS-6": "git invocation discipline",
    "R-WS-7": "path containment",
    "R-TR-1": "entry names: the transcript is abstracted (§19)",
    "R-TR-2": "entry numbers: one writer (I-1) makes max + 1 a local matter",
    "R-TR-4": "entry JSON bytes",
    "R-TR-5": "wire history assembly for the model adapter",
    "R-DEP-3": "number parsing",
    "R-DEP-4": "deposit bytes",
    "R-DEP-5": "result bytes",
    "R-DEP-7": "durability: the model has no power loss",
    "R-DEP-9": "name and frontmatter parsing; a deposit's kind is a field",
    "R-LAUNCH-2": "process spawning details",
    "R-DRAIN-6": "worktrees are never removed in the model",
    "R-DRAIN-7": "undecodable bytes: content is abstract",
    "R-STEP-6": "model adapters: the model call is a nondeterministic choice",
    "R-SCAN-3": "report format",
    "R-SCAN-7": "error texts",
    "R-SCAN-8": "documented residuals, not behaviour",
    "R-SCAN-9": "re-sending a reply lost to a crash between commit and deposit: not yet modelled",
    "R-STOP-2": "holder discovery via /proc: the model flags the holder directly",
    "R-STOP-4": "signal delivery: the model sets the holder's flag",
    "R-STOP-5": "SIGKILL deadline: a kill is a crash",
    "R-STATUS-1": "read-only report",
    "R-STATUS-2": "read-only report",
    "R-STATUS-3": "read-only report",
    "R-LOG-1": "read-only report",
    "R-LOG-2": "`--wait` polling: a client of quiescence, not a protocol step",
    "R-CLI-1": "CLI format",
    "R-CLI-2": "CLI format",
    "R-CLI-3": "CLI format",
    "R-CLI-4": "CLI format",
    "R-CLI-5": "CLI performance",
    "R-CLI-6": "CLI argument handling",
    "R-CLI-7": "CLI content sources (stdin, --file); the deposit it makes is R-DEP-6",
}
