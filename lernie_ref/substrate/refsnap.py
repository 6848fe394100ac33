"""Every agent's refs in one git call, and confirmed under an agent's lock without git
(R-WS-3, R-WS-5, R-SCAN-6).

``lernie scan`` and ``lernie status`` need, per agent, its branch tip, its three marks
and the tip's subject. Asked one at a time that is several git processes per agent;
here one ``git for-each-ref`` reads them all (:class:`RefSnapshot`).

``lernie status`` takes no lock and reads the snapshot as it is. The sweep must read
an agent's refs *while holding its lock* (R-SCAN-6: only the holder moves them), and
the snapshot was taken before. :func:`confirm` closes that gap: with the lock held it
reads the agent's refs from git's own files — the loose ref file, else
``packed-refs`` (re-read whenever its inode, size or mtime changed, as git itself does)
— and the snapshot's values are used only when every one of them is confirmed
unchanged. Anything the files do not answer plainly (another ref storage, a symbolic
or malformed ref, an unusual id, a value that moved) returns ``None``, and the caller
asks git per ref, exactly as before. Object types never change, so the snapshot's
peeled values and subjects stay valid for an unchanged object id.

The sweep and status read the refs in two steps. :class:`RefOids` is a ``for-each-ref``
that prints names and object ids only, so git opens no object (at a thousand agents
that is most of what the full read costs); :class:`ObjectFacts` holds what the full read
(:meth:`RefSnapshot.read`) says about each object id (its type, the commit a tag peels
to, its subject) and is read once, the first time a pass needs any of it: an agent with
no mark and no terminal response needs none. Facts about an object id never change, so
they are valid whenever they were read; which object a ref holds is what the sweep
confirms under the lock.

A hop reads one agent's tip and marks, and sometimes the tip's subject, with no
snapshot to confirm: the one ref-file reader (:mod:`lernie_ref.substrate.reffiles`), whose
:meth:`RefFiles.resolve` (git's lookup order over the ref files),
:meth:`RefFiles.commit_of` (a mark peeled to its commit, typed from the loose object)
and :meth:`RefFiles.subject` (a plain one-line subject of a loose commit) answer there
without a git process, and the caller asks git whenever they return no plain answer
(R-WS-5).
"""

from __future__ import annotations

from itertools import compress, repeat
from pathlib import Path

from lernie_ref.core.errors import LernieError
from lernie_ref.core.ids import AgentId, agent_ids_among
from lernie_ref.core.record import record
from lernie_ref.core.vocab import AGENT_REF_PREFIX, MARK_REF_PREFIX, NAME_FILE, MarkKind
from lernie_ref.substrate.gitrun import GitRunner
from lernie_ref.substrate.reffiles import RefFiles, is_oid, plain_ref_component

_FORMAT = "%00".join(
    ("%(refname)", "%(objectname)", "%(objecttype)", "%(*objectname)", "%(*objecttype)",
     "%(subject)")
)


@record(frozen=True)
class RefInfo:
    """One ref as ``for-each-ref`` showed it."""

    oid: str
    kind: str
    """The object's type (``commit``, ``tag``, …)."""
    peeled_oid: str
    """For a tag, the object it tags (one level); else ``''``."""
    peeled_kind: str
    subject: str
    """The subject of the object (a commit's first paragraph, on one line)."""

    def as_commit(self) -> str | None:
        """``rev-parse --verify --quiet <ref>^{commit}``: the commit, ``None`` for another type.

        Raises :class:`LookupError` for a tag of a tag (only git peels that far)."""
        if self.kind == "commit":
            return self.oid
        if self.kind == "tag":
            if self.peeled_kind == "commit":
                return self.peeled_oid
            if self.peeled_kind == "tag":
                raise LookupError("nested tag")
        return None


@record(frozen=True)
class AgentRefs:
    """One agent's branch tip, the tip's subject, and its marks (peeled to commits)."""

    tip: str
    subject: str
    returned: str | None
    budget: str | None
    stopped: str | None


MARK_KINDS = (MarkKind.RETURNED, MarkKind.BUDGET_EXHAUSTED, MarkKind.STOPPED)


def mark_ref(kind: str, agent: str) -> str:
    return f"{MARK_REF_PREFIX}{kind}/{agent}"


