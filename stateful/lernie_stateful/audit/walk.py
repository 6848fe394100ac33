"""The audit's walk: everything a workspace's files and git history witness, read once.

The walk judges nothing. It reads the registry and the marks, each agent's own
first-parent commits with the paths they touch, the bytes of every committed entry, the
files in each worktree's ``messages/``, every inbox, the staging files and worktree
directories, and the kernel's lock table; :mod:`lernie_stateful.audit.checks` then judges
what it read. A file the protocol does not name a deposit is listed, never read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from lernie_stateful import procfs
from lernie_stateful.audit.findings import AuditError
from lernie_stateful.audit.git import Git
from lernie_stateful.audit.layout import Layout
from lernie_stateful.audit.readings import (
    Deposit,
    blocks_of,
    entry_name,
    pending_name,
    read_deposit,
    tool_calls,
)


@dataclass(frozen=True)
class Entry:
    """One transcript entry (R-TR-1) as the audit read it: from a commit, or a stray file."""

    seq: int
    origin: str
    delivered: bool
    name: str
    data: bytes
    commit: str  # the commit that added it ("" for an uncommitted stray)

    @cached_property
    def parsed(self) -> Deposit | list[dict[str, object]] | str:
        """A delivered entry's deposit (R-DEP-4/5), a model or tool entry's blocks (R-TR-4),
        or the reason its bytes are neither."""
        return read_deposit(self.data) if self.delivered else blocks_of(self.data)

    @property
    def blocks(self) -> list[dict[str, object]] | None:
        """The content blocks of a model or tool entry that parses."""
        return self.parsed if isinstance(self.parsed, list) else None

    @property
    def terminal(self) -> bool:
        """R-DEBT-2: a model entry (not ``tool``) with no tool call."""
        return (not self.delivered and self.origin != "tool" and self.blocks is not None
                and not tool_calls(self.blocks))


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    subject: str
    changes: tuple[tuple[str, str], ...]  # (git status letter, path)


@dataclass
class Agent:
    id: str
    tip: str
    commits: list[Commit]  # its own first-parent commits, oldest (creation) first
    entries: list[Entry]  # committed, in landing order
    creation_messages: list[str] = field(default_factory=list)  # in the creation commit
    name: str = ""
    worktree: list[tuple[str, bytes]] | None = None  # messages/ files; None: unlistable

    @property
    def history(self) -> list[str]:
        return [c.sha for c in self.commits]


@dataclass
class Copy:
    """A deposit's bytes somewhere: pending in an inbox, delivered as an entry, or a stray."""

    recipient: str
    sender: str
    data: bytes
    place: str  # a file path or "<commit> messages/NNN-x.md"
    delivered: bool


@dataclass
class InboxFile:
    name: str
    data: bytes | OSError | None  # None: not a deposit's name, so never read


@dataclass
class History:
    """What the walk read of one workspace."""

    ws: Path
    lay: Layout
    git: Git
    agents: dict[str, Agent] = field(default_factory=dict)
    driven: list[str] = field(default_factory=list)
    inbox_error: OSError | None = None  # the inbox root exists but cannot be listed
    inboxes: list[tuple[str, list[InboxFile] | None]] = field(default_factory=list)
    staged: list[str] = field(default_factory=list)  # agents with a staging file
    worktree_dirs: list[str] = field(default_factory=list)
    marks: dict[str, str] = field(default_factory=dict)
    pinned: dict[str, bytes | None] = field(default_factory=dict)  # creation goal and name

    @cached_property
    def copies(self) -> list[Copy]:
        """Every deposit's bytes: each agent's delivered entries and delivered strays, then
        every inbox's pending deposits (in that order)."""
        out = []
        for a in self.agents.values():
            for e in a.entries:
                if e.delivered:
                    out.append(Copy(a.id, e.origin, e.data,
                                    f"{e.commit[:12]} {self.lay.messages}/{e.name}", True))
            committed = {e.name for e in a.entries}
            for name, data in a.worktree or ():
                parsed = entry_name(name)
                if name not in committed and parsed and parsed[2]:
                    out.append(Copy(a.id, parsed[1], data, self.stray_path(a.id, name), True))
        for d, files in self.inboxes:
            for f in files or ():
                named = pending_name(f.name)
                if named is not None and isinstance(f.data, bytes):
                    out.append(Copy(d, named[0], f.data, f"{self.lay.inbox}/{d}/{f.name}",
                                    False))
        return out

    def stray_path(self, agent: str, name: str) -> str:
        return f"{self.lay.agents}/{agent}/{self.lay.messages}/{name}"

    @property
    def pending(self) -> int:
        return sum(isinstance(f.data, bytes) for _, files in self.inboxes for f in files or ())


