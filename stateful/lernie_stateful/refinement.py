"""Refinement: the real implementation run against the model, point by point, with crashes.

Several real actors (operator writers, launched drivers and their exec'd successors,
the scan) share one real workspace; Hypothesis chooses who runs when, who crashes
where, and what the model adapter answers. After every protocol point an actor
passes, the model must take steps carrying that point's label (``POINTS`` in
``lernie_stateful.points``) from a state consistent with the run so far, and reach a
state whose abstraction equals the abstraction of the real workspace; points with
no model step are declared in ``INTERNAL`` (stuttering). The run keeps the *set* of
model states consistent with what happened (the model is nondeterministic where the
implementation is determined by its inputs); an empty set is a divergence, reported
with the real and the model's abstract states side by side.

The abstraction is the world's view (:mod:`lernie_stateful.refine_view`: what the
workspace's files, refs and kernel locks say, and a model state seen the same way);
this module holds the world's rules: the actors stepped and crashed, the model stepped
along with them, the two views compared at every point, and the tool oracle's checks
of real tool calls (:mod:`lernie_stateful.worktools`).

A crash is a real crash: the actor's generator is abandoned without being closed
(and kept referenced, so it is never finalised: no ``finally``, ``except`` or
``with`` exit runs), and exactly the descriptors the actor opened are closed, as
the kernel would close them; temp files, renamed entries and half-made commits stay.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as hst
from hypothesis import target
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from lernie_spec import model as M
from lernie_spec.model import NOBODY, Action, State
from lernie_spec.properties import state_violations

from lernie_ref.actors.hop import HopDeps, HopResult, Outcome, hop_actor
from lernie_ref.actors.sweep import scan_actor
from lernie_ref.actors.writer import dispatch_actor, message_actor, prompt_actor
from lernie_ref.adapters import ModelReply, ModelRequest
from lernie_ref.core.actor import Actor, Passed
from lernie_ref.core.clock import FixedClock
from lernie_ref.core.entry import text_block, tool_use_block
from lernie_ref.core.ids import require_agent_id
from lernie_ref.core.vocab import (
    AGENT_REF_PREFIX,
    TOOL_ORIGIN,
    USER_SENDER,
    Point,
)
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.launcher import RecordingLauncher
from lernie_ref.substrate.workspace import Workspace, create_workspace
from lernie_stateful.points import POINTS
from lernie_stateful.refine_view import (
    SCOPE,
    AgentView,
    View,
    WorldView,
    index_blobs,
    read_refs,
)
from lernie_stateful.refine_view import Divergence as Divergence  # its face, for callers
from lernie_stateful.worktools import (
    BY_NAME as TOOL_CALLS,
)
from lernie_stateful.worktools import (
    CALL_NAMES,
    LOOK,
    REFUSED,
    TOOL_CAP,
    TOOL_TIMEOUT,
    TOOLS,
    Oracle,
    ToolMismatch,
)

# ------------------------------------------------------------------ the world

STEP_BUDGET = 4
"""The real step budget (R-TERM-4) by default: small, so budget exhaustion happens in
short runs."""

STEP_BUDGETS: tuple[int, ...] = (STEP_BUDGET, 12)
"""The step budgets a run may have (drawn once per run): the small one exhausts agents
early; the larger one leaves room for conversations (an agent that answers, is written
to again and answers again), which the small one cuts short. The model exhausts a
budget by its own bounded choice, whatever the number."""

# ------------------------------------------------------------ point matching

INTERNAL: dict[str, str] = {
    Point.DEPOSIT_LISTED: "an operator writer's listing is folded into `lernie message`",
    Point.DEPOSIT_TEMP_WRITTEN: "a dot-temp no reader accepts (R-DEP-9)",
    Point.DEPOSIT_COLLIDED: "create-only: the model takes a free number at publication",
    Point.DEPOSIT_MARKED: "the returned mark: abstracted with the result's publication",
    Point.PROBE_RELEASED: "the model releases and launches in one step (R-LAUNCH-1): the "
    "machine runs the launch right after it, and a crash here equals a crash before it",
    Point.HOP_ACQUIRED: "an exec'd successor adopting the lease (R-LOCK-4)",
    Point.HOP_SETTLED: "the settlement's entries are matched at their rename",
    Point.HOP_WARRANT: "the warrant is folded into the step that ends the drain",
    Point.HOP_MODEL_RETURNED: "the model's reply is matched when its entry lands",
    Point.HOP_ASSISTANT_COMMITTED: "the model's reply is matched when its entry lands",
    Point.HOP_TOOL_RAN: "a tool runs a writer straight through (see FOLDED)",
    Point.HOP_TOOLS_RAN: "the baton: the successor continues as the same model process",
    Point.TERMINAL_RECIPIENT: "the recipient is decided with the terminal event",
    Point.DRAIN_STRAY_COMMITTED: "the hop's recovery is matched (RECOVER_STRAYS); the "
    "drain's repeat of it finds nothing left (a rematerialized worktree has no strays)",
    Point.DRAIN_REMATERIALIZED: "the model never removes a worktree",
}
"""Implementation points with no model step of their own (stuttering): the abstract
state must be unchanged, except at ``UNCHECKED`` points, after which the same actor
runs on to its next point before anything else happens."""

UNCHECKED = frozenset({Point.PROBE_RELEASED})

FOLDED: dict[str, frozenset[Action]] = {
    Point.HOP_TOOL_RAN: frozenset(
        {Action.LIST_FOR_DEPOSIT, Action.PUBLISH, Action.PROBE, Action.PROBE_RELEASE_LAUNCH}
    ),
}
"""Model steps the implementation takes inside one point without a point of their own."""

MAX_PATH = 5


def ends(point: str) -> frozenset[Action]:
    """The model actions labelled with ``point`` (``lernie_stateful.points.POINTS``)."""
    return frozenset(a for a, ps in POINTS.items() if point in ps)


# ------------------------------------------------------------ the real side


_GRAVEYARD: list[object] = []
"""Every actor's generator, referenced for the life of the process: a crashed or
abandoned actor must never be finalised (that would run its ``finally`` clauses,
on descriptors the crash closed and the kernel may since have handed out again)."""


def _bury(obj: object) -> None:
    """Keep ``obj`` alive for good: referenced here, and one reference the interpreter
    never gives back, so not even its shutdown finalises it (a SIGKILLed process runs
    no ``finally`` at exit either)."""
    _GRAVEYARD.append(obj)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


@dataclass
class RealActor:
    key: int
    kind: str  # "writer" | "driver"
    agent: int
    gen: Actor[object]
    fds: set[int] = field(default_factory=set)
    done: bool = False
    stop: bool = False
    points: list[Passed] = field(default_factory=list)
    merging: frozenset[str] = frozenset()  # points matched together with the next ones
    creating: bool = False  # between dispatch.locked and dispatch.created (see CREATION)


def _open_fds() -> set[int]:
    out = set()
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            os.fstat(fd)
        except OSError:
            continue
        out.add(fd)
    return out


def last_writer(request: ModelRequest) -> str | None:
    """The agent that wrote to this one last: the sender of the newest delivered entry the
    model is shown that came from another agent (a message, a result, an obituary)."""
    mail = [e for e in request.entries if e.delivered
            and e.origin not in (USER_SENDER, request.agent_id)]
    return max(mail, key=lambda e: e.seq).origin if mail else None


class ChoiceModel:
    """A model adapter whose replies the machine chooses, queued per model slot (so a
    program can script a child before the dispatch that creates it). A scripted
    message names a slot and is addressed when the reply is given; an ``answer`` is a
    message to the agent that wrote to this one last (``last_writer``: a conversation
    goes back and forth, whoever the agents are); a message to a slot with no agent yet,
    an answer with nobody to answer, and a dispatch with no room in the world, become a
    no-op tool call (the reply the real model gave). A ``noop`` reply names a call of
    the tool vocabulary (``worktools.CALLS``: real ``bash``, ``apply_patch``,
    ``read_file`` and ``cd`` calls) or the no-op ``look``, a tool nobody offers."""

    model_id = "choice"

    def __init__(self) -> None:
        self.queue: dict[int, list[tuple[str, int, str, str]]] = {}
        self.calls = 0
        self.slot_of: Callable[[str], int] = lambda agent_id: NOBODY
        self.id_of: Callable[[int], str | None] = lambda slot: None
        self.may_dispatch: Callable[[str], bool] = lambda agent_id: True
        self.on_tool: Callable[[str, int, str], None] = lambda call, slot, name: None

    def call(self, request: ModelRequest, should_stop: Callable[[], bool]) -> ModelReply:
        self.calls += 1
        q = self.queue.get(self.slot_of(request.agent_id)) or []
        if not q:
            return ModelReply([text_block("done")])
        kind, target, call, tool = q.pop(0)
        if kind == "final":
            return ModelReply([text_block("done")])
        to = (self.id_of(target) if kind == "message"
              else last_writer(request) if kind == "answer" else None)
        if to is not None:
            return ModelReply([tool_use_block(call, "message", {"agent": to, "content": "hi"})])
        if kind == "dispatch" and self.may_dispatch(request.agent_id):
            return ModelReply([tool_use_block(call, "dispatch", {"goal": "work"})])
        work = TOOL_CALLS.get(tool) if kind == "noop" else None
        if work is not None:  # a real tool call of the vocabulary (``worktools``)
            slot = self.slot_of(request.agent_id)
            self.on_tool(call, slot, work.name)
            return ModelReply([tool_use_block(call, work.tool, work.input(M.name(slot)))])
        return ModelReply([tool_use_block(call, LOOK, {})])


class Ticking(FixedClock):
    def __init__(self) -> None:
        super().__init__(1_700_000_000_000_000_000, 1_000_003)


class World(WorldView):
    """One real workspace, its actors, and the set of model states consistent with it:
    the rules that step the actors and the model and compare the two views (the view
    itself, read from the workspace, is ``WorldView``)."""

    def __init__(self, root: Path) -> None:
        ws = create_workspace(root / "ws")
        # The harness owns this workspace: git's automatic maintenance, a second git
        # process after every commit that finds nothing to do in a repository this small,
        # is switched off (no rule of the protocol involves it; a real workspace keeps it).
        ws.git.run(ws.repo_git, ["config", "maintenance.auto", "false"])
        super().__init__(ws, RecordingLauncher())
        self.clock = Ticking()
        self.model = ChoiceModel()
        self.config = Config(step_budget=STEP_BUDGET, tools=TOOLS, tool_timeout=TOOL_TIMEOUT,
                             tool_output_cap=TOOL_CAP)
        self.oracle = Oracle(os.fspath(self.ws.root))
        self.model.on_tool = self.oracle.issue
        self.model.slot_of = self.index
        self.model.id_of = lambda slot: self.ids[slot]
        self.model.may_dispatch = lambda aid: any(
            par == self.index(aid) and self.ids[c] is None for c, par in enumerate(SCOPE.parents))
        self.actors: dict[int, RealActor] = {}
        self.graveyard: list[RealActor] = []  # crashed in this run
        self.next_key = 0
        self.models: list[tuple[State, tuple[int, ...]]] = [(M.initial(SCOPE), ())]
        self.trace: list[str] = []  # the implementation's points, swimlane rows
        self.replies = 0

    def descriptors(self) -> Iterable[tuple[object, set[int]]]:
        return ((act.key, act.fds) for act in self.actors.values())

    # -------------------------------------------------------------- matching

    def _check(self, cands: list[tuple[State, tuple[int, ...]]], what: str,
               before: list[tuple[State, tuple[int, ...]]]) -> None:
        real = self.real_view()
        keep: list[tuple[State, tuple[int, ...]]] = []
        for c in cands:
            if self.model_view(*c) == real and c not in keep:
                keep.append(c)
        if not keep:
            raise Divergence(self._report(what, real, before, cands))
        for st, _ in keep:
            bad = state_violations(st, SCOPE)
            if bad:
                raise Divergence(f"{what}: the model state matched breaks {', '.join(bad)}")
        self.models = keep

    def _report(self, what: str, real: View, before: list[tuple[State, tuple[int, ...]]],
                cands: list[tuple[State, tuple[int, ...]]]) -> str:
        lines = [f"divergence at {what}", "real abstract state:"]
        lines += [f"  {M.name(a)}: {v}" for a, v in enumerate(real)]
        shown = cands or before
        lines.append("model abstract state(s) " + (
            "reachable with this label:" if cands
            else "before the point (no step has its label):"))
        for st, ids in shown[:3]:
            for a, v in enumerate(self.model_view(st, ids)):
                mark = "" if v == real[a] else "   <-- differs"
                lines.append(f"  {M.name(a)}: {v}{mark}")
            lines.append("  procs: " + ", ".join(f"{ids[i]}:{p.role.name}/{p.pc.value}"
                                                  for i, p in enumerate(st.procs)))
        lines.append("implementation points so far:")
        lines += [f"  {row}" for row in self.trace[-200:]]
        return "\n".join(lines)

    def _proc_paths(self, st: State, ids: tuple[int, ...], key: int,
                    allowed: frozenset[Action], final: frozenset[Action],
                    stutter: bool) -> Iterator[tuple[State, tuple[int, ...]]]:
        """Model states reachable by steps of actor ``key``'s model process only."""
        if stutter:
            yield st, ids
        frontier = [(st, ids)]
        for _ in range(MAX_PATH):
            nxt = []
            for s, d in frontier:
                if key not in d:
                    continue
                i = d.index(key)
                for step, s2 in M.PC[s.procs[i].pc](s, M.Profile(), SCOPE, i):
                    if step.action not in allowed:
                        continue
                    d2 = d if len(s2.procs) == len(s.procs) else d[:i] + d[i + 1:]
                    if step.action in final:
                        yield s2, d2
                    nxt.append((s2, d2))
            frontier = nxt

    def after_point(self, act: RealActor, p: Passed) -> None:
        name = p.name
        self.trace.append(f"{act.key}:{act.kind}[{M.name(act.agent)}] {name} {p.detail}")
        what = f"{name} by actor {act.key} ({act.kind} of {M.name(act.agent)})"
        self._tool_point(act, p, what)
        if name in UNCHECKED:
            return
        if _creation_point(act, name):
            self._check(list(self.models), what, self.models)  # nothing visible yet
            return
        if name == Point.DISPATCH_CREATED:
            name = Point.DEPOSIT_PUBLISHED  # the model's publication (see CREATION)
        if act.merging or (act.stop and name == Point.TRANSCRIPT_RENAMED):
            # A stopped executor's tool result: the model lands it, sets the stopped mark
            # and turns to its obituary in one step (R-STOP-6, `_terminate`); the real
            # actor commits, then marks. The machine runs the actor on to its mark (or
            # its next entry, or its end) and matches the points as one model step.
            act.merging = act.merging | {name}
            if name not in (Point.TERMINAL_STOPPED_MARKED, Point.TRANSCRIPT_RENAMED) or \
                    act.merging == {Point.TRANSCRIPT_RENAMED}:
                return
            names = act.merging
            act.merging = frozenset()
        else:
            names = frozenset({name})
        fin = frozenset().union(*(ends(n) for n in names))
        folded = frozenset().union(*(FOLDED.get(n, frozenset()) for n in names))
        stutter = all(n in INTERNAL for n in names)
        cands: list[tuple[State, tuple[int, ...]]] = []
        for st, ids in self.models:
            cands += self._proc_paths(st, ids, act.key, fin | folded, fin | folded, stutter)
        self._check(cands, what, self.models)

    def _tool_point(self, act: RealActor, p: Passed, what: str) -> None:
        """The tool oracle's checks at a point (``worktools``): a call's files and
        processes after it ran, its result entry, the files its commit (or the stray
        recovery that commits it) holds, nothing left running after a ``died`` settlement."""
        aid = self.ids[act.agent] if act.kind == "driver" else None
        if aid is None:
            return
        _, wt, msgs = self._dirs_of(aid)
        tag = M.name(act.agent)
        tool_entry = p.detail.endswith(f"-{TOOL_ORIGIN}.json")
        try:
            if p.name == Point.HOP_TOOL_RAN:
                self.oracle.ran(p.detail, tag, aid, wt)
            elif p.name == Point.TRANSCRIPT_RENAMED and tool_entry:
                self.oracle.result(os.path.join(msgs, p.detail), act.agent)
            elif p.name == Point.TRANSCRIPT_COMMITTED and tool_entry:
                self.oracle.committed(act.agent, tag, index_blobs(wt))
            elif p.name == Point.DRAIN_STRAY_COMMITTED:
                self.oracle.recovered(act.agent, tag, index_blobs(wt))
            elif p.name == Point.HOP_SETTLED:
                self.oracle.none_left(aid, "after a crashed tool window was settled")
        except ToolMismatch as exc:
            raise Divergence("\n".join([f"divergence at {what}: {exc}",
                                         "implementation points so far:",
                                         *(f"  {row}" for row in self.trace[-200:])])) from None

    def after_end(self, act: RealActor, error: BaseException | None) -> None:
        """The actor returned (or raised): its model process must be finished, or finish
        now by an error exit when it raised (R-STEP-5)."""
        what = f"end of actor {act.key}" + (f" ({type(error).__name__}: {error})" if error else "")
        self.trace.append(f"{act.key}:{act.kind}[{M.name(act.agent)}] END" +
                          (f" {type(error).__name__}" if error else ""))
        aid = self.ids[act.agent]
        if error is not None and act.kind == "driver" and aid is not None:
            # an error exit leaves its tool window as a crash does (R-STEP-5, R-STEP-2)
            self.oracle.crashed(act.agent, False, aid, self._dirs_of(aid)[1])
        cands: list[tuple[State, tuple[int, ...]]] = []
        for st, ids in self.models:
            if act.key not in ids:
                cands.append((st, ids))
            elif error is not None:
                allowed = frozenset({Action.DECLINE, Action.ERROR_EXIT})
                cands += [(s, d) for s, d in self._proc_paths(st, ids, act.key, allowed,
                                                                allowed, False)
                          if act.key not in d]
        self._check(cands, what, self.models)

    # -------------------------------------------------------------- actors

    def _new_actor(self, kind: str, agent: int, gen: Actor[object]) -> RealActor:
        act = RealActor(self.next_key, kind, agent, gen)
        self.next_key += 1
        self.actors[act.key] = act
        _bury(gen)  # never finalised, whatever happens to the run
        return act

    def step(self, act: RealActor) -> Passed | None:
        before = _open_fds()
        error: BaseException | None = None
        point: Passed | None = None
        try:
            point = next(act.gen)
        except StopIteration:
            pass
        except Exception as exc:  # a library error ends the actor (R-STEP-5)
            error = exc
        after = _open_fds()
        act.fds |= after - before
        act.fds -= before - after
        if point is None:
            act.done = True
            del self.actors[act.key]
            self.after_end(act, error)
            return None
        act.points.append(point)
        self.after_point(act, point)
        if point.name in UNCHECKED or act.merging:
            return self.step(act)  # no other actor observes the point in between
        return point

    def crash(self, act: RealActor) -> None:
        """SIGKILL: close the descriptors the kernel closes; run nothing of the actor."""
        for fd in sorted(act.fds):
            with contextlib.suppress(OSError):
                os.close(fd)
        act.fds.clear()
        act.done = True
        del self.actors[act.key]
        self.graveyard.append(act)
        aid = self.ids[act.agent]
        if act.kind == "driver" and aid is not None:
            mid_call = bool(act.points) and act.points[-1].name == Point.HOP_ASSISTANT_COMMITTED
            self.oracle.crashed(act.agent, mid_call, aid, self._dirs_of(aid)[1])
        _bury(act.gen)
        self.trace.append(f"{act.key}:{act.kind}[{M.name(act.agent)}] CRASH")
        cands: list[tuple[State, tuple[int, ...]]] = []
        for st, ids in self.models:
            if act.key in ids:
                i = ids.index(act.key)
                for _, s2 in M.crash(st, M.Profile(), SCOPE, i):
                    cands.append((s2, ids[:i] + ids[i + 1:]))
            else:
                cands.append((st, ids))
        self._check(cands, f"crash of actor {act.key}", self.models)

    def operator_message(self, a: int) -> RealActor:
        """`lernie message` to an existing agent; `lernie prompt` (R-PROBE-5) when the
        agent is the root and does not exist yet: the writer creates it first."""
        aid = self.ids[a]
        if aid is None:
            assert SCOPE.parents[a] == NOBODY
            gen: Actor[object] = prompt_actor(self.ws, f"hello {M.name(a)}", "p",
                                              self.launcher, self.clock)
            verb = "lernie prompt"
        else:
            gen = message_actor(self.ws, aid, f"hello {M.name(a)}", USER_SENDER,
                                self.launcher, self.clock)
            verb = "lernie message"
        act = self._new_actor("writer", a, gen)
        self.trace.append(f"{act.key}:writer[{M.name(a)}] {verb}")
        cands = []
        for st, ids in self.models:
            for step, s2 in M.ext_message(st, M.Profile(), SCOPE):
                if step.text == f"user: lernie message {M.name(a)}":
                    cands.append((s2, (*ids, act.key)))
        self._check(cands, f"{verb} {M.name(a)}", self.models)
        return act

    def messages_at_once(self, a: int) -> tuple[RealActor, ...]:
        """Two `lernie message` to agent ``a`` at once (a user and a script, say), each run
        past its listing of the inbox before either publishes: both take the same number,
        and the second to publish must find the name taken and go on to the next (R-DEP-6).
        The writers are left there; the rules that follow run them on."""
        writers = []
        for _ in range(2):
            act = self.operator_message(a)
            self.run_to(act.key, Point.DEPOSIT_LISTED)
            writers.append(act)
        return tuple(writers)

    def run_to(self, key: int, at: str) -> RealActor | None:
        """Run actor ``key`` until it passes point ``at`` (or ends; "": leave it where it
        is); the live actor."""
        act = self.actors.get(key)
        for _ in range(60 if at else 0):
            if act is None:
                break
            point = self.step(act)
            act = self.actors.get(key)
            if point is not None and point.name == at:
                break
        return act

    def start_launch(self, n: int) -> RealActor | None:
        """Start the ``n``-th unstarted launch as a driver actor and run it to its first point."""
        pending = self.launcher.launches
        _, aid = pending.pop(self.started + n)
        pending.insert(self.started, (self.ws.root, aid))
        self.started += 1
        a = self.index(aid)
        act = self._new_actor("driver", a, self._driver(aid, self.next_key))
        before = _open_fds()
        point = next(act.gen)
        after = _open_fds()
        act.fds |= after - before
        act.points.append(point)
        self.trace.append(f"{act.key}:driver[{M.name(a)}] {point.name}")
        cands = []
        for st, ids in self.models:
            for _step, s2 in M.start_driver(st, M.Profile(), SCOPE, a):
                grew = len(s2.procs) > len(st.procs)
                if grew == (point.name is Point.HOP_ACQUIRED):
                    cands.append((s2, (*ids, act.key) if grew else ids))
        self._check(cands, f"{point.name}: launched driver {act.key} of {M.name(a)}",
                    self.models)
        if point.name is Point.HOP_BUSY:
            self.step(act)  # it returns at once
            return None
        return act

    def _driver(self, aid: str, key: int) -> Actor[object]:
        """`lernie advance`: a hop and its exec'd successors, adopting the lease (the baton)."""

        def stopped() -> bool:
            act = self.actors.get(key)
            return act is not None and act.stop

        deps = HopDeps(self.model, self.launcher, self.clock, self.config, stopped)
        agent = require_agent_id(aid)  # the world's ids enter lernie_ref here (R-ID-9)
        result: HopResult = yield from hop_actor(self.ws, agent, {}, deps)
        while result.outcome is Outcome.TOOLS_RAN:
            assert result.lock is not None
            result = yield from hop_actor(self.ws, agent, result.lock.hand_off({}), deps)
        return result

    def scan(self) -> None:
        """`lernie scan`, run straight through (one atomic input; the model's sweep is):
        the sweep, with its revivals and their crash-loop guard (R-SCAN-10), then the
        flush, all the model's own steps."""
        from lernie_ref.core.actor import run

        self.trace.append("scan: lernie scan")
        run(scan_actor(self.ws, self.launcher, self.clock))
        if not any(a.creating for a in self.actors.values()):
            # a creation still running (a live `lernie prompt` or dispatch between its
            # lock and its ref) has a worktree no ref names yet: not remains, and the sweep
            # leaves it alone (R-SCAN-12); the next scan after it ended or died checks it
            no_remains(self.ws)
        cands = []
        for st, ids in self.models:
            for _, s1 in M.ext_scan(st, M.Profile(), SCOPE):
                j = len(s1.procs) - 1
                for _, s2 in M.sweep(s1, M.Profile(), SCOPE, j):
                    for _, s3 in M.flush(s2, M.Profile(), SCOPE, j):
                        cands.append((s3, ids))
        self._check(cands, "lernie scan", self.models)

    def stoppable(self) -> list[int]:
        out = set()
        for st, _ in self.models:
            for step, _s in M.stop_agent(st, M.Profile(), SCOPE):
                out.add(step.text.rsplit(" ", 1)[1])
        return [a for a in range(len(SCOPE.parents)) if M.name(a) in out]

    def stop(self, a: int) -> None:
        """`lernie stop`: the stop flag of every driver holding the agent's (or a
        descendant's) lease is set, as SIGTERM sets it (R-STOP-1/3)."""
        targets = {a} | {c for c in range(len(SCOPE.parents)) if M._descends(SCOPE, c, a)}
        view = self.real_view()
        for t in targets:
            for k in view[t].holders:
                act = self.actors.get(k) if isinstance(k, int) else None
                if act is not None and act.kind == "driver" and act.agent == t:
                    act.stop = True
        self.trace.append(f"stop: lernie stop {M.name(a)}")
        cands = []
        for st, ids in self.models:
            for step, s2 in M.stop_agent(st, M.Profile(), SCOPE):
                if step.text == f"operator: lernie stop {M.name(a)}":
                    cands.append((s2, ids))
        self._check(cands, f"lernie stop {M.name(a)}", self.models)

    def past_tool_results(self) -> None:
        """Run every driver that has renamed or committed a tool result of its step on past
        the stop check that follows its tools (R-STEP-4): the model reads a stop flag there
        together with the result (a stopped executor's tool result), so a stop the
        cascade (R-STOP-3) lands on such a driver after its result is written is read at
        its successor's first check in the model, and the machine lands stops only where
        both read them alike."""
        w = self
        for key in sorted(k for k, a in w.actors.items() if a.kind == "driver"):
            for _ in range(4):
                act = w.actors.get(key)
                last = act.points[-1] if act is not None and act.points else None
                if act is None or last is None or last.name not in (
                        Point.TRANSCRIPT_RENAMED, Point.TRANSCRIPT_COMMITTED) or \
                        not last.detail.endswith(f"-{TOOL_ORIGIN}.json"):
                    break
                w.step(act)

    def script(self, a: int, kind: str, target: int = NOBODY, tool: str = LOOK) -> None:
        """Queue the next reply the model adapter gives the agent in slot ``a`` (``tool``:
        for a ``noop``, the call of the tool vocabulary it makes)."""
        self.replies += 1
        self.model.queue.setdefault(a, []).append((kind, target, f"t{self.replies}", tool))

    def close(self) -> None:
        """Kill and reap what tool calls and the crashes in their middle left running."""
        self.oracle.close()

    # -------------------------------------------------------------- liveness

    def run_all(self, max_steps: int = 2000,
                kill: tuple[str | tuple[str, ...], int] | None = None) -> None:
        """Bounded liveness: run every live actor and every launch to completion, one
        point each in turn (round robin, so the actors left running still race).
        ``kill``, ``(point, n)``: the driver that is the ``n+1``-th to pass ``point`` (or
        any of the points, given a tuple) is killed right there (one crash in a quiet
        spell)."""
        steps = 0
        turn = 0
        at, nth = kill if kill is not None else ((), 0)
        kill_at = (at,) if isinstance(at, str) else at
        while self.actors or self.started < len(self.launcher.launches):
            steps += 1
            if steps > max_steps:
                raise Divergence("no quiescence within the step bound (endless exchange?)")
            if self.actors:
                keys = sorted(self.actors)
                turn = next((k for k in keys if k > turn), keys[0])
                act = self.actors[turn]
                point = self.step(act)
                if point is not None and point.name in kill_at and act.kind == "driver" \
                        and turn in self.actors:
                    if nth == 0:
                        self.crash(act)
                        kill_at = ()
                    nth -= 1
            else:
                self.start_launch(0)

    def stranded(self) -> list[str]:
        """Pending deposits that warrant a launch (R-REL-2) with nobody to deliver them."""
        out = []
        for a, v in enumerate(self.real_view()):
            for sender, kind in v.inbox:
                if kind not in M.PARKED:
                    out.append(f"{M.name(a)} holds mail from {M.name(sender)} ({kind})")
            if self.graveyard and v.exists and not v.parked_at_tip and (
                    v.window == "open" or (v.call_due and v.window == "closed")):
                # after a crash and the scan that followed it: work due with nobody on
                # it (R-SCAN-10 revives it, the revived hop does it)
                out.append(f"{M.name(a)} has work due and no driver")
        return out