class RefSnapshot:
    """``refs/heads/agents/*`` and ``refs/lernie/*/*`` as one ``for-each-ref`` read them."""

    def __init__(self, refs: dict[str, RefInfo]) -> None:
        self.refs = refs

    @classmethod
    def read(cls, git: GitRunner, repo_git: Path) -> RefSnapshot:
        """One ``git for-each-ref``; a git failure raises :class:`GitError`."""
        out = git.run(repo_git, ["for-each-ref", f"--format={_FORMAT}",
                                 AGENT_REF_PREFIX, MARK_REF_PREFIX]).stdout
        refs: dict[str, RefInfo] = {}
        for line in out.splitlines():
            fields = line.split("\0")
            if len(fields) != 6:
                continue
            name, oid, kind, peeled, peeled_kind, subject = fields
            refs[name] = RefInfo(oid, kind, peeled, peeled_kind, subject)
        return cls(refs)

    def agent_ids(self) -> list[AgentId]:
        """R-WS-3, R-ID-9: every agent id, sorted (as :meth:`Registry.agent_ids` lists them)."""
        ids = [r[len(AGENT_REF_PREFIX) :] for r in self.refs if r.startswith(AGENT_REF_PREFIX)]
        return sorted(agent_ids_among(ids))

    def agent_refs(self, agent: str) -> AgentRefs | None:
        """The agent's refs as the snapshot holds them; ``None`` when only git can say."""
        tip = self.refs.get(AGENT_REF_PREFIX + agent)
        if tip is None:
            return None
        try:
            marks = [self._mark(kind, agent) for kind in MARK_KINDS]
        except LookupError:
            return None
        return AgentRefs(tip.oid, tip.subject, *marks)

    def _mark(self, kind: str, agent: str) -> str | None:
        info = self.refs.get(mark_ref(kind, agent))
        return None if info is None else info.as_commit()


class AgentOids:
    """One agent's branch tip and marks as object ids (``None``: no such mark ref)."""

    __slots__ = ("budget", "returned", "stopped", "tip")

    def __init__(
        self, tip: str, returned: str | None, budget: str | None, stopped: str | None
    ) -> None:
        self.tip = tip
        self.returned = returned
        self.budget = budget
        self.stopped = stopped

    def mark(self, kind: MarkKind) -> str | None:
        if kind is MarkKind.RETURNED:
            return self.returned
        if kind is MarkKind.BUDGET_EXHAUSTED:
            return self.budget
        return self.stopped


class RefOids:
    """``refs/heads/agents/*`` and ``refs/lernie/*/*`` as names and object ids, read by one
    ``for-each-ref`` that opens no object."""

    def __init__(self, oids: dict[str, str]) -> None:
        self.oids = oids

    @classmethod
    def read(cls, git: GitRunner, repo_git: Path) -> RefOids:
        """One ``git for-each-ref``; a git failure raises :class:`GitError`."""
        out = git.run(repo_git, ["for-each-ref", "--format=%(refname)%00%(objectname)",
                                 AGENT_REF_PREFIX, MARK_REF_PREFIX]).stdout
        lines = out.splitlines()
        try:  # every line is <name> NUL <oid>: the whole output in one step
            oids: dict[str, str] = dict(map(str.split, lines, repeat("\0")))
        except ValueError:  # some line is not: the others, line by line
            oids = {}
            for line in lines:
                name, nul, oid = line.partition("\0")
                if nul and "\0" not in oid:
                    oids[name] = oid
        return cls(oids)

    def agent_ids(self) -> list[AgentId]:
        """R-WS-3, R-ID-9: every agent id, sorted (as :meth:`RefSnapshot.agent_ids`)."""
        refs = list(self.oids)
        heads = compress(refs, map(str.startswith, refs, repeat(AGENT_REF_PREFIX)))
        return sorted(agent_ids_among(map(str.removeprefix, heads, repeat(AGENT_REF_PREFIX))))

    def agent_oids(self, agent: str) -> AgentOids | None:
        tip = self.oids.get(AGENT_REF_PREFIX + agent)
        if tip is None:
            return None
        get = self.oids.get
        return AgentOids(tip, *(get(mark_ref(kind, agent)) for kind in MARK_KINDS))

    def confirm(self, files: RefFiles, agent: str) -> AgentOids | None:
        """:func:`confirm` for the object ids alone: the agent's refs now, when git's files
        show every one unchanged since this read (call it holding the agent's lock)."""
        if not plain_ref_component(agent):
            return None
        found = self.agent_oids(agent)
        if found is None:
            return None
        names = (AGENT_REF_PREFIX + agent, *(mark_ref(kind, agent) for kind in MARK_KINDS))
        want = [found.tip, *((found.mark(kind) or "") for kind in MARK_KINDS)]
        return found if files.values(names) == want else None


