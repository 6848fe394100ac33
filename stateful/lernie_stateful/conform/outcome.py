"""Outcome conformance: an implementation's final states against the model's reachable ones.

Theory of operation. A *program* is a short list of operator inputs: ``prompt`` (a root
created by name with a first message), ``message`` (to an agent by name), ``scan``,
``stop``, ``kill`` (after a delay, SIGKILL every process holding the agent's executor lock,
found in ``/proc/locks``; or, aimed with ``when = "delivered"``, the moment a deposit leaves
the agent's inbox, see :mod:`~lernie_stateful.conform.watch`) and ``wait`` (for
quiescence). A message may carry ``pad`` bytes of filler after its body (tens of MB make a
copying delivery slow enough to die in; it is sent from a file). Message bodies script the
deterministic model with the directives of docs/models.md (``@message``, ``@dispatch``,
``@tools``, ``@sleep``), so what the model "decides" is part of the program. Consecutive
inputs marked ``with_previous`` run at once (racing writers).

The kit runs the program through the adapter's verb templates as subprocesses, waits for
quiescence (no inbox lock held, no process naming the workspace; a timeout is itself a
finding), and abstracts the disk into an :data:`Observation`: for every agent (by the
program's names ``P``, ``C``, ``S``) the multiset of delivered entries by (sender, kind),
the pending deposits by (sender, kind), how many final responses it gave, whether work is
due (a model call due, or a tool window open or buried), how many delivered entries are
not committed, and whether a returned or a stopped/budget mark is at its branch tip.

The model side: one bounded search over ``lernie_spec.model`` from its initial state with
the program's inputs as its only external steps, in program order (an input starts once
the previous operator command's process is done; a ``wait`` needs a quiescent model state;
a ``stop`` or ``kill`` may take effect at any later moment or never, as a real signal may
find nobody). The model's own choices are bounded by the program's scripts: as many tool
steps as directives, sends only to agents a directive names, no budget exhaustion or
adapter errors. Every quiescent state at the end gives one observation; the
implementation's must be one of them. Otherwise the report shows the program, the
implementation's observation, the nearest model observation (fewest differing facts) and
the difference. The model treats an aimed kill like any kill: it may land at any later
moment or never, a superset of the moment the kit aims at.

Besides the model, the kit checks what it knows itself: every message from the user found
in a transcript or an inbox carries, after its frontmatter, exactly the bytes of one the
program sent to that agent (:func:`body_faults`); a torn copy is a failure of its own.
And it accounts for every message a writer accepted (exit 0): each is delivered or pending
exactly once, byte for byte (:func:`accounting_faults`, SPEC I-5); a lost or doubled one
fails the program even where the final state is one the model reaches.

Deliberately not compared with the model: message bodies and bytes, entry numbering and
commit structure (the audit does), the order of deliveries, who launched whom, the last
prompter and the debt window (their effects show as the deliveries they cause), revival
records and logs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import tomllib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from lernie_spec import model as M
from lernie_spec.model import NOBODY, USER, Action, Role, Scope, State

from lernie_stateful import procfs
from lernie_stateful.conform.adapter import Adapter
from lernie_stateful.conform.quiescence import Failed, wait_quiescent
from lernie_stateful.conform.watch import DeliveryKill, WatchError

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy
from lernie_stateful.refine_view import (
    DEPOSIT_NAME,
    ENTRY_NAME,
    FRONTMATTER,
    kind_of,
    read_refs,
    tracked_paths,
    transcript_facts,
)

NAMES = ("P", "C", "S")
PARENTS = (NOBODY, 0, NOBODY)
"""The kit's world: roots ``P`` and ``S``; ``C`` is the child ``P`` may dispatch."""

VERBS = ("prompt", "message", "scan", "stop", "kill", "wait")
WHEN = ("delivered",)
MAX_PAD = 256 << 20
SEARCH_LIMIT = 300_000
"""States the model search may visit for one program; beyond it, a program whose outcome
the search had not listed is not applicable (neither passed nor failed)."""


class ProgramError(Exception):
    """A program the kit cannot run (bad data file)."""


@dataclass(frozen=True)
class Input:
    verb: str
    agent: str = ""
    body: str = ""
    after: float = 0.0  # kill / stop: seconds to wait before acting
    with_previous: bool = False  # start together with the input before it
    when: str = ""  # kill: "delivered" = the moment a deposit leaves the agent's inbox
    pad: int = 0  # message: filler bytes appended to the body (a large message)

    def show(self) -> str:
        words = [self.verb] + ([self.agent] if self.agent else [])
        if self.body:
            words.append(repr(self.body))
        if self.pad:
            words.append(f"+ {self.pad:,} bytes")
        if self.after:
            words.append(f"after {self.after:g}s")
        if self.when:
            words.append(f"when {self.when}")
        return ("  & " if self.with_previous else "  ") + " ".join(words)

    def content(self) -> bytes:
        """The bytes the input sends: the body, then ``pad`` bytes of filler lines (none
        starting with a directive's ``@``, so the script is the body's alone)."""
        return self.body.encode("utf-8") + filler(self.pad)


