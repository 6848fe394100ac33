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

The abstraction (``real_view``) reads only files on disk, refs and kernel locks:
per agent the pending deposits (sender, kind), the transcript facts the model keeps
(re-derived here from the entry files, independently of both the model's and the
implementation's decision functions), delivered entries not yet committed, whether the
newest entry is a terminal one not yet committed and whether a tool-calling entry or a
tool result is (renamed, its commit still to come or lost with a killed driver), which
actor holds the executor lock, whether a returned / stopped / budget mark is at the
tip, and how many recorded launches have not started.

A crash is a real crash: the actor's generator is abandoned without being closed
(and kept referenced, so it is never finalised: no ``finally``, ``except`` or
``with`` exit runs), and exactly the descriptors the actor opened are closed, as
the kernel would close them; temp files, renamed entries and half-made commits stay.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import re
import struct
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from hypothesis import strategies as hst
from hypothesis import target
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from lernie_spec import model as M
from lernie_spec.model import NOBODY, USER, Action, Scope, State
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
    INBOX_DIR,
    MARK_REF_PREFIX,
    MESSAGES_DIR,
    TOOL_ORIGIN,
    USER_SENDER,
    MarkKind,
    Point,
)
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.launcher import RecordingLauncher
from lernie_ref.substrate.workspace import Workspace, create_workspace
from lernie_stateful.points import POINTS

# ------------------------------------------------------------------ the world

SCOPE = Scope(
    parents=(NOBODY, 0, 0),  # P, and two children it may dispatch
    initial=(True, False, False),
    messages=99, advances=0, stops=99, scans=99, crashes=99, tools=99, sends=99,
    exhaust=99, max_procs=99, max_seq=99, launch_cap=99, errors=0,
    split_commit=True,  # the real driver passes an executor entry's rename and its commit
)
"""The model's world for refinement: budgets are the program's, not the model's."""

STEP_BUDGET = 4
"""The real step budget (R-TERM-4) by default: small, so budget exhaustion happens in
short runs."""

STEP_BUDGETS: tuple[int, ...] = (STEP_BUDGET, 12)
"""The step budgets a run may have (drawn once per run): the small one exhausts agents
early; the larger one leaves room for conversations (an agent that answers, is written
to again and answers again), which the small one cuts short. The model exhausts a
budget by its own bounded choice, whatever the number."""

# ------------------------------------------------------------ point matching

def _holds_flock(fd: int) -> bool:
    """Whether the open description behind ``fd`` carries a ``flock`` (its ``fdinfo`` has a
    ``lock:`` line): an actor that merely has the inbox open (a writer's guarded walk) is
    not a holder, as R-STOP-2 reads it for real processes."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
            return any(line.startswith("lock:") and "FLOCK" in line for line in info)
    except OSError:
        return False


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


class Divergence(AssertionError):
    """The implementation did something no model step explains."""


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
    no-op tool call (the reply the real model gave)."""

    model_id = "choice"

    def __init__(self) -> None:
        self.queue: dict[int, list[tuple[str, int, str]]] = {}
        self.calls = 0
        self.slot_of: Callable[[str], int] = lambda agent_id: NOBODY
        self.id_of: Callable[[int], str | None] = lambda slot: None
        self.may_dispatch: Callable[[str], bool] = lambda agent_id: True

    def call(self, request: ModelRequest, should_stop: Callable[[], bool]) -> ModelReply:
        self.calls += 1
        q = self.queue.get(self.slot_of(request.agent_id)) or []
        if not q:
            return ModelReply([text_block("done")])
        kind, target, call = q.pop(0)
        if kind == "final":
            return ModelReply([text_block("done")])
        to = (self.id_of(target) if kind == "message"
              else last_writer(request) if kind == "answer" else None)
        if to is not None:
            return ModelReply([tool_use_block(call, "message", {"agent": to, "content": "hi"})])
        if kind == "dispatch" and self.may_dispatch(request.agent_id):
            return ModelReply([tool_use_block(call, "dispatch", {"goal": "work"})])
        return ModelReply([tool_use_block(call, "look", {})])


class Ticking(FixedClock):
    def __init__(self) -> None:
        super().__init__(1_700_000_000_000_000_000, 1_000_003)


# ------------------------------------------------------------ the abstraction