# ------------------------------------------------------------ killed creations (R-PROBE-6)

CREATION: tuple[str, ...] = (
    Point.DISPATCH_LOCKED, Point.DISPATCH_PREPARED, Point.DEPOSIT_LISTED,
    Point.DEPOSIT_TEMP_WRITTEN, Point.DEPOSIT_COLLIDED, Point.DEPOSIT_PUBLISHED,
)
"""A creation's points (``lernie prompt``, ``lernie dispatch``, the ``dispatch`` tool)
before its commit point, the create-only ref update (R-WS-4, R-PROBE-6). No ref names
the new agent yet, so nothing any reader sees has changed: each must stutter, and a
crash at any of them must leave the abstract state as it was (the remains, a worktree
and an inbox no ref names, are removed by the next scan, R-SCAN-12, checked by
``no_remains``). ``dispatch.created`` is the model's publication of the goal: the model
creates the agent and deposits in one writer's steps, the code makes both visible in
one ref update. A crash after it is a writer's crash between publication and probe."""


def _creation_point(act: RealActor, name: str) -> bool:
    """Whether ``name``, passed by ``act``, is a point of a creation before its commit point."""
    if name == Point.DISPATCH_LOCKED:
        act.creating = True
    elif name == Point.DISPATCH_CREATED:
        act.creating = False
    return act.creating and name in CREATION


