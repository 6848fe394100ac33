"""Item: every crash point of every write sequence heals on the next touch (I-5, I-4, I-18).

For each write sequence the test first runs it once, recording its operations: every
protocol point the actors pass and every git call. Then, for every prefix, it restores
the same starting workspace, forks a real process that runs the sequence and kills
itself with SIGKILL at the cut (the kernel drops its flock; no ``finally`` runs), and
runs a next touch in this process, each of two kinds from the same crash state: the
documented recovery, ``scan`` (R-SCAN-10) and the drivers it and the touched writers
launch, then a fresh message to every agent; and mail first, a fresh message to every
agent before any scan (as writers keep writing after a crash), then the scan. Each ``git commit``
is also cut *inside*: the index written to ``index.lock`` and nothing else; objects
written and the ref locks taken but the ref not moved; the ref moved but
``index.lock`` left. Checks, from the files on disk only: every message the dying
process published is delivered exactly once with its bytes (one not yet published at
most once), entry numbers are 1..n and a clean worktree, every commit that adds an entry
adds exactly one and none changes or removes one (R-TR-3), no dot temp is ever an entry,
no git lock file is left, no agent is left with work due, every agent answers a new
message, and ``lernie-check audit`` (which imports nothing of ``lernie_ref``) finds no
violation, among them a reply owed to an agent that never left (I-12).

The full enumeration is ``slow``. By default a deterministic sample runs: the first
crash state of every kind (``kind``), over the sequences in order, so each sequence is
checked where it differs from the ones before it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from lernie_stateful.audit import audit

from lernie_ref.actors.hop import HopResult, Outcome, hop_actor
from lernie_ref.actors.sweep import scan_actor
from lernie_ref.actors.writer import dispatch_actor, message_actor
from lernie_ref.core.actor import Actor, run
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.frontmatter import split_frontmatter
from lernie_ref.core.stepper import Stepper
from lernie_ref.inbox import RecordingLauncher, cli_dispatch, cli_message, cli_prompt, pending
from lernie_ref.substrate import gitlocks
from lernie_ref.substrate.gitrun import GitResult, SubprocessGit
from lernie_ref.substrate.workspace import Workspace, create_workspace
from lernie_ref.testing import Inline, Point, drive

INSIDE = ("index-lock-only", "objects-no-ref", "ref-moved-index-lock-left")


@dataclass
class Cut:
    """Die (SIGKILL) just before operation ``at`` or, for a commit, ``inside`` it."""

    at: int | None = None
    inside: str | None = None
    ops: list[str] = field(default_factory=list)

    def tick(self, label: str) -> None:
        if self.at is not None and len(self.ops) == self.at and self.inside is None:
            os.kill(os.getpid(), signal.SIGKILL)
        self.ops.append(label)


class CutGit:
    """The real git runner, counting each call as an operation and dying at the cut."""

    def __init__(self, cut: Cut) -> None:
        self.cut = cut
        self.git = SubprocessGit()

    def run(
        self, dest: Path, args: Sequence[str], *, check: bool = True, input: bytes | None = None
    ) -> GitResult:
        here = len(self.cut.ops)
        self.cut.tick(f"git {args[0]}")
        if self.cut.inside is not None and here == self.cut.at:
            _die_inside_commit(self.git, dest, self.cut.inside, args)
        return self.git.run(dest, args, check=check, input=input)


def _die_inside_commit(git: SubprocessGit, worktree: Path, how: str, args: Sequence[str]) -> None:
    """Leave what the git commit ``args`` killed at that moment leaves, then die."""
    admin = Path(git.run(worktree, ["rev-parse", "--absolute-git-dir"]).stdout)
    on = git.run(worktree, ["symbolic-ref", "-q", "HEAD"], check=False)
    ref = on.stdout if on.returncode == 0 else None  # None: a creation's detached commit
    common = Path(git.run(worktree, ["rev-parse", "--git-common-dir"]).stdout)
    common = common if common.is_absolute() else (worktree / common).resolve()
    if how == "index-lock-only":
        shutil.copyfile(admin / "index", admin / "index.lock")
    elif how == "objects-no-ref":
        tree = git.run(worktree, ["write-tree"]).stdout
        sha = git.run(worktree, ["commit-tree", tree, "-p", "HEAD", "-m", "x"]).stdout
        shutil.copyfile(admin / "index", admin / "index.lock")
        (admin / "HEAD.lock").write_text(sha + "\n")
        if ref is not None:
            (common / f"{ref}.lock").write_text(sha + "\n")
    else:  # the commit happened, but git died before renaming its index lock into place
        git.run(worktree, args, check=False)  # the real commit, its own subject
        shutil.copyfile(admin / "index", admin / "index.lock")
    os.kill(os.getpid(), signal.SIGKILL)


# --------------------------------------------------------------------------- sequences


@dataclass
class World:
    ws: Workspace
    agents: list[str]
    tokens: list[str]
    """Message contents whose fate the checks follow."""


Setup = Callable[[Workspace], World]
Sequence_ = Callable[[Workspace, World, Cut], None]


def _step(actor: Actor[object], cut: Cut) -> object:
    stepper = Stepper(actor)
    while True:
        point = stepper.step()
        if point is None:
            return stepper.result
        cut.tick(f"{point.name} {point.detail}")


def _hop_chain(ws: Workspace, agent: str, cut: Cut) -> None:
    """One launched driver: the hop and its exec'd successors (the baton, in process)."""
    hop_deps = Inline(ws).deps
    env: dict[str, str] = {}
    while True:
        result = _step(hop_actor(ws, agent, env, hop_deps), cut)
        assert isinstance(result, HopResult)
        if result.outcome is not Outcome.TOOLS_RAN:
            return
        assert result.lock is not None
        cut.tick("baton exec")
        env = dict(result.lock.hand_off({}))


