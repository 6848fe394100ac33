"""The invariants of SPEC.md §16 as predicates over model states and steps.

`state_violations(st, scope)` checks the invariants that are facts about one
state; `step_violations(pre, step, post, scope)` checks those that are facts
about one atomic step (who wrote, who launched, where a result went). I-13
(exchange termination) is a property of the whole graph and lives in
`spec.explore`. Each predicate is written from SPEC.md §16, independently of
the transition functions it judges.
"""

from __future__ import annotations

from lernie_spec.model import (
    CLOSED,
    FINAL,
    NOBODY,
    PARKED,
    PLAIN,
    USER,
    Dep,
    Scope,
    State,
    Step,
)

INVARIANTS: dict[str, str] = {
    "I-1": "one executor",
    "I-2": "lease continuity",
    "I-3": "writers never drive",
    "I-4": "transcript numbering",
    "I-5": "no deposit lost or duplicated",
    "I-6": "delivery order",
    "I-7": "no lost wakeup",
    "I-8": "funded launches",
    "I-9": "pin 2",
    "I-10": "no authority after release",
    "I-11": "one address per terminal event",
    "I-12": "a reply is owed once",
    "I-13": "exchange termination",
    "I-14": "returned mark",
    "I-15": "sweep idempotence",
    "I-16": "sweep soundness",
    "I-17": "existence before deposit",
    "I-18": "stray recovery",
}

# Steps that write an agent's branch, worktree or inbox on its own behalf.
_WRITES = {"R-DRAIN-2", "R-STEP-2", "R-DRAIN-4", "R-TR-3", "R-DEP-6", "R-DEP-2", "R-LOCK-3"}
_LAUNCHES = {"R-LAUNCH-1", "R-TERM-2", "R-SCAN-2", "R-STEP-1"}


def quiescent(st: State) -> bool:
    """No process, no pending launch, no lingering lock holder."""
    return not st.procs and not any(a.launches or a.linger for a in st.agents)


def state_violations(st: State, scope: Scope) -> list[str]:
    bad: list[str] = []
    agents = st.agents
    holders = [int(ag.linger) for ag in agents]
    writing = [0] * len(agents)
    for p in st.procs:
        if p.lease:
            holders[p.agent] += 1
        if p.probe != NOBODY:
            holders[p.probe] += 1
            if not p.pc.endswith(".rel"):
                bad.append("I-3")  # a probe's hold outlived its instant
        if p.pc == "commit":
            writing[p.agent] += 1
            if not p.lease:
                bad.append("I-4")
        # I-18: once a holder is past stray recovery, only its own entry is uncommitted
        if (p.role == "D" and p.lease and p.pc not in ("stray", "")
                and len(agents[p.agent].uncommitted) > (1 if p.pc == "commit" else 0)):
            bad.append("I-18")
    if max(holders) > 1:
        bad.append("I-1")
    if max(writing) > 1:
        bad.append("I-4")
    # I-5: the ghost multiset equals what is pending plus what is in flight
    where = [Dep(a, f.sender, f.kind) for a, ag in enumerate(agents) for f in ag.inbox]
    for ag in agents:
        where.extend(ag.uncommitted)
    if len(where) != len(st.ghost) or sorted(where) != list(st.ghost):
        bad.append("I-5")
    # I-7: a crash-free quiescent state leaves nothing that warrants a launch
    if not st.procs and st.budget.crashes == scope.crashes and quiescent(st):
        for ag in agents:
            if ag.window != CLOSED or any(f.kind not in PARKED for f in ag.inbox):
                bad.append("I-7")
                break
    return bad


def expected_recipient(scope: Scope, st: State, a: int) -> tuple[int, int]:
    """(address, owed) of a final response just committed by a (R-ADDR, R-DEBT)."""
    ag = st.agents[a]
    lp = ag.lp
    addr = NOBODY if lp == USER else (scope.parents[a] if lp == NOBODY else lp)
    return addr, int(ag.owes)


def step_violations(pre: State, step: Step, post: State, scope: Scope) -> list[str]:
    bad: list[str] = []
    i = step.actor
    p = pre.procs[i] if i >= 0 else None
    # the actor after the step (None when the step ended it)
    q = post.procs[i] if p is not None and len(post.procs) >= len(pre.procs) else None
    if p is not None and step.rule in _WRITES and p.released:
        bad.append("I-10")
    if p is not None and step.rule in {"R-DRAIN-2", "R-STEP-2", "R-DRAIN-4", "R-TR-3"} and (
        not p.lease or p.role != "D"
    ):
        bad.append("I-3")
    # launches: who may launch, and pin 2
    launched = [a for a in range(len(pre.agents))
                if post.agents[a].launches > pre.agents[a].launches]
    if launched and step.rule not in _LAUNCHES:
        bad.append("I-8")
    if p is not None and p.epitaph in PARKED and p.pc in ("self", "v.acq", "v.rel"):
        bad.append("I-9")
    if p is not None and p.pc == "self" and p.epitaph != FINAL:
        bad.append("I-8")
    # a terminal event's address (I-11) and the reply debt (I-12)
    if p is not None and q is not None and p.role == "D" and not p.epitaph:
        if q.epitaph == FINAL:
            addr, owed = expected_recipient(scope, post, p.agent)
            if q.recip == p.agent:
                bad.append("I-11")
            elif owed and q.recip != addr:
                bad.append("I-12" if q.recip == NOBODY else "I-11")
            elif not owed and q.recip != NOBODY:
                bad.append("I-12" if q.recip == addr else "I-11")
        elif q.epitaph and q.recip != scope.parents[p.agent]:
            bad.append("I-11")
    if p is not None and p.pc == "v.rel" and p.target != p.recip:
        bad.append("I-11")  # the revival wakes exactly the deposit's recipient
    # I-2: the successor hop still holds the lease, nobody else does
    if p is not None and step.rule == "R-LOCK-3" and (q is None or not q.lease):
        bad.append("I-2")
    # I-6: a drain lists plain mail first, then own-child results, each in mtime order
    if p is not None and q is not None and step.rule == "R-DRAIN-3":
        inbox = pre.agents[p.agent].inbox
        rank = {(f.sender, f.n): (f.kind != PLAIN and f.sender >= 0
                                  and scope.parents[f.sender] == p.agent, k)
                for k, f in enumerate(inbox)}
        listed = q.queue
        if list(listed) != sorted(listed, key=lambda nm: rank[nm]):
            bad.append("I-6")
    # I-17: a writer verb or tool deposits only into an existing agent's inbox
    if p is not None and step.rule == "R-DEP-6" and p.dkind == PLAIN and (
        not pre.agents[p.target].exists
    ):
        bad.append("I-17")
    # the sweep: I-14 returned mark, I-15 idempotence, I-16 soundness
    if p is not None and step.rule == "R-SCAN-1":
        for c, ag in enumerate(pre.agents):
            par = scope.parents[c]
            if par == NOBODY:
                continue
            died = sum(1 for f in post.agents[par].inbox if f.sender == c and f.kind == "died")
            died -= sum(1 for f in pre.agents[par].inbox if f.sender == c and f.kind == "died")
            if died <= 0:
                continue
            if ag.returned:
                bad.append("I-14")
            if any(x.lease and x.agent == c for x in pre.procs) or ag.inbox or not (
                ag.due or ag.window != CLOSED
            ):
                bad.append("I-16")  # not stopped mid-work, or still being driven
            if not post.agents[c].returned:
                bad.append("I-15")
    return bad