def no_remains(ws: Workspace) -> None:
    """After a scan: no worktree or worktree admin directory is left that no ref names
    (R-SCAN-12), whatever creations were killed before."""
    refs = read_refs(ws.repo_git, (AGENT_REF_PREFIX,))
    ids = {r[len(AGENT_REF_PREFIX):] for r in refs}
    for where in (ws.agents_root, ws.repo_git / "worktrees"):
        left = sorted(set(os.listdir(where)) - ids) if where.is_dir() else []
        if left:
            raise Divergence(f"the scan left the remains of killed creations in {where}: {left}")


def killed_dispatch(world: World, parent: int, at: str) -> None:
    """`lernie dispatch` of a child of ``parent`` by the operator, SIGKILLed right after
    it passes ``at``, a point before its commit point: every point and the crash must
    leave the abstract state unchanged (no model step: nothing was created)."""
    aid = world.ids[parent]
    assert aid is not None
    gen: Actor[object] = dispatch_actor(world.ws, aid, "killed goal", "", world.launcher,
                                        world.clock)
    _bury(gen)
    world.trace.append(f"-:creator[{M.name(parent)}] lernie dispatch (killed at {at})")
    fds: set[int] = set()
    for _ in range(20):
        before = _open_fds()
        point = next(gen)
        fds |= _open_fds() - before
        world.trace.append(f"-:creator[{M.name(parent)}] {point.name} {point.detail}")
        world._check(list(world.models), f"{point.name} of a dispatch", world.models)
        if point.name == at:
            break
    for fd in sorted(fds):
        with contextlib.suppress(OSError):
            os.close(fd)
    world.trace.append(f"-:creator[{M.name(parent)}] CRASH")
    world._check(list(world.models), "crash of a dispatch before its commit point",
                 world.models)


