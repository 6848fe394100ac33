"""The refinement world's view: the implementation's state, read from the workspace.

The abstraction (``WorldView.real_view``) reads only files on disk, refs and kernel
locks: per agent the pending deposits (sender, kind), the transcript facts the model
keeps (re-derived here from the entry files, independently of both the model's and the
implementation's decision functions), delivered entries not yet committed, whether the
newest entry is a terminal one not yet committed and whether a tool-calling entry or a
tool result is (renamed, its commit still to come or lost with a killed driver), which
actor holds the executor lock, whether a returned / stopped / budget mark is at the
tip, and how many recorded launches have not started. ``model_view`` abstracts a model
state to the same shape, so the two compare with ``==``.

The view reads; it never steps an actor or the model. The rules that step them and
compare the two views are :mod:`lernie_stateful.refinement`'s ``World``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from lernie_spec import model as M
from lernie_spec.model import NOBODY, USER, Scope, State

from lernie_ref.core.ids import require_agent_id
from lernie_ref.core.vocab import (
    AGENT_REF_PREFIX,
    INBOX_DIR,
    MARK_REF_PREFIX,
    MESSAGES_DIR,
    TOOL_ORIGIN,
    USER_SENDER,
    MarkKind,
)
from lernie_ref.substrate.launcher import RecordingLauncher
from lernie_ref.substrate.workspace import Workspace

SCOPE = Scope(
    parents=(NOBODY, 0, 0),  # P, and two children it may dispatch
    initial=(True, False, False),
    messages=99, advances=0, stops=99, scans=99, crashes=99, tools=99, sends=99,
    exhaust=99, max_procs=99, max_seq=99, launch_cap=99, errors=0,
    split_commit=True,  # the real driver passes an executor entry's rename and its commit
)
"""The model's world for refinement: budgets are the program's, not the model's."""


def _holds_flock(fd: int) -> bool:
    """Whether the open description behind ``fd`` carries a ``flock`` (its ``fdinfo`` has a
    ``lock:`` line): an actor that merely has the inbox open (a writer's guarded walk) is
    not a holder, as R-STOP-2 reads it for real processes."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
            return any(line.startswith("lock:") and "FLOCK" in line for line in info)
    except OSError:
        return False


class Divergence(AssertionError):
    """The implementation did something no model step explains."""


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
    return set(index_blobs(worktree))


def index_blobs(worktree: Path | str) -> dict[str, str]:
    """The paths in a worktree's git index and their blob ids (`git ls-files -s`),
    parsed from the index file (format 2/3) without running git."""
    dotgit = os.path.join(worktree, ".git")
    if os.path.isfile(dotgit):
        gitdir = _read(dotgit).decode("utf-8").split("gitdir:", 1)[1].strip()
    else:
        gitdir = dotgit
    try:
        data = _read(os.path.join(gitdir, "index"))
    except FileNotFoundError:
        return {}
    if data[:4] != b"DIRC":
        raise Divergence(f"unreadable git index in {worktree}")
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3):
        raise Divergence(f"git index version {version} is not read by the abstraction")
    out: dict[str, str] = {}
    pos = 12
    for _ in range(count):
        start = pos
        blob = data[pos + 40:pos + 60].hex()
        flags = struct.unpack(">H", data[pos + 60:pos + 62])[0]
        pos += 62
        if version == 3 and flags & 0x4000:
            pos += 2
        end = data.index(b"\0", pos)
        out[data[pos:end].decode("utf-8", "surrogateescape")] = blob
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


class WorldView:
    """One real workspace seen as the model sees it: its agents' ids in model slots, and
    the abstract state read from disk, refs and kernel locks (``real_view``)."""

    def __init__(self, ws: Workspace, launcher: RecordingLauncher) -> None:
        self.ws = ws
        self.launcher = launcher
        self.ids: list[str | None] = [None] * len(SCOPE.parents)
        self.started = 0  # launches started (a prefix of launcher.launches)
        self._dirs: dict[str, tuple[str, str, str]] = {}

    def descriptors(self) -> Iterable[tuple[object, set[int]]]:
        """Each live actor's key with the descriptors it opened (whose lock is whose)."""
        return ()

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
                for key, fds in self.descriptors():
                    for f in fds:
                        with contextlib.suppress(OSError):
                            st = os.fstat(f)
                            same = (st.st_dev, st.st_ino) == (want.st_dev, want.st_ino)
                            if same and _holds_flock(f):
                                owners.add(key)
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