@dataclass(frozen=True)
class Program:
    id: str
    inputs: tuple[Input, ...]

    def show(self) -> str:
        return "\n".join([f"program {self.id}:"] + [i.show() for i in self.inputs])

    def one_line(self) -> str:
        return " ; ".join(i.show().strip() for i in self.inputs)

    def as_toml(self) -> str:
        rows = []
        for i in self.inputs:
            parts = [f'verb = "{i.verb}"']
            if i.agent:
                parts.append(f'agent = "{i.agent}"')
            if i.body:
                parts.append("body = " + _toml_str(i.body))
            if i.after:
                parts.append(f"after = {i.after}")
            if i.with_previous:
                parts.append("with_previous = true")
            if i.when:
                parts.append(f'when = "{i.when}"')
            if i.pad:
                parts.append(f"pad = {i.pad}")
            rows.append("  { " + ", ".join(parts) + " },")
        return f'[[program]]\nid = "{self.id}"\nsteps = [\n' + "\n".join(rows) + "\n]\n"


_FILL_LINE = b"filler of a large message, no directive, sent by the conformance kit ...\n"


def filler(size: int) -> bytes:
    """``size`` bytes of filler: a newline, then repeated text lines."""
    if size <= 0:
        return b""
    line = b"\n" + _FILL_LINE * (size // len(_FILL_LINE) + 1)
    return line[:size]


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def check_program(p: Program) -> None:
    """The program's shape rules: known verbs and names, roots prompted before use."""
    prompted: set[str] = set()
    for i in p.inputs:
        if i.verb not in VERBS:
            raise ProgramError(f"program {p.id}: unknown verb {i.verb!r}")
        if i.verb in ("prompt", "message", "stop", "kill") and i.agent not in NAMES:
            raise ProgramError(f"program {p.id}: agent must be one of {', '.join(NAMES)}")
        if i.verb == "prompt":
            if PARENTS[NAMES.index(i.agent)] != NOBODY or i.agent in prompted:
                raise ProgramError(f"program {p.id}: prompt creates a root once ({i.agent})")
            prompted.add(i.agent)
        if i.verb == "message" and i.agent != "C" and i.agent not in prompted:
            raise ProgramError(f"program {p.id}: message to {i.agent} before its prompt")
        if i.when and (i.verb != "kill" or i.when not in WHEN):
            raise ProgramError(f"program {p.id}: `when` is for kill, one of "
                               f"{', '.join(WHEN)}")
        if i.pad and (i.verb != "message" or not 0 < i.pad <= MAX_PAD):
            raise ProgramError(f"program {p.id}: `pad` is for message, 1 to {MAX_PAD:,} bytes")
    if sum(i.body.count("@dispatch") for i in p.inputs) > 1:
        raise ProgramError(f"program {p.id}: one @dispatch at most (the world has one child)")


def load_programs(text: str) -> list[Program]:
    out = []
    for raw in tomllib.loads(text).get("program", []):
        steps = tuple(Input(str(s["verb"]), str(s.get("agent", "")), str(s.get("body", "")),
                            float(s.get("after", 0.0)), bool(s.get("with_previous", False)),
                            str(s.get("when", "")), int(s.get("pad", 0)))
                      for s in raw.get("steps", []))
        p = Program(str(raw["id"]), steps)
        check_program(p)
        out.append(p)
    return out


def regression_programs() -> list[Program]:
    root = resources.files("lernie_stateful.conform").joinpath("programs")
    out: list[Program] = []
    for f in sorted((p for p in root.iterdir() if p.name.endswith(".toml")),
                    key=lambda p: p.name):
        out += load_programs(f.read_text(encoding="utf-8"))
    return out


# ------------------------------------------------------------------ observations

AgentObs = tuple[tuple[tuple[str, str], ...],  # delivered (sender, kind), sorted
                 tuple[tuple[str, str], ...],  # pending (sender, kind), sorted
                 int,  # final responses given
                 bool,  # work due
                 int,  # delivered entries not committed
                 bool,  # returned mark at the tip
                 bool]  # stopped / budget-exhausted mark at the tip
Observation = tuple[tuple[str, AgentObs], ...]
FIELDS = ("delivered", "pending", "answers", "work due", "uncommitted", "returned mark at tip",
          "parked mark at tip")


def _empty(o: AgentObs) -> bool:
    return not (o[0] or o[1] or o[2] or o[3] or o[4] or o[5] or o[6])


def _obs(agents: Mapping[str, AgentObs]) -> Observation:
    return tuple(sorted((a, o) for a, o in agents.items() if not _empty(o)))


def _who(i: int) -> str:
    return "user" if i == USER else NAMES[i] if 0 <= i < len(NAMES) else "?"


def model_observation(st: State) -> Observation:
    out: dict[str, AgentObs] = {}
    for a, ag in enumerate(st.agents):
        if not ag.exists:
            continue
        h = ag.history.value
        delivered = tuple(sorted((_who(e.sender), e.deposit_kind) for e in h.entries
                                 if e.kind is M.EntryKind.DELIVERED))
        answers = sum(1 for e in h.entries if e.kind is M.EntryKind.MODEL and not e.tool_uses)
        out[NAMES[a]] = (delivered, tuple(sorted((_who(f.sender), f.kind) for f in ag.inbox)),
                         answers, ag.call_due or ag.window is not M.Window.CLOSED,
                         len(ag.uncommitted), ag.returned_at_tip, ag.parked_at_tip)
    return _obs(out)


def _history_key(st: State, cache: dict[int, tuple[object, object]]) -> tuple[object, ...]:
    """What the observation reads from the ghost history (states merged by the model's
    equality may differ in it). A transition that changes an agent's history makes a new
    ghost, so the key of each ghost is computed once (``cache``, by identity; the ghost is
    kept in it, so its identity is never reused)."""
    out = []
    for ag in st.agents:
        hit = cache.get(id(ag.history))
        if hit is None:
            h = ag.history.value
            key = (tuple(sorted((e.sender, e.deposit_kind) for e in h.entries
                                if e.kind is M.EntryKind.DELIVERED)),
                   sum(1 for e in h.entries if e.kind is M.EntryKind.MODEL and not e.tool_uses))
            hit = cache[id(ag.history)] = (ag.history, key)
        out.append(hit[1])
    return tuple(out)


# ------------------------------------------------------------------ the model side

@dataclass
class Search:
    outcomes: set[Observation] = field(default_factory=set)
    nodes: int = 0
    complete: bool = True


def _scope(p: Program) -> Scope:
    allow = allowances(p)
    tools = sum(map(sum, allow))
    sends = sum(sum(a[1:]) for a in allow)
    count = Counter(i.verb for i in p.inputs)
    prompted = {i.agent for i in p.inputs if i.verb == "prompt"}
    # A root exists in the model from the start (R-PROBE-5: its prompt is then a message);
    # one the program never prompts does not exist at all.
    initial = tuple(PARENTS[a] == NOBODY and NAMES[a] in prompted for a in range(len(NAMES)))
    return Scope(parents=PARENTS, initial=initial,
                 messages=count["prompt"] + count["message"], advances=0,
                 stops=count["stop"], scans=count["scan"], crashes=99, tools=tools,
                 sends=sends, exhaust=0, max_procs=3, max_seq=99, launch_cap=1, errors=0)


Allowance = tuple[tuple[int, ...], ...]
"""Per agent: (noop tool steps, a message to each agent by index ..., dispatches) its
scripts may still make."""


def _script_lines(body: str, me: int, acc: list[list[int]]) -> None:
    """Count the directives of a body delivered to agent ``me`` (docs/models.md), following a
    message's or a dispatch's text to the agent that will read it."""
    for line in body.splitlines():
        words = line.strip().split(" ", 2)
        if words[0] == "@tools" and len(words) > 1 and words[1].isdigit():
            acc[me][0] += int(words[1])
        elif words[0] == "@message" and len(words) > 1 and words[1] in NAMES:
            to = NAMES.index(words[1])
            acc[me][1 + to] += 1
            _script_lines(words[2] if len(words) > 2 else "", to, acc)
        elif words[0] == "@dispatch":
            rest = line.strip().split(" ", 1)[1] if " " in line.strip() else ""
            if rest.startswith("name="):
                rest = rest.split(" ", 1)[1] if " " in rest else ""
            acc[me][1 + len(NAMES)] += 1
            child = next(c for c, par in enumerate(PARENTS) if par == me) \
                if me in PARENTS else me
            _script_lines(rest, child, acc)


def allowances(p: Program) -> Allowance:
    acc = [[0] * (len(NAMES) + 2) for _ in NAMES]
    for i in p.inputs:
        if i.verb in ("prompt", "message"):
            _script_lines(i.body, NAMES.index(i.agent), acc)
    return tuple(tuple(a) for a in acc)


def _spend(allow: Allowance, a: int, text: str) -> Allowance | None:
    """The allowance after agent ``a`` takes the model step ``text``; None if no script
    of the program makes it. A noop may also be a send that failed (its target absent)."""
    mine = list(allow[a])
    if text.endswith("(no protocol effect)"):
        spend = next((k for k, v in enumerate(mine) if v), None)
    elif " message " in text:
        spend = 1 + NAMES.index(text.rsplit(" ", 1)[-1])
    elif " dispatch " in text:
        spend = 1 + len(NAMES)
    else:
        return allow
    if spend is None or not mine[spend]:
        return None
    mine[spend] -= 1
    return (*allow[:a], tuple(mine), *allow[a + 1:])


def _holds(st: State, i: int, a: int) -> bool:
    q = st.procs[i]
    return (q.lease and q.agent == a) or q.probe_on == a


def _operator_busy(st: State) -> bool:
    return any(q.role is Role.WRITER or q.role is Role.SCANNER for q in st.procs)


def _quiet(st: State) -> bool:
    return not st.procs and not any(ag.pending_launches or ag.forked_holder
                                    for ag in st.agents)


Node = tuple[State, int, frozenset[tuple[str, int]], Allowance]

_LOCAL = frozenset({M.Pc.COMMIT_ENTRY, M.Pc.MODEL_STEP, M.Pc.TOOL_RESULT, M.Pc.SETTLE_WINDOW,
                    M.Pc.RECOVER_STRAYS})
"""A partial-order reduction. These steps of a lease holder read and write only its own
agent's transcript facts, which no other process reads or writes while the lease is held
(the sweep skips a locked agent; writers touch the inbox, which these steps do not read),
and the multiset of deposits in flight, whose additions and removals commute. Taking such a
step first, alone, loses no quiescent outcome, as long as no stop or kill is armed (those
read the holder's program counter; then every interleaving is explored)."""


def reachable(p: Program, limit: int = SEARCH_LIMIT) -> Search:
    """Every observation of a quiescent model state reachable with the program's inputs."""
    prof = M.Profile()
    scope = _scope(p)
    n = len(p.inputs)
    start: Node = (M.initial(scope), 0, frozenset(), allowances(p))
    seen: set[tuple[object, ...]] = set()
    cache: dict[int, tuple[object, object]] = {}
    stack: list[Node] = [start]
    out = Search()
    while stack:
        st, k, armed, allow = stack.pop()
        key = (st, k, armed, allow, _history_key(st, cache))
        if key in seen:
            continue
        seen.add(key)
        out.nodes += 1
        if out.nodes > limit:
            out.complete = False
            break
        quiet = _quiet(st)
        if k == n and quiet:
            out.outcomes.add(model_observation(st))
        local = None if armed else next(
            (i for i, q in enumerate(st.procs) if q.pc in _LOCAL and q.lease), None)
        if local is not None:  # a step no other process can see: take it first (see _LOCAL)
            for step, s2 in M.PC[st.procs[local].pc](st, prof, scope, local):
                if step.action is Action.CRASH:  # a crash is a kill, and none is armed
                    continue
                after = allow
                if step.action is Action.MODEL_TOOL_USE:
                    spent = _spend(allow, st.procs[local].agent, step.text)
                    if spent is None:
                        continue
                    after = spent
                stack.append((s2, k, armed, after))
            continue
        # the next input
        if k < n:
            inp = p.inputs[k]
            ready = inp.with_previous or not _operator_busy(st)
            if ready:
                stack += [(s2, k2, armed2, allow) for s2, k2, armed2
                          in _apply_input(st, k, armed, inp, prof, scope)]
        # internal steps and armed signals
        for step, s2 in M.successors(st, prof, scope):
            if step.external:
                if step.action is Action.OPERATOR_STOP:
                    for tag, a in armed:
                        if tag == "stop" and step.text.endswith(f"lernie stop {NAMES[a]}"):
                            stack.append((s2, k, armed - {(tag, a)}, allow))
                continue
            if step.action is Action.CRASH:
                for tag, a in armed:
                    if tag == "kill" and _holds(st, step.actor, a):
                        stack.append((s2, k, armed - {(tag, a)}, allow))
                continue
            after = allow
            if step.action is Action.MODEL_TOOL_USE:
                spent = _spend(allow, st.procs[step.actor].agent, step.text)
                if spent is None:
                    continue
                after = spent
            stack.append((s2, k, armed, after))
    return out


def _apply_input(st: State, k: int, armed: frozenset[tuple[str, int]], inp: Input,
                 prof: M.Profile, scope: Scope) -> list[tuple[State, int,
                                                              frozenset[tuple[str, int]]]]:
    out: list[tuple[State, int, frozenset[tuple[str, int]]]] = []
    if inp.verb in ("prompt", "message"):
        want = f"user: lernie message {inp.agent}"
        out += [(s2, k + 1, armed) for step, s2 in M.ext_message(st, prof, scope)
                if step.text == want]
        if not out and inp.verb == "message" and not st.agents[NAMES.index(inp.agent)].exists:
            out.append((st, k + 1, armed))  # a message to an agent not (yet) there: refused
    elif inp.verb == "scan":
        out += [(s2, k + 1, armed) for _, s2 in M.ext_scan(st, prof, scope)]
    elif inp.verb in ("stop", "kill"):
        out.append((st, k + 1, armed | {(inp.verb, NAMES.index(inp.agent))}))
    elif inp.verb == "wait" and _quiet(st):
        out.append((st, k + 1, frozenset()))
    return out


# ------------------------------------------------------------------ the implementation



def agent_ids(ws: Path, adapter: Adapter) -> dict[str, str]:
    """Program name -> agent id, from each agent's ``name`` file (the kit names them all)."""
    out: dict[str, str] = {}
    root = ws / adapter.layout.agents
    with contextlib.suppress(OSError):
        for aid in sorted(os.listdir(root)):
            with contextlib.suppress(OSError):
                nm = (root / aid / "name").read_text(encoding="utf-8").strip()
                if nm in NAMES and nm not in out:
                    out[nm] = aid
    return out


def real_observation(ws: Path, adapter: Adapter) -> Observation:
    """The observation read from the workspace's files and refs alone."""
    lay = adapter.layout
    ids = agent_ids(ws, adapter)
    index = {aid: NAMES.index(nm) for nm, aid in ids.items()}

    def who(sender: str) -> int:
        return USER if sender == lay.user else index.get(sender, 99)

    refs = read_refs(ws / lay.repo, (lay.agent_ref_prefix, lay.mark_ref_prefix))
    out: dict[str, AgentObs] = {}
    for nm, aid in ids.items():
        a = NAMES.index(nm)
        tip = refs.get(lay.agent_ref_prefix + aid)
        pend: list[tuple[str, str]] = []
        inbox = ws / lay.inbox / aid
        with contextlib.suppress(OSError):
            for f in os.listdir(inbox):
                m = DEPOSIT_NAME.match(f)
                if m and not f.startswith("."):
                    text = (inbox / f).read_bytes().decode("utf-8", "replace")
                    pend.append((_who(who(m.group(1))), kind_of(text)))
        wt = ws / lay.agents / aid
        mdir = wt / lay.messages
        files = sorted((f for f in (os.listdir(mdir) if mdir.is_dir() else [])
                        if ENTRY_NAME.match(f)), key=lambda f: int(f.split("-", 1)[0]))
        tracked = tracked_paths(wt) if (wt / ".git").exists() else set()
        entries: list[tuple[str, object]] = []
        delivered: list[tuple[str, str]] = []
        uncommitted = 0
        executor_pending = False
        answers = 0
        for f in files:
            m = ENTRY_NAME.match(f)
            assert m is not None
            data = (mdir / f).read_bytes()
            committed = f"{lay.messages}/{f}" in tracked
            if m.group(3) == "md":
                d = (who(m.group(2)), kind_of(data.decode("utf-8", "replace")))
                entries.append(("delivered", d))
                delivered.append((_who(d[0]), d[1]))
                uncommitted += not committed
            elif m.group(2) == lay.tool_origin:
                entries.append(("tool", None))
                executor_pending |= not committed
            else:
                try:
                    blocks = json.loads(data)
                except ValueError:
                    blocks = []
                blocks = blocks.get("content", blocks) if isinstance(blocks, dict) else blocks
                uses = sum(1 for b in blocks if isinstance(b, dict)
                           and b.get("type") == "tool_use") if isinstance(blocks, list) else 0
                entries.append(("model", uses))
                answers += not uses
                executor_pending |= not committed
        _last, _answered, _asked, _owed, due, window = transcript_facts(entries, a, PARENTS)

        def at_tip(kind: str, aid: str = aid, tip: str | None = tip,
                   pending: bool = executor_pending) -> bool:
            return tip is not None and not pending and \
                refs.get(f"{lay.mark_ref_prefix}{kind}/{aid}") == tip
        out[nm] = (tuple(sorted(delivered)), tuple(sorted(pend)), answers,
                   due or window != "closed", uncommitted, at_tip("returned"),
                   at_tip("stopped") or at_tip("budget-exhausted"))
    return _obs(out)


def _lock_holders(ws: Path, adapter: Adapter, aid: str) -> list[int]:
    """Pids (other than ours) holding a flock on the agent's inbox directory."""
    me = os.getpid()
    return [pid for pid in procfs.flock_holders(ws / adapter.layout.inbox / aid)
            if pid is not None and pid != me]


def body_faults(ws: Path, adapter: Adapter, sent: Mapping[str, Sequence[bytes]]) -> list[str]:
    """Every message from the user in an agent's transcript or inbox carries, after its
    frontmatter, exactly the bytes of one the program sent to that agent. No model needed:
    the kit knows what it sent. A proper prefix of a sent body is a torn copy."""
    lay = adapter.layout
    out: list[str] = []

    def judge_one(nm: str, where: str, data: bytes) -> None:
        text = data.decode("utf-8", "replace")
        m = FRONTMATTER.match(text)
        body = data[len(m.group(0).encode("utf-8")):] if m else b""
        bodies = sent.get(nm, ())
        if body in bodies:
            return
        kind = kind_of(text)
        longer = [len(b) for b in bodies if len(b) > len(body) and b.startswith(body)]
        if longer or not m:
            whole = max(longer, default=max(map(len, bodies), default=0))
            out.append(f"{nm} {where}: torn user:{kind} ({len(body)} of {whole} bytes)")
        else:
            out.append(f"{nm} {where}: user:{kind} with a body the program never sent "
                       f"({len(body)} bytes)")

    for nm, aid in sorted(agent_ids(ws, adapter).items()):
        mdir = ws / lay.agents / aid / lay.messages
        with contextlib.suppress(OSError):
            for f in sorted(os.listdir(mdir), key=lambda f: (len(f), f)):
                m = ENTRY_NAME.match(f)
                if m and m.group(3) == "md" and m.group(2) == lay.user:
                    judge_one(nm, "delivered", (mdir / f).read_bytes())
        inbox = ws / lay.inbox / aid
        with contextlib.suppress(OSError):
            for f in sorted(os.listdir(inbox)):
                m = DEPOSIT_NAME.match(f)
                if m and not f.startswith(".") and m.group(1) == lay.user:
                    judge_one(nm, "pending", (inbox / f).read_bytes())
    return out


def user_bodies(ws: Path, adapter: Adapter, aid: str) -> list[bytes]:
    """The bodies (after the frontmatter) of every message from the user in the agent's
    transcript directory and its inbox, read from the files alone."""
    lay = adapter.layout
    out: list[bytes] = []
    places = ((ws / lay.agents / aid / lay.messages, ENTRY_NAME, 2),
              (ws / lay.inbox / aid, DEPOSIT_NAME, 1))
    for directory, pattern, group in places:
        with contextlib.suppress(OSError):
            for f in os.listdir(directory):
                m = pattern.match(f)
                if not m or f.startswith(".") or m.group(group) != lay.user or \
                        not f.endswith(".md"):
                    continue
                with contextlib.suppress(OSError):
                    data = (directory / f).read_bytes()
                    head = FRONTMATTER.match(data.decode("utf-8", "replace"))
                    out.append(data[len(head.group(0).encode("utf-8")):] if head else data)
    return out


def accounting_faults(ws: Path, adapter: Adapter,
                      accepted: Mapping[str, Sequence[bytes]]) -> list[str]:
    """Message accounting: every message a writer accepted (exit 0) for an agent is, byte
    for byte, delivered or pending exactly once at the end (SPEC I-5). Judged from the files
    and what the kit sent alone, no model needed."""
    out: list[str] = []
    ids = agent_ids(ws, adapter)
    for nm, bodies in sorted(accepted.items()):
        want = Counter(bodies)
        got = Counter(user_bodies(ws, adapter, ids[nm])) if nm in ids else Counter()
        lost = sum((want - got).values())
        extra = sum(((got - want) & Counter({b: 1 for b in want})).values())
        if lost:
            out.append(f"{nm}: {lost} of {sum(want.values())} accepted messages neither "
                       "delivered nor pending (lost)")
        if extra:
            out.append(f"{nm}: {extra} accepted messages found more than once (duplicated)")
    return out


@dataclass
class Run:
    observation: Observation
    findings: list[str]
    killed: list[str]
    faults: list[str] = field(default_factory=list)  # bodies that are not what was sent
    unsupported: str = ""  # why the program cannot run on this implementation
    lost: list[str] = field(default_factory=list)  # accepted messages not there exactly once


def run_program(p: Program, adapter: Adapter, ws: Path) -> Run:
    """Run the program through the adapter as subprocesses; read the final state."""
    findings: list[str] = []
    killed: list[str] = []
    sent: dict[str, list[bytes]] = {}
    accepted: dict[str, list[bytes]] = {}  # what writers that exited 0 sent, per agent
    watchers: list[tuple[str, DeliveryKill]] = []
    bodies = ws.parent / "kit-bodies"
    env = adapter.env({}, os.environ)
    needs = [i for i in p.inputs if i.pad]
    if needs and not adapter.has("message_file"):
        return Run((), [], [], unsupported="a large message needs the adapter's optional verb "
                   "message_file")

    def cmd(verb: str, values: Mapping[str, str]) -> list[str]:
        return adapter.argv(verb, {"ws": str(ws), **values})

    def disarm() -> None:
        for nm, w in watchers:
            w.stop()
            killed.extend(f"{nm}'s holder (pid {pid}) as {w.deposit} left its inbox"
                          for pid in w.killed)
            if w.deposit and not w.killed:
                killed.append(f"nobody: {nm}'s lock was free as {w.deposit} left its inbox")
        watchers.clear()

    subprocess.run(cmd("new", {}), env=env, capture_output=True, check=True, timeout=120,
                   stdin=subprocess.DEVNULL)
    groups: list[list[Input]] = []
    for inp in p.inputs:
        if inp.with_previous and groups:
            groups[-1].append(inp)
        else:
            groups.append([inp])
    try:
        for group in groups:
            procs: list[tuple[Input, subprocess.Popen[bytes]]] = []
            for inp in group:
                if inp.after:
                    time.sleep(inp.after)
                ids = agent_ids(ws, adapter)
                if inp.verb == "wait":
                    try:
                        wait_quiescent(ws, adapter.layout)
                    except Failed as exc:
                        findings.append(f"{inp.show().strip()}: {exc}")
                    disarm()  # as in the model: a kill not taken by now is not taken
                    continue
                if inp.verb == "kill":
                    aid = ids.get(inp.agent)
                    if inp.when and aid:
                        def holders(aid: str = aid) -> list[int]:
                            return _lock_holders(ws, adapter, aid)
                        try:
                            watchers.append((inp.agent, DeliveryKill(
                                ws / adapter.layout.inbox / aid, holders)))
                        except WatchError as exc:
                            return Run((), [], [], unsupported=f"{inp.show().strip()}: {exc}")
                        continue
                    for pid in _lock_holders(ws, adapter, aid) if aid else []:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                            killed.append(f"{inp.agent}'s holder (pid {pid})")
                    continue
                if inp.verb == "prompt":
                    argv = cmd("prompt", {"text": inp.body, "name": inp.agent})
                    sent.setdefault(inp.agent, []).append(inp.content())
                elif inp.verb == "message":
                    agent = ids.get(inp.agent, inp.agent)
                    if inp.pad:
                        bodies.mkdir(parents=True, exist_ok=True)
                        path = bodies / f"{len(list(bodies.iterdir())) + 1}.txt"
                        path.write_bytes(inp.content())
                        argv = cmd("message_file", {"agent": agent, "file": str(path)})
                    else:
                        argv = cmd("message", {"agent": agent, "content": inp.body})
                    sent.setdefault(inp.agent, []).append(inp.content())
                elif inp.verb == "stop":
                    if inp.agent not in ids:
                        continue
                    argv = cmd("stop", {"agent": ids[inp.agent]})
                else:
                    argv = cmd("scan", {})
                procs.append((inp, subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                                    stderr=subprocess.PIPE,
                                                    stdin=subprocess.DEVNULL)))
            for inp, proc in procs:
                try:
                    _out, err = proc.communicate(timeout=120)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.communicate()
                    findings.append(f"{inp.show().strip()}: no exit within 120s")
                    continue
                if proc.returncode == 0 and inp.verb in ("prompt", "message"):
                    accepted.setdefault(inp.agent, []).append(inp.content())
                if proc.returncode and (inp.verb in ("prompt", "scan")
                                        or (inp.verb == "message" and inp.agent != "C")):
                    findings.append(f"{inp.show().strip()}: exit {proc.returncode} "
                                    f"({err.decode('utf-8', 'replace').strip()[:200]})")
        try:
            wait_quiescent(ws, adapter.layout)
        except Failed as exc:
            findings.append(f"end of program: {exc}")
    finally:
        disarm()
        shutil.rmtree(bodies, ignore_errors=True)
    return Run(real_observation(ws, adapter), findings, killed,
               body_faults(ws, adapter, sent), lost=accounting_faults(ws, adapter, accepted))