# ------------------------------------------------------------ the machine

CRASH_WINDOWS: tuple[str, ...] = (
    Point.DRAIN_RENAMED,  # a delivered entry renamed, not committed (R-DRAIN-2)
    Point.TRANSCRIPT_RENAMED,  # an executor's entry renamed, not committed (R-TR-3)
    Point.HOP_ASSISTANT_COMMITTED,  # inside a tool window, no tool run yet (R-STEP-2)
    Point.HOP_TOOL_RAN,  # inside a tool window, the tool ran, no result (R-STEP-2)
    Point.HOP_WARRANT,  # delivered, no model entry yet (R-SCAN-10)
    Point.DEPOSIT_TEMP_WRITTEN,  # a dot-temp left (R-DEP-9)
    Point.DEPOSIT_PUBLISHED,  # a result published, its returned mark not moved (R-DEP-8)
    Point.PROBE_ACQUIRED,  # a writer's probe holding the lock (R-PROBE-3)
    Point.TERMINAL_RECIPIENT,  # a terminal entry whose reply is not yet deposited
)
"""Crash windows the protocol is built around. A crash is aimed at them (swarm-style
bias) in two ways: at a named window (the actor may never pass it: then it ends
uncrashed), or at the n-th window the actor passes from now on (it crashes in one
whenever it passes any); otherwise at any other point, or where the actor is."""

