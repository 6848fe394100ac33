"""Exhaustive breadth-first exploration of the model, with liveness.

`explore(profile, scope)` visits every state reachable from the scope's initial
state, hashing states to visit each once. Breadth-first order means the first
path found to a violating state (or step) is a shortest one. Safety invariants
are checked on every new state and every step (`spec.properties`).

Symmetry (SPEC.md §19): processes are interchangeable, so a state is stored
in a canonical form with its processes sorted (`canonical`). Every step
predicate is checked on the step as taken, before the post-state is made
canonical; a trace is re-derived step by step from the initial state as a
concrete path (`_concrete`), so every step's actor indexes the state the trace
shows before it. `symmetry=False` explores without the reduction.

Liveness (I-13 exchange termination): the steps that are not external inputs
form a finite graph; a run in which external inputs have stopped and that never
reaches quiescence must, in a finite graph, go round a cycle of internal steps.
After the search, Tarjan's algorithm finds the strongly connected components
of that graph; any component with a cycle is a violation, reported as a lasso:
the shortest path to the shallowest state on a cycle, then the shortest cycle
back to it.
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable
from typing import Final, NamedTuple

from lernie_spec.model import Pc, Proc, Profile, Role, Scope, State, Step, initial, successors
from lernie_spec.properties import (
    forget_ghost_keys,
    ghost_key,
    number_in,
    state_violations,
    step_violations,
)

Trace = list[tuple[Step, State]]


class Violation(NamedTuple):
    invariant: str
    init: State
    trace: Trace  # the steps, each with the state it leads to
    loop: int = 0  # for a lasso: how many of the last steps form the cycle


class Result(NamedTuple):
    states: int
    edges: int
    seconds: float
    violations: dict[str, Violation]
    complete: bool  # the whole scope was explored


Progress = Callable[[int, float], None]
Observer = Callable[[State, Step, State], None]


# enum members ranked by definition order (reading `.value` runs Python code)
_RANK: Final[dict[object, int]] = {m: k for k, m in enumerate((*Role, *Pc))}


def _proc_key(p: Proc) -> tuple[object, ...]:
    return (_RANK[p.role], p.agent, _RANK[p.pc], p.lease, p.probe_on, p.target, p.sender,
            p.deposit_kind, p.number, p.listing, p.epitaph, p.recipient, p.stop_flag, p.tool)


def _proc_before(x: Proc, y: Proc) -> bool:
    """`_proc_key(x) < _proc_key(y)` for two processes of one role, field by field up to
    the first that differs (most pairs differ in their agent or program counter), without
    building either key."""
    if x.agent != y.agent:
        return x.agent < y.agent
    if x.pc is not y.pc:
        return _RANK[x.pc] < _RANK[y.pc]
    return _proc_key(x) < _proc_key(y)


def canonical(st: State) -> State:
    """The representative of st's orbit under permutations of its processes *within
    one role*: the processes of each role sorted among the places that role holds
    (by everything but their ghost history), so the order in which processes of
    different roles started (a driver after the scanner, a writer after a driver)
    is kept and explored as it happened (SPEC.md §19, "Symmetry reduction")."""
    procs = st.procs
    if len(procs) < 2:
        return st
    if len(procs) == 2:  # the common case, as `sorted` (stable) orders it
        a, b = procs
        if a.role is b.role and _proc_before(b, a):
            return st._replace(procs=(b, a))
        return st
    if len({p.role for p in procs}) == len(procs):  # one process per role: nothing to sort
        return st
    out = list(procs)
    for role in (Role.WRITER, Role.DRIVER, Role.SCANNER):
        places = [k for k, p in enumerate(procs) if p.role is role]
        if len(places) > 1:
            for k, p in zip(places, sorted((procs[k] for k in places), key=_proc_key),
                            strict=True):
                out[k] = p
    new = tuple(out)
    return st if new == procs else st._replace(procs=new)


def sorted_form(st: State) -> State:
    """The processes sorted regardless of role: the state as an observer that does not
    see start order reads it (the soundness test compares searches in this form)."""
    return st._replace(procs=tuple(sorted(st.procs, key=_proc_key)))


def _identity(st: State) -> State:
    return st


def _concrete(init: State, prof: Profile, scope: Scope,
              path: list[tuple[Step, State]], canon: Callable[[State], State]) -> Trace:
    """A concrete run through the given canonical states: from each state, the
    successor taken by the same kind of step whose canonical form is the next
    state of the path (ghost included: what the invariants read of it)."""
    out: Trace = []
    cur = init
    for step, target in path:
        want = ghost_key(target, scope)
        for s2, nxt in successors(cur, prof, scope):
            if (s2.rule, s2.text, s2.action, s2.external) == (
                    step.rule, step.text, step.action, step.external) and canon(
                    nxt) == target and ghost_key(canon(nxt), scope) == want:
                out.append((s2, nxt))
                cur = nxt
                break
        else:
            raise AssertionError(f"no concrete step for {step.text!r}")
    return out


def explore(
    prof: Profile,
    scope: Scope,
    want: frozenset[str] | None = None,
    liveness: bool = True,
    progress: Progress | None = None,
    observe: Observer | None = None,
    first: bool = False,
    symmetry: bool = True,
    ghost: bool = True,
) -> Result:
    """Explore; with `want`, stop once every invariant in it is violated;
    with `first`, stop at the first violation of any; with `symmetry` (the
    default), identify states that differ only in the order of processes of one
    role; with `ghost` (the default), never identify states whose ghost histories
    differ in what the invariants read (`properties.ghost_key`).

    The cyclic garbage collector is off while it runs (and restored after): every
    state is kept until the search ends and states are plain tuples (no cycles), so a
    collection during the search finds nothing to free; it only walks the growing
    table of states again, which took a third of the compiled model's time (SPEC §19,
    *Speed*)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _explore(prof, scope, want, liveness, progress, observe, first, symmetry, ghost)
    finally:
        forget_ghost_keys()
        if collecting:
            gc.enable()