# ------------------------------------------------------------------ the verdict

def show_observation(o: Observation) -> str:
    if not o:
        return "    (no agent has anything)"
    lines = []
    for nm, a in o:
        deliv = ", ".join(f"{c}×{s}:{k}" if c > 1 else f"{s}:{k}"
                          for (s, k), c in sorted(Counter(a[0]).items())) or "-"
        pend = ", ".join(f"{s}:{k}" for s, k in a[1]) or "-"
        flags = [f"answers={a[2]}", "work due" if a[3] else "at rest"]
        if a[4]:
            flags.append(f"uncommitted={a[4]}")
        if a[5]:
            flags.append("returned@tip")
        if a[6]:
            flags.append("parked@tip")
        lines.append(f"    {nm}: delivered [{deliv}]; pending [{pend}]; {'; '.join(flags)}")
    return "\n".join(lines)


def difference(real: Observation, mod: Observation) -> list[str]:
    r, m = dict(real), dict(mod)
    empty: AgentObs = ((), (), 0, False, 0, False, False)
    out = []
    for nm in sorted(set(r) | set(m)):
        ra, ma = r.get(nm, empty), m.get(nm, empty)
        for f, x, y in zip(FIELDS, ra, ma, strict=True):
            if x == y:
                continue
            if isinstance(x, tuple) and isinstance(y, tuple):
                cx, cy = Counter(x), Counter(y)
                more = ", ".join(f"{s}:{k}" for (s, k) in sorted((cx - cy).elements()))
                less = ", ".join(f"{s}:{k}" for (s, k) in sorted((cy - cx).elements()))
                parts = ([f"extra {more}"] if more else []) + ([f"missing {less}"] if less
                                                                else [])
                out.append(f"{nm} {f}: " + "; ".join(parts))
            else:
                out.append(f"{nm} {f}: implementation {x}, model {y}")
    return out