class ObjectFacts:
    """What :meth:`RefSnapshot.read` says about each object id the refs hold, read once,
    when first asked; ``None`` for an object id it does not cover (ask git instead)."""

    def __init__(self, git: GitRunner, repo_git: Path) -> None:
        self._git = git
        self._repo = repo_git
        self._by_oid: dict[str, RefInfo] | None = None

    def info(self, oid: str) -> RefInfo | None:
        if self._by_oid is None:
            try:
                snapshot = RefSnapshot.read(self._git, self._repo)
                self._by_oid = {info.oid: info for info in snapshot.refs.values()}
            except LernieError:  # not an answer: each value is asked of git instead
                self._by_oid = {}
        return self._by_oid.get(oid)

    def commit(self, oid: str) -> tuple[bool, str | None]:
        """``(known, value)``: the commit ``rev-parse --verify --quiet <oid>^{commit}`` names
        (``None`` for another type), when the facts say so plainly."""
        info = self.info(oid)
        if info is None:
            return False, None
        try:
            return True, info.as_commit()
        except LookupError:
            return False, None

    def refs_of(self, oids: AgentOids) -> AgentRefs | None:
        """The agent's :class:`AgentRefs` for these object ids (a mark peeled to its commit,
        the tip's subject only when the facts were needed anyway), or ``None``."""
        marks: list[str | None] = []
        for kind in MARK_KINDS:
            oid = oids.mark(kind)
            if oid is None:
                marks.append(None)
                continue
            known, value = self.commit(oid)
            if not known:
                return None
            marks.append(value)
        return AgentRefs(oids.tip, "", *marks)


def confirm(snapshot: RefSnapshot, files: RefFiles, agent: str) -> AgentRefs | None:
    """The agent's refs now, when git's files show every one unchanged since the snapshot.

    Call it holding the agent's lock (R-SCAN-6), so the values cannot move afterwards
    either. ``None``: something moved or the files do not answer plainly; ask git.
    """
    if not plain_ref_component(agent):
        return None
    refs = snapshot.agent_refs(agent)
    if refs is None:
        return None
    for name in (AGENT_REF_PREFIX + agent, *(mark_ref(k, agent) for k in MARK_KINDS)):
        info = snapshot.refs.get(name)
        if files.value(name) != ("" if info is None else info.oid):
            return None
    return refs


def names_at(git: GitRunner, repo_git: Path, tips: dict[str, str]) -> dict[str, str | None]:
    """The trimmed ``name`` blob at each agent's tip, read by one ``git cat-file --batch``.

    ``''`` when the tip has no ``name`` (as :meth:`Registry.agent_name` answers); ``None``
    for an agent this call cannot answer with certainty (the ``name`` is not a blob, its
    bytes are not plain UTF-8, the output does not parse): ask per agent instead.
    """
    agents = [a for a, tip in tips.items() if is_oid(tip)]
    out: dict[str, str | None] = dict.fromkeys(tips)
    if not agents:
        return out
    queries = [f"{tips[a]}:{NAME_FILE}" for a in agents]
    batch = "".join(q + "\n" for q in queries).encode("utf-8")
    result = git.run(repo_git, ["cat-file", "--batch"], check=False, input=batch)
    if result.returncode != 0:
        return out
    text, pos = result.stdout, 0
    for agent, query in zip(agents, queries, strict=True):
        end = text.find("\n", pos)
        header = text[pos:] if end < 0 else text[pos:end]
        if header == f"{query} missing":
            out[agent] = ""
            pos = len(text) if end < 0 else end + 1
            continue
        fields = header.split(" ")
        if len(fields) != 3 or not fields[2].isdigit() or end < 0:
            return out
        size = int(fields[2])
        start = end + 1
        taken = 0
        at = start
        while taken < size and at < len(text):
            char = text[at]
            if char == "\ufffd":  # a lossy decode: the byte count is lost from here on
                return out
            taken += len(char.encode("utf-8"))
            at += 1
        if taken > size or (taken < size and at < len(text)):
            return out
        if fields[1] == "blob":
            out[agent] = text[start:at].strip()
        pos = at + 1  # the newline after the content
    return out