def setup_root(text: str) -> Setup:
    def make(ws: Workspace) -> World:
        root = cli_prompt(ws, text, "", RecordingLauncher())
        return World(ws, [root], [text])

    return make


WORK_TOOL = ("work\n@apply_patch\n*** Begin Patch\n*** Add File: pkg/notes.txt\n+first\n"
             "*** End Patch\n")
"""One tool step that adds a file (an exec'd successor hop), then a final response."""


def setup_family(ws: Workspace) -> World:
    root = cli_prompt(ws, "lead", "", RecordingLauncher())
    drive(ws, root)
    child = cli_dispatch(ws, root, "child goal", "", RecordingLauncher())
    return World(ws, [root, child], ["lead", "child goal"])


def setup_open_window(ws: Workspace) -> World:
    world = setup_root("work\n@tools 2")(ws)
    Inline(ws).crash_at(world.agents[0], Point.HOP_ASSISTANT_COMMITTED)
    return world


def setup_dead_child(ws: Workspace) -> World:
    world = setup_family(ws)
    Inline(ws).crash_at(world.agents[1], Point.HOP_WARRANT)
    return world


def setup_lead(ws: Workspace) -> World:
    """A named root at rest, about to dispatch (R-PROBE-6)."""
    root = cli_prompt(ws, "lead", "lead", RecordingLauncher())
    drive(ws, root)
    return World(ws, [root], ["lead"])


def setup_lead_dispatching(ws: Workspace) -> World:
    """A named root whose next hop calls the `dispatch` tool (R-STEP-7)."""
    return World(ws, [cli_prompt(ws, "@dispatch name=kid tool goal", "lead",
                                 RecordingLauncher())], [])


def seq_dispatch(ws: Workspace, world: World, cut: Cut) -> None:
    _step(dispatch_actor(ws, world.agents[0], "dispatched goal", "kid", RecordingLauncher(),
                         SystemClock()), cut)


def seq_deposit(ws: Workspace, world: World, cut: Cut) -> None:
    _step(
        message_actor(ws, world.agents[0], "late mail", "user", RecordingLauncher(), SystemClock()),
        cut,
    )


def seq_hop(index: int) -> Sequence_:
    def go(ws: Workspace, world: World, cut: Cut) -> None:
        _hop_chain(ws, world.agents[index], cut)

    return go


def seq_scan(ws: Workspace, world: World, cut: Cut) -> None:
    _step(scan_actor(ws, RecordingLauncher(), SystemClock()), cut)


SEQUENCES: dict[str, tuple[Setup, Sequence_, list[str]]] = {
    # name: (starting state, the sequence, extra tokens the sequence publishes)
    "deposit": (setup_root("first"), seq_deposit, ["late mail"]),
    "drain+assistant+terminal-tail": (setup_root("hello"), seq_hop(0), []),
    # a tool call that changes a file: its work must land in its result's commit
    # whatever the cut (R-TOOL-8, R-DRAIN-2; the clean-worktree check sees it left behind)
    "tool-commit+baton": (setup_root(WORK_TOOL), seq_hop(0), []),
    "result-deposit": (setup_family, seq_hop(1), []),
    "crash-settlement": (setup_open_window, seq_hop(0), []),
    "sweep-obituary": (setup_dead_child, seq_scan, []),
    # R-PROBE-6: a dispatch (its creation, its goal, its ref: the commit point), by the
    # operator and by a driver's tool; the child is followed by ``creations_settled``
    "dispatch": (setup_lead, seq_dispatch, []),
    "dispatch-tool": (setup_lead_dispatching, seq_hop(0), []),
}