def _size(real: Observation, mod: Observation) -> int:
    r, m = dict(real), dict(mod)
    empty: AgentObs = ((), (), 0, False, 0, False, False)
    n = 0
    for nm in set(r) | set(m):
        for x, y in zip(r.get(nm, empty), m.get(nm, empty), strict=True):
            if isinstance(x, tuple) and isinstance(y, tuple):
                cx, cy = Counter(x), Counter(y)
                n += sum(((cx - cy) + (cy - cx)).values())
            elif isinstance(x, int) and isinstance(y, int) and not isinstance(x, bool):
                n += abs(x - y)
            else:
                n += x != y
    return n


@dataclass
class Verdict:
    program: Program
    passed: bool
    text: str  # empty when passed; why, when inconclusive
    inconclusive: bool = False
    seconds: float = 0.0
    outcomes: int = 0
    nodes: int = 0
    diff: tuple[str, ...] = ()
    real: str = ""  # the implementation's final state, as shown (failed only)
    nearest: str = ""  # the nearest outcome the model reaches, as shown (failed only)

    def headline(self) -> str:
        return self.text.splitlines()[0] if self.text else ""

    def one_line(self) -> str:
        """The scorecard's line: what failed, the difference, the program."""
        if not self.text:
            return ""
        out = self.headline().split(": ", 1)[-1]
        if self.diff:
            out += "; difference: " + ", ".join(self.diff)
        return out + "; program: " + self.program.one_line()