def _explore(
    prof: Profile,
    scope: Scope,
    want: frozenset[str] | None,
    liveness: bool,
    progress: Progress | None,
    observe: Observer | None,
    first: bool,
    symmetry: bool,
    ghost: bool,
) -> Result:
    t0 = time.perf_counter()
    canon = canonical if symmetry else _identity
    init = initial(scope)
    # The table of states, in two levels so that a ghost reading is computed only where it
    # can tell two states apart: `index` numbers the first state reached with each value
    # (`==` ignores the ghost); only when another state of that value comes, both are
    # read (`ghost_key`) and `split` numbers the state by that first state's number and
    # its reading. A state whose value is new is new whatever its history says, and most
    # are (SPEC §19, *Speed*). Without `ghost`, `index` alone is the table.
    # The first level is keyed not on the state but on its *key*: each record of the state
    # (agent, process, the set in flight, the budget) by its number in a table of the
    # distinct records seen (`properties.number_in`), equal records one number (`==` ignores the
    # ghost). A successor shares most records with the state it came from, as the same
    # objects: those take the parent's numbers at once (`_key`), so only the records a
    # step replaced are hashed, where keying on the state would hash all of it again on
    # every edge (SPEC §19, *Speed*). Two states have one key exactly when they are equal.
    numbers: list[dict[object, int]] = [{}, {}, {}, {}]
    keys: list[tuple[int, ...]] = [_key(init, None, (), numbers)]
    index: dict[tuple[int, ...], int] = {keys[0]: 0}
    split: dict[tuple[int, tuple[object, ...]], int] = {}
    read: set[int] = set()  # the first states whose reading is in `split`
    states: list[State] = [init]
    parent: list[int] = [-1]
    via: list[Step | None] = [None]
    depth: list[int] = [0]
    # the graph for the liveness check, by source: states are expanded in the order of
    # their numbers, so the edges of state k are dst[out_at[k]:out_at[k + 1]] as they come
    out_at: list[int] = []
    dst: list[int] = []
    found: dict[str, Violation] = {}
    edges = 0
    # No nested functions here: the compiled model keeps a function's closures and its
    # variables in one object that refers to itself, so the table of states would then
    # be freed only by a later full collection, which walks all of it again.

    for inv in state_violations(init, scope):
        _record(found, inv, init, prof, scope, [], canon)
    frontier: deque[int] = deque([0])
    complete = True
    next_tick = 50_000
    while frontier:
        if (want is not None and want <= found.keys()) or (first and found):
            complete = False
            break
        k = frontier.popleft()
        st = states[k]
        stkey = keys[k]
        if liveness:
            while len(out_at) <= k:  # states before k that were not expanded: no edges
                out_at.append(len(dst))
        for step, nxt in successors(st, prof, scope):
            edges += 1
            if observe is not None:
                observe(st, step, nxt)
            post = canon(nxt)
            n = len(states)
            key = _key(post, st, stkey, numbers)
            # (looked up, then stored when new: the compiled model makes no int object
            # for n on the edges, most of them, that reach a state already numbered)
            seen = index.get(key)
            if seen is None:
                index[key] = j = n
            else:
                j = seen
            if ghost and j != n:
                if j not in read:
                    read.add(j)
                    split[j, ghost_key(states[j], scope)] = j
                j = split.setdefault((j, ghost_key(post, scope)), n)
            # judged as taken (before the canonical form); the state half of
            # I-1 only when the post-state is new (`step_violations`)
            bad = step_violations(st, step, nxt, scope, j == n)
            nxt = post
            for inv in bad:
                if inv not in found:
                    _record(found, inv, init, prof, scope,
                            [*_path(k, states, parent, via), (step, nxt)], canon)
            if j == n:
                states.append(nxt)
                keys.append(key)
                parent.append(k)
                via.append(step)
                depth.append(depth[k] + 1)
                sbad = state_violations(nxt, scope)
                for inv in sbad:
                    if inv not in found:
                        _record(found, inv, init, prof, scope, _path(j, states, parent, via),
                                canon)
                # A state that breaks an invariant is not expanded: what follows
                # is not the protocol (and, e.g. with a lost deposit, unbounded).
                if not sbad:
                    frontier.append(j)
                if progress is not None and j >= next_tick:
                    next_tick += 50_000
                    progress(j, time.perf_counter() - t0)
            if liveness and not step.external:
                dst.append(j)
    if liveness and complete and "I-13" not in found:
        while len(out_at) <= len(states):
            out_at.append(len(dst))
        lasso = _find_lasso(len(states), out_at, dst, depth)
        if lasso is not None:
            node, cycle = lasso
            trace = _path(node, states, parent, via)
            loop = _loop_steps(node, cycle, states, prof, scope, canon)
            full = _concrete(init, prof, scope, trace + loop, canon)
            found["I-13"] = Violation("I-13", init, full, len(loop))
    return Result(len(states), edges, time.perf_counter() - t0, found, complete)