# --------------------------------------------------------------------------- next touch


def next_touch(ws: Workspace) -> Inline:
    """The documented recovery: one scan, then every driver it (and they) launch."""
    inline = Inline(ws)
    report = run(scan_actor(ws, inline.launcher, SystemClock()))
    assert report.given_up == []
    assert inline.settle(max_hops=100)
    return inline


def committed(ws: Workspace, agent: str) -> list[str]:
    out = ws.git.run(ws.repo_git, ["ls-tree", "--name-only", f"agents/{agent}", "messages/"])
    return [line.split("/", 1)[1] for line in out.stdout.splitlines()]


def mail_first(ws: Workspace, label: str) -> Inline:
    """The other next touch: a message to every agent before anyone runs a scan (writers
    do not wait for the operator), then the scan; every driver launched runs."""
    inline = Inline(ws)
    for agent in ws.agent_ids():
        cli_message(ws, agent, f"first {label}", "user", inline.launcher)
    assert inline.settle(max_hops=100)
    report = run(scan_actor(ws, inline.launcher, SystemClock()))
    assert report.given_up == []
    assert inline.settle(max_hops=100)
    return inline


def entry_changes(ws: Workspace, agent: str) -> list[tuple[str, list[str]]]:
    """For each commit of the agent's branch that touches ``messages/``, its subject and the
    status letter and path of each change there (git log, first parent)."""
    out = ws.git.run(
        ws.repo_git,
        ["log", "--first-parent", "--format=format:@%s", "--name-status", "--no-renames",
         f"agents/{agent}", "--", "messages/"],
    ).stdout
    commits = []
    for chunk in out.split("\n@"):
        subject, _, rest = chunk.lstrip("@").partition("\n")
        commits.append((subject, [line for line in rest.splitlines() if line.strip()]))
    return commits


def one_commit_per_entry(ws: Workspace, agent: str, label: str) -> None:
    """R-TR-3: every commit of the agent's own (subject ending `` [<id>]``, after its creation
    commit, which for a child clears the parent's entries) that touches ``messages/`` adds
    exactly one entry and changes or removes none (a stray recovery or a crash settlement
    never carries a second entry)."""
    own = []
    for subject, changes in entry_changes(ws, agent):
        if not subject.endswith(f" [{agent}]"):
            break
        own.append((subject, changes))
    if own and own[-1][0].startswith(("dispatch: ", "step 001: dispatch ")):
        own.pop()  # the creation commit
    assert own, (label, agent)
    for subject, changes in own:
        added = [c for c in changes if c.startswith("A\t")]
        assert len(added) == 1 and len(changes) == 1, (label, subject, changes)


def creations_settled(ws: Workspace, label: str) -> None:
    """R-PROBE-6, R-SCAN-12: after the touch no remains of a killed creation are left (a
    worktree or worktree admin directory no ref names, an unregistered inbox holding
    anything); every named agent answers to its name alone; every child's first entry is
    its goal from its parent, once; nobody ever received a `died` from a child that was
    never started."""
    ids = ws.agent_ids()
    assert sorted(os.listdir(ws.agents_root)) == ids, label
    assert sorted(os.listdir(ws.repo_git / "worktrees")) == ids, label
    for name in os.listdir(ws.inbox_root):
        assert name in ids or os.listdir(ws.inbox_root / name) == [], (label, name)
    for agent in ids:
        name = ws.agent_name(agent)
        if name:
            assert ws.resolve_name(name) == agent, (label, name)
        parent = agent.rsplit("-", 2)[0] if agent.count("-") >= 3 else None
        if parent is not None:
            first = ws.worktree(agent) / "messages" / f"001-{parent}.md"
            goal = (ws.worktree(agent) / "goal.md").read_text()
            assert split_frontmatter(first.read_text())[1] == goal, label
        places = [ws.worktree(agent) / "messages" / n
                  for n in os.listdir(ws.worktree(agent) / "messages") if n.endswith(".md")]
        places += [m.path for m in pending(ws.inbox_dir(agent))]
        for place in places:
            head = place.read_text().split("\n---\n", 1)[0]
            if "\nepitaph: died" in head:  # a `died` only from a child that did work
                sender = head.split("from: ", 1)[1].split("\n", 1)[0]
                assert sender in ids and os.listdir(ws.worktree(sender) / "messages"), (
                    label, place)