class AgentView(NamedTuple):
    exists: bool
    inbox: tuple[tuple[int, str], ...]
    last_prompter: int
    answered: bool
    asked_since_answer: bool
    owed_at_answer: bool
    call_due: bool
    window: str
    uncommitted: tuple[tuple[int, str], ...]
    returned_at_tip: bool
    parked_at_tip: bool
    pending_launches: int
    holders: frozenset[object]
    stray_final: bool  # the newest entry is a terminal model entry not yet committed
    stray_step: bool  # a tool-calling model entry or a tool result not yet committed


View = tuple[AgentView, ...]

FRONTMATTER = re.compile(r"^---\n(.*?)\n---\n", re.S)
ENTRY_NAME = re.compile(r"^(\d+)-(.+)\.(md|json)$")
DEPOSIT_NAME = re.compile(r"^(.+)-(\d+)\.md$")


def kind_of(text: str) -> str:
    m = FRONTMATTER.match(text)
    if m:
        for line in m.group(1).split("\n"):
            if line.startswith("epitaph: "):
                return line[len("epitaph: "):]
    return M.PLAIN


def transcript_facts(entries: Sequence[tuple[str, object]], me: int,
                     parents: tuple[int, ...]) -> tuple[int, bool, bool, bool, bool, str]:
    """The model's transcript facts, replayed plainly over the entries in order.

    Each entry is ``("delivered", (sender, kind))``, ``("model", tool_uses)`` or
    ``("tool", None)``."""
    last, answered, asked, owed, due, window = NOBODY, False, False, False, False, "closed"
    for kind, data in entries:
        if kind == "delivered":
            assert isinstance(data, tuple)
            sender, dkind = data
            plain = dkind == M.PLAIN
            if window == "open":
                window = "buried"
            if plain and sender != me:
                last = sender
            if sender != me and (plain or (sender >= 0 and parents[sender] == me)):
                asked = True
            due = True
        elif kind == "model":
            if data:
                window, due = "open", False
            else:
                owed = (not answered) or asked
                answered, asked, due = True, False, False
        else:
            window, due = "closed", True
    return last, answered, asked, owed, due, window


def read_refs(git_dir: Path | str, prefixes: Sequence[str]) -> dict[str, str]:
    """Refs under ``prefixes`` read from the repository's files (loose refs override
    ``packed-refs``), as git itself resolves them; no git process is run."""
    refs: dict[str, str] = {}
    top_dir = os.fspath(git_dir)
    packed = os.path.join(top_dir, "packed-refs")
    if os.path.isfile(packed):
        with open(packed, encoding="utf-8") as f:
            lines = f.read().splitlines()
        for line in lines:
            if line[:1] in ("#", "^") or " " not in line:
                continue
            sha, _, name = line.partition(" ")
            if name.startswith(tuple(prefixes)):
                refs[name] = sha
    for prefix in prefixes:
        _loose_refs(top_dir, prefix.rstrip("/"), refs)
    return refs


def _loose_refs(git_dir: str, rel: str, refs: dict[str, str]) -> None:
    """The loose refs below ``git_dir/rel`` (depth first, as ``os.walk`` goes) into ``refs``."""
    try:
        found = list(os.scandir(os.path.join(git_dir, rel)))
    except (FileNotFoundError, NotADirectoryError):
        return
    for item in found:
        name = f"{rel}/{item.name}"
        if item.is_dir():
            if not item.is_symlink():  # as os.walk: a link to a directory is not entered
                _loose_refs(git_dir, name, refs)
            continue
        if item.name.endswith(".lock"):
            continue
        with contextlib.suppress(FileNotFoundError):
            sha = _read(item.path).decode("utf-8").strip()
            if sha and not sha.startswith("ref:"):
                refs[name] = sha


def tracked_paths(worktree: Path | str) -> set[str]:
    """The paths in a worktree's git index, parsed from the index file (format 2/3);
    what `git ls-files` lists, without running git."""
    dotgit = os.path.join(worktree, ".git")
    if os.path.isfile(dotgit):
        gitdir = _read(dotgit).decode("utf-8").split("gitdir:", 1)[1].strip()
    else:
        gitdir = dotgit
    try:
        data = _read(os.path.join(gitdir, "index"))
    except FileNotFoundError:
        return set()
    if data[:4] != b"DIRC":
        raise Divergence(f"unreadable git index in {worktree}")
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3):
        raise Divergence(f"git index version {version} is not read by the abstraction")
    out: set[str] = set()
    pos = 12
    for _ in range(count):
        start = pos
        flags = struct.unpack(">H", data[pos + 60:pos + 62])[0]
        pos += 62
        if version == 3 and flags & 0x4000:
            pos += 2
        end = data.index(b"\0", pos)
        out.add(data[pos:end].decode("utf-8", "surrogateescape"))
        pos = end + 1
        pos += (-(pos - start)) % 8  # NUL padding to a multiple of eight
    return out