WINDOWS_AHEAD = 8
"""How many crash windows a crash aimed at "the n-th window from now" may skip: a hop
chain that runs a tool and then answers passes about a dozen."""

SCAN_DURING: tuple[str, ...] = (Point.HOP_WARRANT, Point.HOP_ASSISTANT_COMMITTED,
                                 Point.HOP_TOOL_RAN, Point.DRAIN_RENAMED,
                                 Point.TRANSCRIPT_RENAMED)
"""Points at which a driver holds its lock with work in hand: a scan there must leave it
alone (R-SCAN-6), a writer's probe there reads busy and the driver's release must launch
for the writer's mail (R-PROBE-3, R-REL-1)."""

HELD_AHEAD = 2
"""How many of those points a driver held mid-work may pass first (its first, second or
third: a chain that runs a tool passes each of them again)."""

KINDS: tuple[str, ...] = ("dispatch", "message", "answer", "noop", "final")
"""What a scripted model reply may be: a dispatch, a message to a slot, a message back to
whoever wrote last (an answer: conversations, replies to replies), a no-op tool, a final
response."""

CRASH_AT: tuple[str, ...] = (*CRASH_WINDOWS, "",
                             *sorted(p for p in Point.ALL if p not in UNCHECKED))

Aim = tuple[str, int | str]
"""Where a crash lands: ``("ahead", n)``, in the n-th crash window the actor passes from
now on, or ``("at", point)``, right after it next passes ``point`` ("": where it is)."""