def check(world: World, published: set[str], label: str) -> None:
    ws = world.ws
    creations_settled(ws, label)
    bodies: list[str] = []
    for agent in ws.agent_ids():  # a dispatch's child too, once it exists
        names = sorted(os.listdir(ws.worktree(agent) / "messages"))
        assert not [n for n in names if n.startswith(".") or ".tmp" in n], label
        seqs = sorted(int(n.split("-", 1)[0]) for n in names)
        assert seqs == list(range(1, len(names) + 1)), (label, names)
        assert committed(ws, agent) == names, label
        one_commit_per_entry(ws, agent, label)
        status = ws.git.run(ws.worktree(agent), ["status", "--porcelain"]).stdout
        assert status == "", (label, status)
        assert pending(ws.inbox_dir(agent)) == [], label
        for name in names:
            if name.endswith(".md"):
                bodies.append(split_frontmatter((ws.worktree(agent) / "messages" / name)
                                                .read_text())[1])
        left = [p for p in gitlocks.owned_lock_files(ws.repo_git, ws.worktree(agent), agent)
                if p.exists()]
        assert left == [], (label, left)
    for token in world.tokens:
        count = bodies.count(token)
        assert count == 1 if token in published else count <= 1, (label, token, count)
    # The independent reader of the workspace: numbering and one commit per entry, the
    # deliveries, every result and owed reply, and the returned marks (I-4, I-5, I-11,
    # I-12, I-14): a mark a kill left behind between a result's publish and its move is
    # repaired by the next touch (R-SCAN-11).
    report = audit(ws.root)
    assert report.violations() == [], (label, report.text())


def at_rest(world: World, label: str) -> None:
    """No agent is left with work due: each one's newest entry is a final model answer."""
    for agent in world.ws.agent_ids():
        tail = os.listdir(world.ws.worktree(agent) / "messages")
        newest = max(tail, key=lambda n: int(n.split("-", 1)[0]))
        assert newest.endswith(".json") and "tool" not in newest, (label, newest)


def drivable(world: World, label: str) -> None:
    """Every agent answers a new message, with no hand repair."""
    inline = Inline(world.ws)
    for agent in world.ws.agent_ids():
        cli_message(world.ws, agent, f"ping {label}", "user", inline.launcher)
    assert inline.settle(max_hops=100)
    at_rest(world, label)


# --------------------------------------------------------------------------- the sweep


@dataclass
class Recorded:
    """A sequence's starting workspace (saved as a template) and the operations it performs."""

    name: str
    ws: Workspace
    world: World
    template: Path
    ops: list[str]
    extra: list[str]

    def states(self) -> list[tuple[int, str | None]]:
        """Every crash state: each prefix, and each ``git commit`` cut inside three ways."""
        states: list[tuple[int, str | None]] = [(k, None) for k in range(len(self.ops))]
        commits = [k for k, op in enumerate(self.ops) if op == "git commit"]
        states += [(k, how) for k in commits for how in INSIDE]
        return states


def _normalized(op: str) -> str:
    return re.sub(r"[0-9a-f]{6,}|\d+", "#", op)


def kind(ops: Sequence[str], k: int, how: str | None) -> tuple[str, str, str | None]:
    """What a crash before ``ops[k]`` is, without ids and numbers: the operation, for a git
    call the protocol point it serves (the next non-git operation), and the actor phase
    it falls in (the newest hop, scan or baton point before it)."""
    op = _normalized(ops[k])
    if op.startswith("git "):
        op += " > " + next((_normalized(o) for o in ops[k + 1 :] if not o.startswith("git ")), "")
    phase = next(
        (o.split(" ", 1)[0] for o in reversed(ops[:k]) if o.startswith(("hop.", "scan.", "baton"))),
        "start",
    )
    return phase, op, how


def sample(recorded: Sequence[Recorded]) -> dict[str, list[tuple[int, str | None]]]:
    """The CI sample: the first crash state of every kind, over the sequences in order.

    Deterministic (it depends on the operation lists only); every sequence keeps at
    least the states of kinds no earlier sequence has, and every cut inside a commit
    of a new kind is kept."""
    seen: set[tuple[str, str, str | None]] = set()
    picked: dict[str, list[tuple[int, str | None]]] = {}
    for rec in recorded:
        picked[rec.name] = []
        for k, how in rec.states():
            key = kind(rec.ops, k, how)
            if key not in seen:
                seen.add(key)
                picked[rec.name].append((k, how))
    return picked