def _key(st: State, pre: State | None, prekey: tuple[int, ...],
         numbers: list[dict[object, int]]) -> tuple[int, ...]:
    """st's key: the numbers of its agents, of its set in flight and budget, and of its
    processes, in order (the agents are as many in every state of a search, so the
    processes' numbers start at one place). A record that is the same object as one of
    `pre`'s (the state st was reached from, whose key is `prekey`) takes that record's
    number; any other is looked up in its table (`numbers`: agents, processes, sets in
    flight, budgets)."""
    agents = st.agents
    na = len(agents)
    out: list[int] = []
    for a in range(na):
        ag = agents[a]
        out.append(prekey[a] if pre is not None and ag is pre.agents[a]
                   else number_in(numbers[0], ag))
    out.append(prekey[na] if pre is not None and st.in_flight is pre.in_flight
               else number_in(numbers[2], st.in_flight))
    out.append(prekey[na + 1] if pre is not None and st.budget is pre.budget
               else number_in(numbers[3], st.budget))
    old = pre.procs if pre is not None else ()
    for p in st.procs:
        m = 0
        for q in old:
            if q is p:
                break
            m += 1
        out.append(prekey[na + 2 + m] if m < len(old) else number_in(numbers[1], p))
    return tuple(out)


def _path(k: int, states: list[State], parent: list[int], via: list[Step | None]) -> Trace:
    """The steps from the initial state to state k, each with the state it leads to."""
    out: Trace = []
    while k > 0:
        step = via[k]
        assert step is not None
        out.append((step, states[k]))
        k = parent[k]
    out.reverse()
    return out