AIMS: hst.SearchStrategy[Aim] = hst.one_of(
    hst.integers(0, WINDOWS_AHEAD).map(lambda n: ("ahead", n)),
    hst.sampled_from(CRASH_WINDOWS).map(lambda p: ("at", p)),
    hst.sampled_from(CRASH_AT).map(lambda p: ("at", p)),
)


TOOL_DRAWS: hst.SearchStrategy[str] = hst.one_of(hst.sampled_from(REFUSED),
                                                 hst.sampled_from(CALL_NAMES))
"""The call a scripted no-op makes: half the time one the tool must refuse whole
(``worktools.REFUSED``; first, so the simplest call Hypothesis tries is one), else any
call of the vocabulary."""


def _has_work(v: AgentView) -> bool:
    """Whether a driver of the agent seen as ``v`` finds something to do: mail, a model
    call due, an open tool window, an entry not yet committed."""
    return bool(v.inbox or v.uncommitted or v.stray_final or v.stray_step or v.call_due
                or v.window == "open")


KILLED_PER_PROGRAM = 1
"""Killed dispatches one program plays at most: each costs a worktree and a commit and
changes nothing any reader sees (``CREATION``), so more of them crowd out the rules
that move the protocol; every program's one lands at a point of its own."""


class RefinementMachine(RuleBasedStateMachine):
    """Rules named as the actions of the protocol's world; Hypothesis interleaves them."""

    def __init__(self) -> None:
        super().__init__()
        self._tmp = tempfile.TemporaryDirectory(prefix="lernie-refine-")
        self.world = World(Path(self._tmp.name))
        self.killed = 0  # killed dispatches so far (``KILLED_PER_PROGRAM``)

    def teardown(self) -> None:
        # Hypothesis runs the teardown also when a rule raised (from a ``finally``): then
        # that divergence is the verdict, and the liveness check is not run over it. Nor
        # over an example Hypothesis abandoned (its control exception in flight, such as
        # the ``StopTest`` of a program that ran out of room to draw): Hypothesis turns
        # whatever the teardown raises then into that exception again and stores nothing,
        # so a check there would run the world to its end for a verdict nobody gets.
        ended_early = sys.exc_info()[1] is not None
        try:
            if not ended_early:
                self.world.run_all()
                if self.world.graveyard:
                    self.world.scan()  # recovery after a crash is the sweep's job
                    self.world.run_all()
                left = self.world.stranded()
                if left:
                    raise Divergence("work the model says must be done is stranded: "
                                     + "; ".join(left))
                try:
                    self.world.oracle.none_left(None, "after the run")
                except ToolMismatch as exc:
                    raise Divergence(str(exc)) from None
                self._aim()
        finally:
            self.world.close()
            for act in list(self.world.actors.values()):
                _bury(act.gen)
                for fd in act.fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._tmp.cleanup()

    def _aim(self) -> None:
        """Hypothesis's targeted search (``target``): runs with more traffic between agents
        (tool calls run, results published by drivers) and with crashes in more distinct
        crash windows score higher, and the search mutates the best ones it has seen."""
        traffic = sum(1 for row in self.world.trace if ":driver[" in row and (
            f" {Point.HOP_TOOL_RAN} " in row or f" {Point.DEPOSIT_PUBLISHED} " in row))
        windows = {a.points[-1].name for a in self.world.graveyard
                   if a.points and a.points[-1].name in CRASH_WINDOWS}
        target(float(traffic), label="traffic between agents")
        target(float(len(windows)), label="distinct crash windows crashed in")

    def _existing(self) -> list[int]:
        return [a for a, aid in enumerate(self.world.ids) if aid is not None]

    @precondition(lambda self: bool(self._existing()))
    @rule(data=hst.data())
    def operator_messages(self, data: hst.DataObject) -> None:
        """`lernie message` to an agent (half the time two at once, racing for one
        number: ``World.messages_at_once``); half the time while the agent's own driver (a
        running one, or a pending launch started for it) holds its lock with work in
        hand: the writers then run through, find the lock busy, and the driver's release
        must launch for the mail (R-PROBE-3, R-REL-1)."""
        a = data.draw(hst.sampled_from(self._existing()), label="agent")
        held = data.draw(hst.booleans(), label="while driven") and self._hold_mid_work(
            data, a) is not None
        writers = (self.world.messages_at_once(a)
                   if data.draw(hst.booleans(), label="a second at once")
                   else (self.world.operator_message(a),))
        if held:
            for writer in writers:
                self._run_out(writer)

    def _run_out(self, act: RealActor) -> None:
        """Run ``act`` (a writer) through to its end."""
        for _ in range(60):
            if act.key not in self.world.actors:
                break
            self.world.step(act)

    @initialize(data=hst.data())
    def operator_prompts(self, data: hst.DataObject) -> None:
        """Every run begins with `lernie prompt` (the model's root exists from the start:
        before the prompt creates it, it abstracts to an idle root). First each agent
        slot gets an opening script (swarm-style: every run has its own mix of agents
        that dispatch, message each other, call tools or just answer), so the exchanges
        the protocol's rules are about (replies to siblings, results of children, tool
        windows, budgets) need no luck with later rules. (Hypothesis itself leaves a
        random set of rules out of each run: swarm testing over rules.) The root's script
        opens with up to two dispatches, so most runs have children to talk to, and the
        run's step budget is drawn (``STEP_BUDGETS``)."""
        budget = data.draw(hst.sampled_from(STEP_BUDGETS), label="step budget")
        self.world.config = dataclasses.replace(self.world.config, step_budget=budget)
        opening = data.draw(hst.integers(0, 2), label="dispatches opening P's script")
        for _ in range(opening):
            self.world.script(0, "dispatch")
        for a in range(len(SCOPE.parents)):
            self._script(data, a, 0)
        self.world.operator_message(0)

    def _script(self, data: hst.DataObject, a: int, least: int) -> None:
        slots = range(len(SCOPE.parents))
        script = data.draw(hst.lists(hst.sampled_from(KINDS), min_size=least, max_size=4),
                           label=f"script of {M.name(a)}")
        for kind in script:
            # the model's agents never message themselves (its message tool names
            # another agent), so neither does the script
            target = (data.draw(hst.sampled_from([t for t in slots if t != a]), label="to")
                      if kind == "message" else NOBODY)
            tool = (data.draw(TOOL_DRAWS, label="tool") if kind == "noop" else LOOK)
            self.world.script(a, kind, target, tool)

    @precondition(lambda self: bool(self.world.actors)
                  or self.world.started < len(self.world.launcher.launches))
    @rule()
    def settle(self) -> None:
        """Every live actor and pending launch runs to its end, in turns (a quiet spell
        between phases of a program)."""
        self.world.run_all()

    @precondition(lambda self: bool(self.world.actors)
                  or self.world.started < len(self.world.launcher.launches))
    @rule(data=hst.data())
    def settle_killing_one(self, data: hst.DataObject) -> None:
        """A quiet spell in which one driver is killed: the first (or second) to pass a
        chosen crash window, or the one that passes the spell's n-th crash window, whichever
        it is (a kill that always lands, in the windows as often as drivers pass them). Most
        of a program's driving happens in quiet spells, where no other rule can crash
        anyone."""
        at, n = data.draw(hst.one_of(
            hst.tuples(hst.sampled_from(CRASH_WINDOWS), hst.integers(0, 1)),
            hst.tuples(hst.just("ahead"), hst.integers(0, WINDOWS_AHEAD))), label="kill")
        self.world.run_all(kill=(CRASH_WINDOWS if at == "ahead" else at, n))

    @precondition(lambda self: self.world.started < len(self.world.launcher.launches))
    @rule(data=hst.data())
    def start_launched_driver(self, data: hst.DataObject) -> None:
        w = self.world
        waiting = range(len(w.launcher.launches) - w.started)
        # a launch whose agent has work first (the others find nothing to do, and a kill
        # aimed at a crash window would find none); the rest wait for settle and teardown
        view = w.real_view()
        busy = [n for n in waiting
                if _has_work(view[w.index(w.launcher.launches[w.started + n][1])])]
        launch = data.draw(hst.sampled_from(busy or list(waiting)), label="launch")
        act = w.start_launch(launch)
        # a driver killed in one of the protocol's crash windows (or left running)
        aim = data.draw(hst.one_of(hst.none(), AIMS), label="kill")
        if act is not None and aim is not None:
            self._crash_aimed(act.key, aim)

    @precondition(lambda self: bool(self.world.actors))
    @rule(data=hst.data())
    def step(self, data: hst.DataObject) -> None:
        """One actor passes its next ``points`` protocol points (or ends)."""
        actor = data.draw(hst.sampled_from(sorted(self.world.actors)), label="actor")
        points = data.draw(hst.integers(1, 12), label="points")
        for _ in range(points):
            act = self.world.actors.get(actor)
            if act is None:
                break
            self.world.step(act)

    @precondition(lambda self: bool(self.world.actors)
                  or self.world.started < len(self.world.launcher.launches))
    @rule(data=hst.data())
    def crash(self, data: hst.DataObject) -> None:
        """SIGKILL an actor where it is, or first run it on until it passes a chosen
        point or a number of crash windows (between a rename and its commit, inside a
        tool window, holding a probe's lock, ...). Half the time the actor is a driver:
        a running one, or a pending launch started for it (most launches are otherwise
        run by ``settle`` and the teardown, where nothing crashes them)."""
        act = self._driver_at_work(data) if data.draw(hst.booleans(), label="a driver") \
            else None
        if act is not None:
            actor = act.key
        elif self.world.actors:
            actor = data.draw(hst.sampled_from(sorted(self.world.actors)), label="actor")
        else:
            return
        self._crash_aimed(actor, data.draw(AIMS, label="aim"))

    def _run_windows(self, key: int, windows: int,
                     among: tuple[str, ...] = CRASH_WINDOWS) -> RealActor | None:
        """Run actor ``key`` until it has passed ``windows + 1`` of the points ``among``
        (crash windows, unless told) or ends; the live actor."""
        act = self.world.actors.get(key)
        seen = 0
        for _ in range(200):
            if act is None:
                break
            point = self.world.step(act)
            act = self.world.actors.get(key)
            if point is not None and point.name in among:
                seen += 1
                if seen > windows:
                    break
        return act

    def _agent_of(self, choice: tuple[str, int]) -> int:
        """The agent of a running driver ``("driver", key)`` or of the pending launch
        ``("launch", n)``."""
        w = self.world
        kind, k = choice
        if kind == "driver":
            return w.actors[k].agent
        return w.index(w.launcher.launches[w.started + k][1])

    def _driver_at_work(self, data: hst.DataObject,
                        agent: int | None = None) -> RealActor | None:
        """A driver (of ``agent``, or of anyone) that is running, or a pending launch
        started for it, one whose agent has work in hand first (mail or work due,
        R-SCAN-10); ``None`` when there is none, or the launch found its lock busy."""
        w = self.world
        running = [("driver", k) for k, a in sorted(w.actors.items())
                   if a.kind == "driver" and agent in (None, a.agent)]
        waiting = [("launch", n) for n, (_, aid) in enumerate(w.launcher.launches[w.started:])
                   if agent in (None, w.index(aid))]
        if waiting:
            view = w.real_view()
            busy = [c for c in waiting if _has_work(view[w.index(
                w.launcher.launches[w.started + c[1]][1])])]
            waiting = busy or waiting
        choices = running + waiting
        if not choices:
            return None
        # the agent first, then one of its drivers: an agent with many launches
        # recorded (the root, written to by everyone) is not chosen more often
        owners = sorted({self._agent_of(c) for c in choices})
        who = data.draw(hst.sampled_from(owners), label="agent driven")
        kind, k = data.draw(hst.sampled_from([c for c in choices
                                              if self._agent_of(c) == who]), label="driver")
        return w.start_launch(k) if kind == "launch" else w.actors[k]

    def _hold_mid_work(self, data: hst.DataObject, agent: int | None = None) -> RealActor | None:
        """A driver (of ``agent``, or of anyone: ``_driver_at_work``) holding its lock with
        work in hand, run on until it has passed its first, second or third
        ``SCAN_DURING`` point (inside its model call, a tool window, a delivery or an
        entry not yet committed). ``None`` when there is no such driver or it ends first."""
        for _ in range(3):  # a driver that ends first (nothing to do) hands on to another
            act = self._driver_at_work(data, agent)
            if act is None:
                if not self._existing_driver_or_launch(agent):
                    return None
                continue
            ahead = data.draw(hst.integers(0, HELD_AHEAD), label="held at")
            held = self._run_windows(act.key, ahead, SCAN_DURING)
            if held is not None:
                return held
        return None

    def _existing_driver_or_launch(self, agent: int | None) -> bool:
        w = self.world
        return any(a.kind == "driver" and agent in (None, a.agent) for a in w.actors.values()) \
            or any(agent in (None, w.index(aid)) for _, aid in w.launcher.launches[w.started:])

    def _crash_aimed(self, key: int, aim: Aim) -> None:
        _, where = aim
        act = (self._run_windows(key, where) if isinstance(where, int)
               else self.world.run_to(key, where))
        if act is not None:
            self.world.crash(act)

    @rule(data=hst.data())
    def scan(self, data: hst.DataObject) -> None:
        """`lernie scan`; half the time while a driver (a running one, or a pending launch
        started for it: a child's as often as the root's) holds its lock with work in hand,
        such as inside its model call (the sweep must leave it alone, R-SCAN-6)."""
        if data.draw(hst.booleans(), label="aim"):
            if not self._existing_driver_or_launch(None) and self._existing():
                # nobody to hold: an operator's message first gives an agent work and
                # its writer a launch (R-PROBE-1)
                a = data.draw(hst.sampled_from(self._existing()), label="agent given work")
                self._run_out(self.world.operator_message(a))
            self._hold_mid_work(data)
        self.world.scan()

    @precondition(lambda self: self._existing_driver_or_launch(None))
    @rule(data=hst.data())
    def stop(self, data: hst.DataObject) -> None:
        """`lernie stop` of an agent whose driver is running (or a pending launch started
        for it): the driver is first run on to its next check point (the model lets a
        stop land only there: setting the flag earlier reads the same), then stopped."""
        w = self.world
        act = self._driver_at_work(data)
        if act is None:
            return
        key = act.key
        for _ in range(60):
            act = w.actors.get(key)
            if act is None or w.stoppable():
                break
            w.step(act)
        w.past_tool_results()
        if w.stoppable():
            agent = data.draw(hst.sampled_from(w.stoppable()), label="agent")
            w.stop(agent)

    @rule(data=hst.data())
    def model_replies(self, data: hst.DataObject) -> None:
        """Script the next replies of the agent in one slot (existing or not yet), in place
        of those scripted and not yet given (so a slot's script stays a few replies long and
        agents still come to answer): a final answer, a no-op tool, a message to another
        slot, an answer to whoever wrote last, a dispatch."""
        a = data.draw(hst.sampled_from(range(len(SCOPE.parents))), label="agent")
        self.world.model.queue.pop(a, None)
        self._script(data, a, 1)

    # -------------------------------------------------------- killed creations (R-PROBE-6)

    @precondition(lambda self: self.killed < KILLED_PER_PROGRAM and bool(self.world.ids[0])
                  and AGENT_REF_PREFIX + str(self.world.ids[0]) in read_refs(
                      self.world.ws.repo_git, (AGENT_REF_PREFIX,)))
    @rule(data=hst.data())
    def killed_dispatch(self, data: hst.DataObject) -> None:
        """`lernie dispatch` of a child of P killed at one of its points before its commit
        point (``CREATION``): nothing is seen to change, and the next scan removes the
        remains (``no_remains``). A prompt of the root is crashed at the same points by the
        ``crash`` rule (``CRASH_AT`` holds every point)."""
        at = data.draw(hst.sampled_from([p for p in CREATION if p != Point.DEPOSIT_COLLIDED]),
                       label="killed at")
        self.killed += 1
        killed_dispatch(self.world, 0, at)