def judge(p: Program, run: Run, search: Search) -> Verdict:
    lines: list[str] = []
    reached = run.observation in search.outcomes
    if run.findings:
        lines.append(f"{p.id}: " + run.findings[0])
    elif run.faults and reached:
        lines.append(f"{p.id}: a delivered or pending message is not the bytes the program "
                     "sent")
    elif run.faults:
        lines.append(f"{p.id}: a message is not the bytes the program sent, and the final "
                     f"state is not one the model reaches ({len(search.outcomes)} model "
                     "outcomes)")
    elif run.lost:
        lines.append(f"{p.id}: message accounting: " + run.lost[0])
    elif not reached:
        lines.append(f"{p.id}: the implementation's final state is not one the model "
                     f"reaches ({len(search.outcomes)} model outcomes)")
    if not lines:
        return Verdict(p, True, "", outcomes=len(search.outcomes), nodes=search.nodes)
    lines += ["", p.show()]
    if run.killed:
        lines.append("  killed: " + ", ".join(run.killed))
    lines += ["implementation's final state:", show_observation(run.observation)]
    diff: list[str] = list(run.faults)
    nearest = ""
    if search.outcomes:
        near = min(search.outcomes, key=lambda o: (_size(run.observation, o), o))
        diff += difference(run.observation, near)
        nearest = show_observation(near)
        lines += ["nearest model outcome:", nearest]
    diff += run.lost
    if search.outcomes or diff:
        lines += ["difference:"] + (["    " + d for d in diff] or ["    (none)"])
    return Verdict(p, False, "\n".join(lines), outcomes=len(search.outcomes),
                   nodes=search.nodes, diff=tuple(diff),
                   real=show_observation(run.observation), nearest=nearest)