def walk(ws: Path, layout: Layout | None = None) -> History:
    """Read the workspace at ``ws``; :class:`AuditError` when it is not one."""
    lay = layout or Layout()
    repo = ws / lay.repo
    if not repo.is_dir():
        raise AuditError(f"{ws} is not a workspace ({lay.repo} is not a directory)")
    h = History(ws, lay, Git(repo))
    heads = h.git.refs(lay.agent_ref_prefix.rstrip("/"))
    ids = sorted(r[len(lay.agent_ref_prefix):] for r in heads)
    table = procfs.flock_table()
    h.driven = sorted(a for a in ids if procfs.flock_holders(ws / lay.inbox / a, table))
    for agent in ids:
        h.agents[agent] = _agent(h, agent, heads[lay.agent_ref_prefix + agent])
    names = h.git.blobs([f"{a.tip}:name" for a in h.agents.values()])
    for a in h.agents.values():
        a.name = (names.get(f"{a.tip}:name") or b"").decode(errors="replace").strip()
        a.worktree = _worktree(ws / lay.agents / a.id / lay.messages)
    _inboxes(h)
    made = [a for a in h.agents.values() if a.history]
    h.pinned = h.git.blobs([f"{a.history[0]}:{f}" for a in made for f in (lay.goal, lay.name)])
    h.staged = [a for a in h.agents if (ws / lay.steps / a / lay.staging).exists()]
    if (ws / lay.agents).is_dir():
        h.worktree_dirs = sorted(os.listdir(ws / lay.agents))
    h.marks = h.git.refs(lay.mark_ref_prefix.rstrip("/"))
    return h


def _agent(h: History, agent: str, tip: str) -> Agent:
    """R-WS-4, R-TR-1: the agent's own commits (up to the first one not tagged ``[<id>]``)
    and the entries they add, with their bytes."""
    own_tag = f" [{agent}]"
    mine = []
    for commit, parents, subject, changes in h.git.log(tip):
        if not subject.endswith(own_tag):
            break
        mine.append(Commit(commit, tuple(parents), subject, tuple(changes)))
    mine.reverse()
    if not mine:
        return Agent(agent, tip, [], [])
    creation = mine[0].sha
    tree = h.git.run("ls-tree", "-z", "--name-only", f"{creation}:{h.lay.messages}"
                     ) if _has_messages(h, creation) else b""
    at_creation = list(filter(None, tree.decode(errors="surrogateescape").split("\0")))
    prefix = h.lay.messages + "/"
    present: dict[str, str] = {}  # name -> blob spec of the (last) commit adding it
    order: list[tuple[str, str]] = []
    for c in mine[1:]:
        for status, path in c.changes:
            name = path[len(prefix):]
            if status == "A" and path.startswith(prefix) and entry_name(name) is not None:
                present[name] = f"{c.sha}:{prefix}{name}"
                order.append((name, c.sha))
    blobs = h.git.blobs([present[n] for n, _ in order])
    entries = []
    for name, commit in order:
        parsed = entry_name(name)
        data = blobs.get(present[name])
        if parsed is None or data is None:
            continue
        entries.append(Entry(parsed[0], parsed[1], parsed[2], name, data, commit))
    return Agent(agent, tip, mine, entries, at_creation)


def _has_messages(h: History, commit: str) -> bool:
    out = h.git.run("ls-tree", "--name-only", commit, h.lay.messages)
    return bool(out.strip())


def _worktree(directory: Path) -> list[tuple[str, bytes]] | None:
    """The files in a worktree's ``messages/`` and their bytes (an unreadable one skipped)."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return None
    out = []
    for name in names:
        try:
            out.append((name, (directory / name).read_bytes()))
        except OSError:
            continue
    return out


def _inboxes(h: History) -> None:
    """R-DEP-9: every inbox directory and its files; the bytes of those named as deposits."""
    root = h.ws / h.lay.inbox
    try:
        dirs = sorted(os.listdir(root))
    except FileNotFoundError:
        return  # nothing pending: an implementation may make the inbox root lazily
    except OSError as exc:
        h.inbox_error = exc
        return
    for d in dirs:
        directory = root / d
        if not directory.is_dir():
            h.inboxes.append((d, None))
            continue
        files = []
        for name in sorted(os.listdir(directory)):
            data: bytes | OSError | None = None
            if pending_name(name) is not None:
                try:
                    data = (directory / name).read_bytes()
                except OSError as exc:
                    data = exc
            files.append(InboxFile(name, data))
        h.inboxes.append((d, files))
