"""The workspace: its layout, its agents' refs and worktrees, and their names (R-WS, R-ID-4,
R-ID-6).

A workspace is a directory holding ``repo.git`` (bare), ``inbox/``, ``steps/``,
``agents/`` and ``lernie.toml``. An agent *is* its branch ``refs/heads/agents/<id>``;
its transcript lives in the worktree ``agents/<id>/``. Every path is built from
the root and guarded ids (R-ID-3), so nothing is written outside the workspace
(R-WS-7). Every git call goes through the injected runner (R-WS-6).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.clock import Clock
from lernie_ref.core.errors import (
    ContainmentError,
    WorkspaceError,
    debug_quote,
    io_text,
)
from lernie_ref.core.ids import (
    AgentId,
    agent_ids_among,
    is_agent_id,
    is_timestamp_token,
    mint_child_id,
    mint_root_id,
)
from lernie_ref.core.vocab import (
    AGENT_REF_PREFIX,
    AGENTS_DIR,
    CHILD_ROLE,
    CONFIG_BRANCH,
    DRIVER_LOG,
    GOAL_FILE,
    INBOX_DIR,
    MARK_REF_PREFIX,
    NAME_FILE,
    REPO_DIR,
    STEPS_DIR,
)
from lernie_ref.substrate import guarded
from lernie_ref.substrate.gitrun import GitResult, GitRunner, SubprocessGit
from lernie_ref.substrate.registry import Registry

if TYPE_CHECKING:
    from lernie_ref.substrate.spool import Spool

NAME_MAX_CHARS = 64
"""R-ID-8: the longest agent name, in characters (this reference's own limit, D-26)."""

# A repo-local identity so commits work on a machine with no global git identity.
_IDENTITY = (
    ("user.name", "lernie"),
    ("user.email", "lernie@localhost"),
    ("commit.gpgsign", "false"),
)


class GuardedGit:
    """The workspace's git runner: before each call, the directories git will write are
    verified to be real directories below the root (R-WS-7).

    Git resolves its paths itself, so this is a check made just before git starts, not
    the race-free walk the protocol's own writes use; SPEC R-WS-7 states the window.
    For ``<ws>/repo.git`` that is ``repo.git`` and its ``objects``, ``refs`` and
    ``worktrees``; for a worktree ``<ws>/agents/<id>`` also the worktree, its
    ``messages/``, its ``.git`` file and ``repo.git/worktrees/<id>`` (its index).
    """

    def __init__(self, inner: GitRunner, root: Path) -> None:
        self.inner = inner
        self.root = root

    def _verify(self, dest: Path) -> None:
        try:
            rel = Path(dest).relative_to(self.root)
        except ValueError:
            return  # not a workspace path (e.g. `git init` of a new workspace's root)
        parts = rel.parts
        if parts[:1] == (REPO_DIR,) and len(parts) == 1:
            guarded.require_dirs(
                self.root,
                (REPO_DIR,),
                (REPO_DIR, "objects"),
                (REPO_DIR, "refs"),
                (REPO_DIR, "worktrees"),
            )
        elif parts[:1] == (AGENTS_DIR,) and len(parts) == 2:
            guarded.walk(self.root, parts).close()  # the worktree must be there
            guarded.require_dirs(
                self.root,
                (*parts, "messages"),
                (REPO_DIR,),
                (REPO_DIR, "objects"),
                (REPO_DIR, "refs"),
                (REPO_DIR, "worktrees"),
                (REPO_DIR, "worktrees", parts[1]),
            )
            guarded.require_file(self.root, (*parts, ".git"))

    def run(
        self, dest: Path, args: Sequence[str], *, check: bool = True, input: bytes | None = None
    ) -> GitResult:
        self._verify(dest)
        return self.inner.run(dest, args, check=check, input=input)


class Workspace(Registry):
    """A workspace root (kept as given: launches pass it on unchanged, R-LAUNCH-2).

    The guards and the name registry come from :class:`Registry`; this class adds the
    paths, the containment guards of the worktrees, and everything that creates agents.
    Its git runner is wrapped in :class:`GuardedGit` (R-WS-7).
    """

    root: Path

    def __init__(self, root: str | Path, git: GitRunner | None = None) -> None:
        super().__init__(Path(root), GuardedGit(git or SubprocessGit(), Path(root)))
        self._abs = Path(os.path.abspath(self.root))
        # built once: scan and status ask for a path per agent, several times each
        self._inbox_root = self.root / INBOX_DIR
        self._steps_root = self.root / STEPS_DIR
        self._agents_root = self.root / AGENTS_DIR
        self._repo_git = self.root / REPO_DIR
        self._inboxes: dict[str, Path] = {}  # per checked id: a pass asks several times
        self._worktrees: dict[str, Path] = {}
        self._inbox_text = os.fspath(self._inbox_root)
        self._agents_text = os.fspath(self._agents_root)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    # ---------------------------------------------------------------- paths

    @property
    def inbox_root(self) -> Path:
        return self._inbox_root

    @property
    def repo_git(self) -> Path:
        return self._repo_git

    @property
    def steps_root(self) -> Path:
        return self._steps_root

    @property
    def agents_root(self) -> Path:
        return self._agents_root

    def inbox_dir(self, agent_id: AgentId) -> Path:
        path = self._inboxes.get(agent_id)
        if path is None:
            path = self._inboxes[agent_id] = self._inbox_root / agent_id
        return path

    def worktree(self, agent_id: AgentId) -> Path:
        path = self._worktrees.get(agent_id)
        if path is None:
            path = self._worktrees[agent_id] = self._agents_root / agent_id
        return path

    def inbox_text(self, agent_id: AgentId) -> str:
        """:meth:`inbox_dir` as text (``str`` of the same path), with no path object made:
        the sweep asks once for every agent, and most need nothing more."""
        return f"{self._inbox_text}/{agent_id}"

    def worktree_text(self, agent_id: AgentId) -> str:
        """:meth:`worktree` as text, with no path object made (as :meth:`inbox_text`)."""
        return f"{self._agents_text}/{agent_id}"

    def steps_dir(self, agent_id: AgentId) -> Path:
        return self.steps_root / agent_id

    def driver_log(self, agent_id: AgentId) -> Path:
        return self.steps_dir(agent_id) / DRIVER_LOG

    # ---------------------------------------------------------------- guards

    def worktree_present(self, agent_id: AgentId) -> bool:
        """Is ``agents/<id>/`` there? A link or a non-directory there is refused (R-WS-7)."""
        try:
            guarded.walk(self.root, (AGENTS_DIR, agent_id)).close()
        except FileNotFoundError:
            return False
        return True

    def require_free_worktree_path(self, agent_id: AgentId) -> None:
        """Before ``git worktree add``: ``agents/`` is a real directory and ``agents/<id>``
        does not exist at all (not even as a dangling link), so git creates it (R-WS-7)."""
        name = agent_id
        with guarded.walk(self.root, (AGENTS_DIR,), create=True) as agents:
            try:
                agents.lstat(name)
            except FileNotFoundError:
                return
        raise ContainmentError(
            f"{self.agents_root / name} already exists but is not the agent's worktree; "
            "refused (R-WS-7)"
        )

    # ---------------------------------------------------------------- refs

    def branch_tip(self, agent_id: AgentId) -> str:
        """The full sha of ``agents/<id>``: what ``rev-parse --verify`` prints, read from the
        ref files when they answer plainly, else asked of git (whose error then says why)."""
        found = self.ref_files.resolve(AGENT_REF_PREFIX + agent_id)
        if found:
            return found
        return self.git.run(
            self.repo_git, ["rev-parse", "--verify", AGENT_REF_PREFIX + agent_id]
        ).stdout

    def set_mark(self, kind: str, agent_id: AgentId, sha: str) -> None:
        """R-WS-5: point ``refs/lernie/<kind>/<id>`` at ``sha``."""
        self.git.run(self.repo_git, ["update-ref", f"{MARK_REF_PREFIX}{kind}/{agent_id}", sha])

    # ---------------------------------------------------------------- agents

    def check_new_name(self, name: str) -> None:
        """A new agent's name: empty (unnamed), or one whitespace-free path component whose
        first ``-`` token is not timestamp-shaped (names never look like ids), not yet worn."""
        if not name:
            return
        if len(name) > NAME_MAX_CHARS:
            raise WorkspaceError(
                f"agent name of {len(name)} characters is too long — a name has at most "
                f"{NAME_MAX_CHARS} characters"
            )
        if (
            not is_agent_id(name)
            or name[0] in "-."
            or any(c.isspace() or not c.isprintable() for c in name)
            or not _is_utf8(name)
        ):
            raise WorkspaceError(
                f"agent name {debug_quote(name)} is not usable — a name is one path component "
                "of printable UTF-8 text with no whitespace, `/`, `\\` or NUL, not starting "
                "with `-` or `.`"
            )
        if is_timestamp_token(name.split("-", 1)[0]):
            raise WorkspaceError(
                f"agent name {debug_quote(name)} starts like an agent id (a YYYYMMDDTHHMMSSZ "
                "token); choose a name that cannot be mistaken for an id"
            )
        worn = self.agents_named(name)
        if worn:
            raise WorkspaceError(
                f"agent name {debug_quote(name)} is already worn by {', '.join(worn)} in this "
                "workspace; choose another name"
            )

    def _fresh(self, agent_id: AgentId) -> AgentId:
        if self.agent_exists(agent_id):
            raise WorkspaceError(f"minted agent id {debug_quote(agent_id)} already exists")
        return agent_id

    def mint_root(self, clock: Clock) -> AgentId:
        """R-ID-5: a fresh root id."""
        return self._fresh(mint_root_id(clock))

    def mint_child(self, parent: AgentId, clock: Clock) -> AgentId:
        """R-ID-5: a fresh child id of ``parent``."""
        return self._fresh(mint_child_id(parent, clock))

    def _write_pinned(self, worktree: Path, name: str, goal: str | Spool) -> None:
        """``goal.md`` and ``name``, written afresh: a link the branch carried under either
        name (a parent's tool can commit one) is replaced, never written through (R-WS-7)."""
        with guarded.walk_tail(worktree, 2) as tree:
            if isinstance(goal, str):
                tree.replace(GOAL_FILE, goal.encode("utf-8", "surrogateescape"))
            else:
                tree.replace(GOAL_FILE, b"")
                fd = tree.open(GOAL_FILE, os.O_WRONLY)
                try:
                    goal.copy_to(fd)
                finally:
                    os.close(fd)
            pinned_name = f"{name}\n" if name else ""
            tree.replace(NAME_FILE, pinned_name.encode("utf-8", "surrogateescape"))

    def _add_worktree(self, agent_id: AgentId, start: str) -> Path:
        """``agents/<id>``, checked out *detached* at ``start``: no ref names the agent yet,
        so nothing of it is visible to name resolution, the registry or a scan (R-WS-4)."""
        worktree = self.worktree(agent_id)
        self.require_free_worktree_path(agent_id)
        self.git.run(
            self.repo_git,
            [
                "worktree",
                "add",
                "-q",
                "--detach",
                str(self._abs / AGENTS_DIR / agent_id),
                start,
            ],
        )
        return worktree

    def _commit_pinned(self, worktree: Path, agent_id: AgentId, subject: str) -> str:
        """Commit the pinned files (``goal.md``, ``name``) as the agent's creation commit on
        the detached worktree, then point the worktree's ``HEAD`` at the agent's branch,
        which does not exist yet (an unborn branch whose index is the commit's tree).
        Returns the creation commit; :meth:`publish_agent` creates the branch at it."""
        self.git.run(worktree, ["add", "--", GOAL_FILE, NAME_FILE])
        self.git.run(worktree, ["commit", "-q", "--allow-empty", "--no-verify", "-m", subject])
        sha = self.git.run(worktree, ["rev-parse", "--verify", "HEAD"]).stdout
        self.git.run(worktree, ["symbolic-ref", "HEAD", AGENT_REF_PREFIX + agent_id])
        return sha

    def prepare_root_agent(self, agent_id: AgentId, name: str, goal: str | Spool) -> str:
        """R-WS-4: a root's worktree forked from ``config/default`` and its ``step 001:
        dispatch`` commit, not yet published: returns the commit (see :meth:`publish_agent`)."""
        worktree = self._add_worktree(agent_id, f"refs/heads/{CONFIG_BRANCH}")
        self._write_pinned(worktree, name, goal)
        return self._commit_pinned(worktree, agent_id, f"step 001: dispatch [{agent_id}]")

    def prepare_child_agent(
        self, parent: AgentId, child: AgentId, name: str, goal: str | Spool
    ) -> str:
        """R-WS-4: a child's worktree forked from the parent's tip; the creation commit drops
        the inherited ``messages/`` and replaces ``goal.md`` and ``name``, so the child
        never wears its parent's name or transcript. Not yet published: returns the commit."""
        worktree = self._add_worktree(child, AGENT_REF_PREFIX + parent)
        self.git.run(worktree, ["rm", "-r", "-q", "--ignore-unmatch", "--", "messages"])
        self._write_pinned(worktree, name, goal)
        return self._commit_pinned(worktree, child, f"dispatch: {CHILD_ROLE} [{child}]")

    def publish_agent(self, agent_id: AgentId, creation: str) -> None:
        """R-WS-4, R-PROBE-6: the agent comes into being in one ref update: its branch is
        created at its creation commit, create-only (``update-ref <ref> <sha> ""`` fails
        if the ref exists). Before this the agent does not exist; after it, it is whole."""
        self.git.run(
            self.repo_git, ["update-ref", AGENT_REF_PREFIX + agent_id, creation, ""]
        )

    def create_root_agent(self, agent_id: AgentId, name: str, goal: str | Spool) -> None:
        """R-WS-4: :meth:`prepare_root_agent`, then :meth:`publish_agent` (no deposit)."""
        self.publish_agent(agent_id, self.prepare_root_agent(agent_id, name, goal))

    def create_child_agent(
        self, parent: AgentId, child: AgentId, name: str, goal: str | Spool
    ) -> None:
        """R-WS-4: :meth:`prepare_child_agent`, then :meth:`publish_agent` (no deposit)."""
        self.publish_agent(child, self.prepare_child_agent(parent, child, name, goal))

    def remove_unborn(self, agent_id: AgentId) -> list[str]:
        """The remains of an agent whose creation never reached :meth:`publish_agent`
        (R-PROBE-6): its worktree, the worktree's admin directory, a branch lock file a
        killed ``update-ref`` left, and its inbox directory with what lies in it (its
        goal's deposit, a writer's temp file) and ``steps/<id>`` (its model record). The
        caller holds the agent's executor lock and has seen that no ref names the agent.
        Returns what was removed, relative to the workspace root. Nothing outside
        ``agents/<id>``, ``repo.git/worktrees/<id>``, the ref lock file, ``steps/<id>`` and
        ``inbox/<id>`` is touched; a link is removed, never followed.
        """
        name = agent_id
        removed: list[str] = []
        admin = self.repo_git / "worktrees" / name
        wanted = os.fspath(self._abs / AGENTS_DIR / name / ".git")
        try:
            pointed = (admin / "gitdir").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            pointed = None
        if pointed == wanted or (admin.is_dir() and pointed is None):
            _remove_tree(admin)
            removed.append(f"{REPO_DIR}/worktrees/{name}")
        for rel, path in (
            (f"{AGENTS_DIR}/{name}", self.agents_root / name),
            (f"{INBOX_DIR}/{name}", self.inbox_root / name),
            (f"{STEPS_DIR}/{name}", self.steps_root / name),  # its model record (R-STEP-9)
        ):
            if path.is_symlink() or path.exists():
                _remove_tree(path)
                removed.append(rel)
        lock = self.repo_git / f"{AGENT_REF_PREFIX}{name}.lock"
        try:
            lock.unlink()
            removed.append(f"{REPO_DIR}/{AGENT_REF_PREFIX}{name}.lock")
        except FileNotFoundError:
            pass
        return removed

    def unborn_candidates(self, registered: frozenset[str] = frozenset()) -> list[AgentId]:
        """Names under ``agents/`` and ``repo.git/worktrees/`` that no ref names may be the
        remains of a creation killed before its ref (R-PROBE-6); the caller checks each
        under its lock. Sorted; only names shaped like minted ids (R-ID-5: a first token
        ``YYYYMMDDTHHMMSSZ``), so nothing else anyone put there is ever taken for remains.

        ``registered``: the agents the caller's ref listing found, left out before any name
        is looked at one by one (each is its own worktree's name: in a thousand-agent
        workspace they are every name there)."""
        found: set[str] = set()
        for where in (self.agents_root, self.repo_git / "worktrees"):
            try:
                found.update(os.listdir(where))
            except OSError:
                continue
        found.difference_update(registered)
        return sorted(
            agent_ids_among(n for n in found if is_timestamp_token(n.split("-", 1)[0]))
        )


def _remove_tree(path: Path) -> None:
    """Remove ``path`` (a link itself, never its target) and everything below it."""
    import shutil

    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def require_workspace(path: str | Path, git: GitRunner | None = None) -> Workspace:
    """R-WS-2: a :class:`Workspace` for ``path``, or NotAWorkspace / OldLayout."""
    ws = Workspace(path, git)
    ws.check_layout()
    return ws


def create_workspace(path: str | Path, git: GitRunner | None = None) -> Workspace:
    """R-WS-1: ``lernie new``: a fresh workspace in a new or empty directory.

    On failure everything this call created is removed again.
    """
    import shutil

    from lernie_ref.substrate.config import write_default

    ws = Workspace(path, git)
    root = ws.root
    if (root / REPO_DIR).exists():
        raise WorkspaceError(f"{root} is already a workspace (repo.git exists)")
    if root.exists() or root.is_symlink():
        if not root.is_dir():
            raise WorkspaceError(f"{root} exists and is not a directory")
        if any(root.iterdir()):
            raise WorkspaceError(
                f"{root} is not empty — `lernie new` creates a workspace in a new or empty "
                "directory"
            )
        made_root = False
    else:
        made_root = True
    try:
        root.mkdir(parents=True, exist_ok=True)
        ws.git.run(root, ["init", "--bare", "-q", REPO_DIR])
        for key, value in _IDENTITY:
            ws.git.run(ws.repo_git, ["config", key, value])
        tree = ws.git.run(ws.repo_git, ["mktree"], input=b"").stdout
        commit = ws.git.run(ws.repo_git, ["commit-tree", tree, "-m", "config: default"]).stdout
        ws.git.run(ws.repo_git, ["update-ref", f"refs/heads/{CONFIG_BRANCH}", commit])
        ws.git.run(ws.repo_git, ["symbolic-ref", "HEAD", f"refs/heads/{CONFIG_BRANCH}"])
        with guarded.open_root(root) as top:
            for sub in (INBOX_DIR, STEPS_DIR, AGENTS_DIR):
                os.mkdir(sub, dir_fd=top.fd)
        write_default(root)
    except BaseException as exc:
        if made_root:
            shutil.rmtree(root, ignore_errors=True)
        elif root.is_dir():
            for child in root.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise WorkspaceError(f"create workspace {root}: {io_text(exc)}") from None
        raise
    return ws