def check(p: Program, adapter: Adapter, ws: Path) -> Verdict:
    t0 = time.monotonic()
    search = reachable(p)
    run = run_program(p, adapter, ws)
    if run.unsupported:
        return Verdict(p, False, f"{p.id}: not applicable: {run.unsupported}",
                       inconclusive=True, seconds=time.monotonic() - t0)
    v = judge(p, run, search)
    if not v.passed and not search.complete and not run.findings and not run.faults \
            and not run.lost:
        # The model search stopped at its bound: an outcome it did not list may still be
        # reachable, so this is no verdict (the scorecard counts it as not applicable).
        v = Verdict(p, False, f"{p.id}: the model search stopped at {search.nodes:,} states "
                    "before it listed every outcome", inconclusive=True,
                    outcomes=len(search.outcomes), nodes=search.nodes)
    v.seconds = time.monotonic() - t0
    return v


# ------------------------------------------------------------------ generated programs

def programs(examples: int, seed: int) -> Iterator[Program]:
    """``examples`` programs drawn by Hypothesis from :func:`program_strategy` (no shrinking:
    every program is short, and each run is a real one)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    drawn: list[Program] = []
    if examples <= 0:
        return

    @hseed(seed)
    @settings(max_examples=examples, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(program_strategy())
    def collect(p: Program) -> None:
        drawn.append(p)

    collect()
    for k, p in enumerate(drawn):
        yield Program(f"generated-{seed}-{k + 1}", p.inputs)


def program_strategy() -> SearchStrategy[Program]:
    from hypothesis import strategies as st

    @st.composite
    def body(draw: st.DrawFn, me: str, may_dispatch: bool) -> str:
        lines = []
        if draw(st.booleans()):
            lines.append(f"@sleep {draw(st.sampled_from(['0.3', '0.8']))}")
        for _ in range(draw(st.integers(0, 2))):
            kind = draw(st.sampled_from(["tools", "message", "dispatch"] if may_dispatch
                                        else ["tools", "message"]))
            if kind == "tools":
                lines.append("@tools 1")
            elif kind == "message":
                to = draw(st.sampled_from([n for n in NAMES if n != me]))
                lines.append(f"@message {to} note from {me}")
            else:
                inner = draw(st.sampled_from(["build it", "@message S hi from C",
                                              "@message P done soon"]))
                lines.append(f"@dispatch name=C {inner}")
                may_dispatch = False
        lines.append(draw(st.sampled_from(["hello", "do the work", "status?"])))
        return "\n".join(lines)

    @st.composite
    def program(draw: st.DrawFn) -> Program:
        p_body = draw(body("P", True))
        inputs = [Input("prompt", "P", p_body)]
        dispatched = "@dispatch" in p_body
        # Three agents busy at once rarely fit the search bound: S joins only without C.
        both = not dispatched and draw(st.booleans())
        if both:
            inputs.append(Input("prompt", "S", draw(body("S", False))))
        for _ in range(draw(st.integers(1, 2))):
            roots = ["P", "S"] if both else ["P"]
            verb = draw(st.sampled_from(["message", "message", "scan", "stop", "kill",
                                         "wait"]))
            if verb == "message":
                to = draw(st.sampled_from(roots))
                b = draw(body(to, to == "P" and not dispatched and not both))
                dispatched |= "@dispatch" in b
                copies = 1 if "@dispatch" in b or both else draw(st.integers(1, 2))
                for c in range(copies):
                    inputs.append(Input("message", to, b, with_previous=c > 0))
            elif verb in ("stop", "kill"):
                who = draw(st.sampled_from(roots + (["C"] if dispatched else [])))
                inputs.append(Input(verb, who, after=draw(st.sampled_from([0.0, 0.2, 0.5]))))
            else:
                inputs.append(Input(verb))
        if any(i.verb == "kill" for i in inputs) and draw(st.booleans()):
            inputs += [Input("wait"), Input("scan")]
        return Program("generated", tuple(inputs))

    return program()


def all_programs(examples: int, seed: int) -> Sequence[Program]:
    return [*regression_programs(), *programs(examples, seed)]