def _run_in_child(ws_root: Path, world: World, sequence: Sequence_, cut: Cut) -> int:
    pid = os.fork()
    if pid == 0:  # the dying process
        try:
            sequence(Workspace(ws_root, CutGit(cut)), world, cut)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return status


def _link_immutable(src: str, dst: str) -> object:
    """Copy a file, but hard-link git objects and hooks: nothing ever writes them in place."""
    if f"{os.sep}objects{os.sep}" in src or f"{os.sep}hooks{os.sep}" in src:
        os.link(src, dst)
        return dst
    return shutil.copy2(src, dst)


def record(name: str, root: Path) -> Recorded:
    """Build the sequence's starting workspace, save it, and record the full run's operations."""
    setup, sequence, extra = SEQUENCES[name]
    ws = create_workspace(root / "ws")
    world = setup(ws)
    world.tokens.extend(extra)
    template = root / "template"
    shutil.copytree(ws.root, template, symlinks=True)
    # The full run records the operations (in a child as well: same process shape).
    cut = Cut()
    pid = os.fork()
    if pid == 0:
        try:
            sequence(Workspace(ws.root, CutGit(cut)), world, cut)
            (root / "ops").write_text("\n".join(cut.ops))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    ops = (root / "ops").read_text().splitlines()
    assert ops, "the sequence recorded no operation"
    return Recorded(name, ws, world, template, ops, list(extra))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Recorded]:
    root = tmp_path_factory.mktemp("crash-points")
    return {name: record(name, root / str(i)) for i, name in enumerate(SEQUENCES)}


def sweep(
    rec: Recorded, states: Sequence[tuple[int, str | None]], *, ping_every: int = 1
) -> int:
    """Crash at each state, run the next touch, and check the files on disk.

    The new-message check (``drivable``) runs after every cut inside a commit and on every
    ``ping_every``-th state; the others are checked to be at rest. Returns how many were pinged.
    """
    _, sequence, _ = SEQUENCES[rec.name]
    ws, world, ops = rec.ws, rec.world, rec.ops
    binned: list[subprocess.Popen[bytes]] = []
    pinged = 0
    def crash(k: int, how: str | None, touch: str) -> None:
        # The used workspace is moved aside and removed by a process of its own meanwhile.
        trash = rec.template.with_name(f"used-{k}-{how}-{touch}")
        ws.root.rename(trash)
        binned.append(subprocess.Popen(["rm", "-rf", "--", str(trash)]))
        shutil.copytree(rec.template, ws.root, symlinks=True, copy_function=_link_immutable)
        status = _run_in_child(ws.root, world, sequence, Cut(at=k, inside=how))
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (k, how)

    for i, (k, how) in enumerate(states):
        published = {
            t for t in rec.extra
            if any(op.startswith("deposit.published") for op in ops[:k])
        }
        label = f"{rec.name} cut {k} ({ops[k]}{', ' + how if how else ''})"
        crash(k, how, "scan")
        next_touch(ws)
        check(world, published, label)
        if how is not None or i % ping_every == 0:
            drivable(world, label)
            pinged += 1
        else:
            at_rest(world, label)
        crash(k, how, "mail")
        mail_first(ws, label)
        check(world, published, f"{label}, mail first")
        at_rest(world, f"{label}, mail first")
    for proc in binned:
        assert proc.wait() == 0
    return pinged


def _report(
    rec: Recorded,
    states: Sequence[tuple[int, str | None]],
    pinged: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    inside = sum(1 for _, how in states if how)
    with capsys.disabled():
        print(f"\n  crash states checked for {rec.name}: {len(states)} of {len(rec.states())} "
              f"({len(states) - inside} prefixes of {len(rec.ops)}, {inside} inside git commit;"
              f" each touched by a scan first and by mail first; {pinged} answered a new "
              "message after the scan)")


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_a_crash_of_every_kind_heals_on_the_next_touch(
    name: str, recorded: dict[str, Recorded], capsys: pytest.CaptureFixture[str]
) -> None:
    """CI-sized: the first crash state of every kind (see ``kind``); the full run is slow."""
    states = sample(list(recorded.values()))[name]
    pinged = sweep(recorded[name], states, ping_every=3)
    _report(recorded[name], states, pinged, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SEQUENCES))
def test_every_crash_point_heals_on_the_next_touch(
    name: str, recorded: dict[str, Recorded], capsys: pytest.CaptureFixture[str]
) -> None:
    states = recorded[name].states()
    pinged = sweep(recorded[name], states)
    _report(recorded[name], states, pinged, capsys)