def _listing(d: str) -> list[str]:
    """The names in directory ``d`` (none when it is missing or not a directory)."""
    try:
        return os.listdir(d)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _read(path: str) -> bytes:
    """The whole file (the view reads dozens at every point: no buffered file object)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, max(os.fstat(fd).st_size, 4096) + 1)]
        while chunks[-1]:
            chunks.append(os.read(fd, 1 << 16))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _published_results(texts: Iterable[str]) -> set[tuple[str, str]]:
    """(author, terminal_ref) of every result among ``texts`` (every deposit and delivered
    entry, pending or delivered anywhere)."""
    out: set[tuple[str, str]] = set()
    for text in texts:
        m = FRONTMATTER.match(text)
        if not m:
            continue
        head = dict(line.partition(": ")[::2] for line in m.group(1).split("\n"))
        if "terminal_ref" in head:
            out.add((head.get("from", ""), head["terminal_ref"]))
    return out


class World:
    """One real workspace, its actors, and the set of model states consistent with it."""

    def __init__(self, root: Path) -> None:
        self.ws: Workspace = create_workspace(root / "ws")
        # The harness owns this workspace: git's automatic maintenance, a second git
        # process after every commit that finds nothing to do in a repository this small,
        # is switched off (no rule of the protocol involves it; a real workspace keeps it).
        self.ws.git.run(self.ws.repo_git, ["config", "maintenance.auto", "false"])
        self.clock = Ticking()
        self.launcher = RecordingLauncher()
        self.model = ChoiceModel()
        self.config = Config(step_budget=STEP_BUDGET)
        self.ids: list[str | None] = [None] * len(SCOPE.parents)
        self.model.slot_of = self.index
        self.model.id_of = lambda slot: self.ids[slot]
        self.model.may_dispatch = lambda aid: any(
            par == self.index(aid) and self.ids[c] is None for c, par in enumerate(SCOPE.parents))
        self.actors: dict[int, RealActor] = {}
        self.graveyard: list[RealActor] = []  # crashed in this run
        self.next_key = 0
        self.started = 0  # launches started (a prefix of launcher.launches)
        self.models: list[tuple[State, tuple[int, ...]]] = [(M.initial(SCOPE), ())]
        self.trace: list[str] = []  # the implementation's points, swimlane rows
        self.replies = 0
        self._dirs: dict[str, tuple[str, str, str]] = {}

    # -------------------------------------------------------------- ids

    def index(self, agent_id: str) -> int:
        if agent_id == USER_SENDER:
            return USER
        if agent_id in self.ids:
            return self.ids.index(agent_id)
        return NOBODY

    def _adopt_new_agents(self, refs: dict[str, str]) -> None:
        """Give each agent a dispatch created its model index (the parent's first free child)."""
        known = set(i for i in self.ids if i)
        for aid in sorted(r[len(AGENT_REF_PREFIX):] for r in refs
                          if r.startswith(AGENT_REF_PREFIX)):
            if aid in known:
                continue
            parent = next((i for i in self.ids if i and aid.startswith(i + "-")), None)
            p = self.ids.index(parent) if parent else NOBODY
            slot = next((c for c, par in enumerate(SCOPE.parents)
                         if par == p and self.ids[c] is None), None)
            if slot is None:
                raise Divergence(f"agent {aid} has no place in the model's world")
            self.ids[slot] = aid

    # -------------------------------------------------------------- the view

    def _dirs_of(self, aid: str) -> tuple[str, str, str]:
        """The agent's inbox, worktree and ``messages/`` paths (as text: the view reads
        them at every point)."""
        dirs = self._dirs.get(aid)
        if dirs is None:
            wt = os.fspath(self.ws.worktree(require_agent_id(aid)))  # an edge (R-ID-9)
            dirs = self._dirs[aid] = (os.fspath(self.ws.root / INBOX_DIR / aid), wt,
                                      os.path.join(wt, MESSAGES_DIR))
        return dirs

    def real_view(self) -> View:
        refs = read_refs(self.ws.repo_git, (AGENT_REF_PREFIX, MARK_REF_PREFIX))
        self._adopt_new_agents(refs)
        unstarted = [a for _, a in self.launcher.launches[self.started:]]
        # Every directory the view reads is listed once, and every deposit or delivered
        # entry (a non-dot ``.md``) in them read once, per view.
        listed: dict[str, list[str]] = {}
        md: dict[str, str] = {}
        for aid in self.ids:
            if aid:
                inbox, _, msgs = self._dirs_of(aid)
                for d in (inbox, msgs):
                    names = listed[d] = _listing(d)
                    for name in names:
                        if name.endswith(".md") and not name.startswith("."):
                            md[f"{d}/{name}"] = _read(f"{d}/{name}").decode("utf-8", "replace")
        published = _published_results(md.values())
        views = []
        for a, aid in enumerate(self.ids):
            if aid is None or AGENT_REF_PREFIX + aid not in refs:
                # A root the model has from the start is, before `lernie prompt` creates
                # it, an idle agent with an empty transcript (R-PROBE-5: the model's
                # prompt is a message to a root that already exists).
                root = SCOPE.parents[a] == NOBODY and SCOPE.initial[a]
                views.append(AgentView(root, (), NOBODY, False, False, False, False, "closed",
                                       (), False, False, 0, frozenset(), False, False))
                continue
            inbox, wt, msgs = self._dirs_of(aid)
            pend: list[tuple[int, str]] = []
            for name in listed[inbox]:
                m = DEPOSIT_NAME.match(name)
                if m and not name.startswith("."):
                    pend.append((self.index(m.group(1)), kind_of(md[f"{inbox}/{name}"])))
            tracked = tracked_paths(wt)
            entries: list[tuple[str, object]] = []
            uncommitted: list[tuple[int, str]] = []
            stray_final = stray_step = False
            named = sorted((int(m.group(1)), name, m) for name in listed[msgs]
                           if (m := ENTRY_NAME.match(name)))
            for _, name, m in named:
                committed = f"{MESSAGES_DIR}/{name}" in tracked
                if m.group(3) == "md":
                    fact = (self.index(m.group(2)), kind_of(md[f"{msgs}/{name}"]))
                    entries.append(("delivered", fact))
                    if not committed:
                        uncommitted.append(fact)
                elif m.group(2) == TOOL_ORIGIN:
                    entries.append(("tool", None))
                    stray_step |= not committed
                else:
                    blocks = json.loads(_read(f"{msgs}/{name}"))
                    blocks = blocks.get("content", blocks) if isinstance(blocks, dict) else blocks
                    uses = sum(1 for b in blocks if isinstance(b, dict)
                               and b.get("type") == "tool_use")
                    entries.append(("model", uses))
                    stray_step |= uses > 0 and not committed
                stray_final = entries[-1] == ("model", 0) and not committed
            facts = transcript_facts(entries, a, SCOPE.parents)
            tip = refs[AGENT_REF_PREFIX + aid]

            def at_tip(kind: str, aid: str = aid, tip: str = tip) -> bool:
                # A result published for the tip is the returned mark in the model, which
                # publishes and moves the mark in one step (R-DEP-8). An entry renamed
                # and not committed does not move the tip (nor, in the model, the marks).
                mark = refs.get(f"{MARK_REF_PREFIX}{kind}/{aid}") == tip
                if kind == MarkKind.RETURNED.value:
                    mark = mark or (aid, tip) in published
                return mark

            views.append(AgentView(
                True, tuple(sorted(pend)), *facts, tuple(sorted(uncommitted)),
                at_tip(MarkKind.RETURNED.value),
                at_tip(MarkKind.STOPPED.value) or at_tip(MarkKind.BUDGET_EXHAUSTED.value),
                unstarted.count(aid), self._holders(inbox), stray_final, stray_step))
        return tuple(views)

    def _holders(self, inbox: str) -> frozenset[object]:
        """Who holds the executor lock, read from the kernel: a fresh description's
        try-lock tells whether it is held, descriptor ownership by whom."""
        try:
            fd = os.open(inbox, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return frozenset()
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                want = os.fstat(fd)
                owners: set[object] = set()
                for act in self.actors.values():
                    for f in act.fds:
                        with contextlib.suppress(OSError):
                            st = os.fstat(f)
                            same = (st.st_dev, st.st_ino) == (want.st_dev, want.st_ino)
                            if same and _holds_flock(f):
                                owners.add(act.key)
                return frozenset(owners or {"?"})
            fcntl.flock(fd, fcntl.LOCK_UN)
            return frozenset()
        finally:
            os.close(fd)

    @staticmethod
    def model_view(st: State, ids: tuple[int, ...]) -> View:
        views = []
        for a, ag in enumerate(st.agents):
            if not ag.exists:
                views.append(AgentView(False, (), NOBODY, False, False, False, False, "closed",
                                       (), False, False, 0, frozenset(), False, False))
                continue
            holders: set[object] = {ids[i] for i, p in enumerate(st.procs)
                                    if (p.lease and p.agent == a) or p.probe_on == a}
            if ag.forked_holder:
                holders.add("forked")
            views.append(AgentView(
                True, tuple(sorted((f.sender, f.kind) for f in ag.inbox)), ag.last_prompter,
                ag.answered, ag.asked_since_answer, ag.owed_at_answer, ag.call_due,
                ag.window.value, tuple(sorted((d.sender, d.kind) for d in ag.uncommitted)),
                ag.returned_at_tip, ag.parked_at_tip, ag.pending_launches,
                frozenset(holders), ag.stray_final, ag.stray_step))
        return tuple(views)

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

    def after_end(self, act: RealActor, error: BaseException | None) -> None:
        """The actor returned (or raised): its model process must be finished, or finish
        now by an error exit when it raised (R-STEP-5)."""
        what = f"end of actor {act.key}" + (f" ({type(error).__name__}: {error})" if error else "")
        self.trace.append(f"{act.key}:{act.kind}[{M.name(act.agent)}] END" +
                          (f" {type(error).__name__}" if error else ""))
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

    def script(self, a: int, kind: str, target: int = NOBODY) -> None:
        """Queue the next reply the model adapter gives the agent in slot ``a``."""
        self.replies += 1
        self.model.queue.setdefault(a, []).append((kind, target, f"t{self.replies}"))

    # -------------------------------------------------------------- liveness

    def run_all(self, max_steps: int = 2000) -> None:
        """Bounded liveness: run every live actor and every launch to completion, one
        point each in turn (round robin, so the actors left running still race)."""
        steps = 0
        turn = 0
        while self.actors or self.started < len(self.launcher.launches):
            steps += 1
            if steps > max_steps:
                raise Divergence("no quiescence within the step bound (endless exchange?)")
            if self.actors:
                keys = sorted(self.actors)
                turn = next((k for k in keys if k > turn), keys[0])
                self.step(self.actors[turn])
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


def _has_work(v: AgentView) -> bool:
    """Whether a driver of the agent seen as ``v`` finds something to do: mail, a model
    call due, an open tool window, an entry not yet committed."""
    return bool(v.inbox or v.uncommitted or v.stray_final or v.stray_step or v.call_due
                or v.window == "open")


class RefinementMachine(RuleBasedStateMachine):
    """Rules named as the actions of the protocol's world; Hypothesis interleaves them."""

    def __init__(self) -> None:
        super().__init__()
        self._tmp = tempfile.TemporaryDirectory(prefix="lernie-refine-")
        self.world = World(Path(self._tmp.name))

    def teardown(self) -> None:
        # Hypothesis runs the teardown also when a rule raised (from a ``finally``): then
        # that divergence is the verdict, and the liveness check is not run over it.
        failed = isinstance(sys.exc_info()[1], Exception)
        try:
            if not failed:
                self.world.run_all()
                if self.world.graveyard:
                    self.world.scan()  # recovery after a crash is the sweep's job
                    self.world.run_all()
                left = self.world.stranded()
                if left:
                    raise Divergence("work the model says must be done is stranded: "
                                     + "; ".join(left))
                self._aim()
        finally:
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
        """`lernie message` to an agent; half the time while the agent's own driver (a
        running one, or a pending launch started for it) holds its lock with work in
        hand: the writer then runs through, finds the lock busy, and the driver's release
        must launch for the mail (R-PROBE-3, R-REL-1)."""
        a = data.draw(hst.sampled_from(self._existing()), label="agent")
        held = data.draw(hst.booleans(), label="while driven") and self._hold_mid_work(
            data, a) is not None
        writer = self.world.operator_message(a)
        if held:
            for _ in range(60):
                if writer.key not in self.world.actors:
                    break
                self.world.step(writer)

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
        self.world.config = Config(step_budget=budget)
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
            self.world.script(a, kind, target)

    @precondition(lambda self: bool(self.world.actors)
                  or self.world.started < len(self.world.launcher.launches))
    @rule()
    def settle(self) -> None:
        """Every live actor and pending launch runs to its end, in turns (a quiet spell
        between phases of a program)."""
        self.world.run_all()

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

    @precondition(lambda self: bool(self.world.actors))
    @rule(data=hst.data())
    def crash(self, data: hst.DataObject) -> None:
        """SIGKILL an actor where it is, or first run it on until it passes a chosen
        point or a number of crash windows (between a rename and its commit, inside a
        tool window, holding a probe's lock, ...)."""
        actor = data.draw(hst.sampled_from(sorted(self.world.actors)), label="actor")
        self._crash_aimed(actor, data.draw(AIMS, label="aim"))

    def _run_to(self, key: int, at: str) -> RealActor | None:
        """Run actor ``key`` until it passes point ``at`` (or ends); the live actor."""
        act = self.world.actors.get(key)
        for _ in range(60 if at else 0):
            if act is None:
                break
            point = self.world.step(act)
            act = self.world.actors.get(key)
            if point is not None and point.name == at:
                break
        return act

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

    def _hold_mid_work(self, data: hst.DataObject, agent: int | None = None) -> RealActor | None:
        """A driver (of ``agent``, or of anyone) holding its lock with work in hand: a
        running driver, or a pending launch started for it, run on until it has passed
        its first, second or third ``SCAN_DURING`` point (inside its model call, a tool
        window, a delivery or an entry not yet committed). ``None`` when there is no such
        driver or it ends first."""
        w = self.world
        view = w.real_view()
        for _ in range(3):  # a driver that ends first (nothing to do) hands on to another
            running = [("driver", k) for k, a in sorted(w.actors.items())
                       if a.kind == "driver" and agent in (None, a.agent)]
            waiting = [("launch", n) for n, (_, aid) in enumerate(w.launcher.launches[w.started:])
                       if agent in (None, w.index(aid))]
            # a pending launch finds work when its agent has mail or work due (R-SCAN-10)
            busy = [c for c in waiting if _has_work(view[w.index(
                w.launcher.launches[w.started + c[1]][1])])]
            choices = running + (busy or waiting)
            if not choices:
                return None
            # the agent first, then one of its drivers: an agent with many launches
            # recorded (the root, written to by everyone) is not chosen more often
            owners = sorted({self._agent_of(c) for c in choices})
            who = data.draw(hst.sampled_from(owners), label="agent held")
            kind, k = data.draw(hst.sampled_from([c for c in choices
                                                  if self._agent_of(c) == who]),
                                label="driver")
            if kind == "launch":
                act = w.start_launch(k)
                if act is None:  # the lock was busy: it returned at once
                    continue
                k = act.key
            ahead = data.draw(hst.integers(0, HELD_AHEAD), label="held at")
            held = self._run_windows(k, ahead, SCAN_DURING)
            if held is not None:
                return held
            view = w.real_view()
        return None

    def _crash_aimed(self, key: int, aim: Aim) -> None:
        _, where = aim
        act = (self._run_windows(key, where) if isinstance(where, int)
               else self._run_to(key, where))
        if act is not None:
            self.world.crash(act)

    @rule(data=hst.data())
    def scan(self, data: hst.DataObject) -> None:
        """`lernie scan`; half the time while a driver (a running one, or a pending launch
        started for it: a child's as often as the root's) holds its lock with work in hand,
        such as inside its model call (the sweep must leave it alone, R-SCAN-6)."""
        if data.draw(hst.booleans(), label="aim"):
            self._hold_mid_work(data)
        self.world.scan()

    @precondition(lambda self: any(a.kind == "driver" for a in self.world.actors.values()))
    @rule(data=hst.data())
    def stop(self, data: hst.DataObject) -> None:
        """`lernie stop` of an agent whose driver is running: the driver is first run on
        to its next check point (the model lets a stop land only there: setting the
        flag earlier reads the same), then stopped."""
        w = self.world
        key = data.draw(hst.sampled_from(sorted(k for k, a in w.actors.items()
                                                if a.kind == "driver")), label="driver")
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

    @precondition(lambda self: bool(self.world.ids[0])
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
        killed_dispatch(self.world, 0, at)