def _record(found: dict[str, Violation], inv: str, init: State, prof: Profile, scope: Scope,
            trace: Trace, canon: Callable[[State], State]) -> None:
    """Keep the first violation of inv, as a concrete trace."""
    if inv not in found:
        found[inv] = Violation(inv, init, _concrete(init, prof, scope, trace, canon))


def _find_lasso(
    n: int, start: list[int], adj: list[int], depth: list[int]
) -> tuple[int, list[int]] | None:
    """The shallowest node on a cycle of the graph and a shortest cycle through it. The
    graph: node v's edges lead to adj[start[v]:start[v + 1]]."""
    comp = _tarjan(n, start, adj)
    size = [0] * n  # nodes per component (components are numbered below n)
    for c in comp:
        size[c] = size[c] + 1
    # a node is on a cycle when its component has several nodes or it has a self-loop
    loops = bytearray(n)
    for v in range(n):
        for e in range(start[v], start[v + 1]):
            if adj[e] == v:
                loops[v] = 1
    best = -1
    for v in range(n):
        if (size[comp[v]] > 1 or loops[v]) and (best < 0 or depth[v] < depth[best]):
            best = v
    if best < 0:
        return None
    # shortest cycle through best, inside its component
    c = comp[best]
    prev = {best: -1}
    q: deque[int] = deque([best])
    while q:
        v = q.popleft()
        for e in range(start[v], start[v + 1]):
            w = adj[e]
            if w == best:
                cyc = [v]
                while prev[cyc[-1]] != -1:
                    cyc.append(prev[cyc[-1]])
                cyc.reverse()
                return best, [*cyc[1:], best]
            if comp[w] == c and w not in prev:
                prev[w] = v
                q.append(w)
    return None


def _tarjan(n: int, start: list[int], adj: list[int]) -> list[int]:
    """Iterative Tarjan: the strongly connected component of every node."""
    index = [-1] * n
    low = [0] * n
    comp = [-1] * n
    onstack = bytearray(n)
    stack: list[int] = []
    counter = 0
    ncomp = 0
    # the depth-first path as two lists, each node with its next edge (no tuple per edge)
    path: list[int] = []
    edge: list[int] = []
    for root in range(n):
        if index[root] >= 0:
            continue
        path.append(root)
        edge.append(start[root])
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        onstack[root] = 1
        while path:
            v = path[-1]
            e = edge[-1]
            if e < start[v + 1]:
                edge[-1] = e + 1
                w = adj[e]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    onstack[w] = 1
                    path.append(w)
                    edge.append(start[w])
                elif onstack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            path.pop()
            edge.pop()
            if path:
                u = path[-1]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    onstack[w] = 0
                    comp[w] = ncomp
                    if w == v:
                        break
                ncomp += 1
    return comp


def _loop_steps(node: int, cycle: list[int], states: list[State], prof: Profile,
                scope: Scope, canon: Callable[[State], State]) -> Trace:
    """The steps of a cycle given as a list of node ids (canonical states)."""
    out: Trace = []
    cur = states[node]
    for v in cycle:
        target = states[v]
        want = ghost_key(target, scope)
        for step, nxt in successors(cur, prof, scope):
            if not step.external and canon(nxt) == target and ghost_key(
                    canon(nxt), scope) == want:
                out.append((step, target))
                break
        cur = target
    return out
