"""The agent registry a writer verb guards against (R-WS-2, R-ID-4, R-ID-6), cheap to load.

:class:`Registry` is the read side of a workspace: its layout guard, whether an agent
exists, the agents' names. :class:`~lernie_ref.substrate.workspace.Workspace` extends it
with everything that creates; ``lernie message`` uses the registry alone, so the message
path loads neither ``pathlib`` nor ``subprocess`` (R-CLI-5).

Existence is read from git's own files first (the one ref-file reader,
:class:`~lernie_ref.substrate.reffiles.RefFiles`): the loose ref file, then ``packed-refs``.
Only a positive, well-formed answer is trusted (a full object id for an id made of
plain characters); anything else — a missing file, a symbolic or malformed ref, another
ref storage, an unusual id — asks git (``rev-parse --verify --quiet``), as before.
"""

from __future__ import annotations

import os

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.errors import (
    AmbiguousName,
    ContainmentError,
    GitError,
    LernieError,
    NotAWorkspace,
    OldLayout,
    UnknownAgent,
    io_text,
)
from lernie_ref.core.ids import AgentId, agent_ids_among, is_agent_id, require_agent_id
from lernie_ref.core.names import AGENT_REF_PREFIX, NAME_FILE, REPO_DIR
from lernie_ref.substrate import guarded
from lernie_ref.substrate.reffiles import RefFiles

if TYPE_CHECKING:
    from pathlib import Path

    from lernie_ref.substrate.gitrun import GitRunner

_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def path_text(raw: str) -> str:
    """The text ``str(pathlib.PurePosixPath(raw))`` gives, without loading ``pathlib``.

    Repeated slashes and ``.`` components go, a trailing slash goes, exactly two leading
    slashes stay; ``..`` is kept. The CLI edge uses it so messages and launches carry
    the root exactly as the ``Path``-based verbs print it.
    """
    if raw.startswith("//") and not raw.startswith("///"):
        root = "//"
    elif raw.startswith("/"):
        root = "/"
    else:
        root = ""
    parts = [p for p in raw.split("/") if p and p != "."]
    return root + "/".join(parts) if (root or parts) else "."


class Registry:
    """A workspace root and its agents, read-only; ``root`` is kept as given."""

    def __init__(self, root: str | Path, git: GitRunner | None = None) -> None:
        self.root: str | Path = root
        self._git = git
        self._known: set[str] = set()  # ids seen to exist (agents are never removed)
        self._ref_files: RefFiles | None = None

    @property
    def git(self) -> GitRunner:
        """The injected git runner; a :class:`SubprocessGit` made on first use if none was."""
        if self._git is None:
            from lernie_ref.substrate.gitrun import SubprocessGit

            self._git = SubprocessGit()
        return self._git

    @property
    def repo_git(self) -> Path:
        from pathlib import Path

        return Path(self.root) / REPO_DIR

    @property
    def ref_files(self) -> RefFiles:
        """The repository's ref files, read without git where they answer plainly (one
        reader per workspace: it keeps ``packed-refs`` while that file is unchanged)."""
        files = self._ref_files
        if files is None:
            files = self._ref_files = RefFiles(os.path.join(self.root, REPO_DIR))
        return files

    def _root_text(self) -> str:
        return str(self.root) if not isinstance(self.root, str) else path_text(self.root)

    # ---------------------------------------------------------------- guards

    def check_layout(self) -> None:
        """R-WS-2: ``repo.git`` must be a directory; a ``root/.git`` is the retired layout.

        A ``repo.git`` that is a symlink is refused (R-WS-7).
        """
        try:
            guarded.walk(self.root, (REPO_DIR,)).close()
            return
        except ContainmentError:
            if os.path.islink(os.path.join(self.root, REPO_DIR)):
                raise
        except OSError:
            pass
        if os.path.exists(os.path.join(self.root, "root", ".git")):
            raise OldLayout(self._root_text())
        raise NotAWorkspace(self._root_text())

    def agent_exists(self, agent_id: str) -> bool:
        """R-ID-4: does ``refs/heads/agents/<id>`` exist?

        Read from the ref files when they answer yes (see the module docstring), else
        ``rev-parse --verify --quiet refs/heads/agents/<id>``: exit 0 → the agent exists;
        exit 1 → it does not. Any other outcome (git killed by a signal, a broken
        repository, git missing) is not an answer about the agent and raises
        :class:`GitError` naming the command, never "no such agent".
        """
        if not is_agent_id(agent_id):
            return False
        if agent_id in self._known:
            return True
        refname = AGENT_REF_PREFIX + agent_id
        found: bool | None = None
        if all(c in _PLAIN for c in agent_id) and self.ref_files.value(refname):
            found = True  # only a positive answer is trusted
        if found is None:
            args = ["rev-parse", "--verify", "--quiet", refname]
            try:
                result = self.git.run(self.repo_git, args, check=False)
            except OSError as exc:
                raise GitError(args, 127, io_text(exc)) from None
            if result.returncode not in (0, 1):
                raise GitError(args, result.returncode, result.stderr)
            found = result.returncode == 0
        if found:
            self._known.add(agent_id)
        return found

    def require_agent(self, agent_id: str, reason: str) -> None:
        """R-ID-4: raise :class:`UnknownAgent` (with ``reason``) unless the agent exists."""
        if not self.agent_exists(agent_id):
            raise UnknownAgent(agent_id, reason)

    # ---------------------------------------------------------------- registry

    def agent_ids(self) -> list[AgentId]:
        """R-WS-3: every agent id, sorted (the ``refs/heads/agents/*`` refs); a listing is
        an edge (R-ID-9): a ref below ``agents/`` whose rest is no id (``agents/a/b``) is
        no agent."""
        out = self.git.run(
            self.repo_git, ["for-each-ref", "--format=%(refname)", AGENT_REF_PREFIX]
        ).stdout
        ids = [line[len(AGENT_REF_PREFIX) :] for line in out.splitlines()]
        return sorted(agent_ids_among(ids))

    def agent_name(self, agent_id: str) -> str:
        """The trimmed ``name`` blob on the agent's branch; ``''`` when unnamed or unreadable."""
        result = self.git.run(
            self.repo_git, ["show", f"{AGENT_REF_PREFIX}{agent_id}:{NAME_FILE}"], check=False
        )
        return result.stdout.strip() if result.returncode == 0 else ""

    def agents_named(self, name: str) -> list[AgentId]:
        """The ids of the agents whose trimmed name is ``name`` (never matches ``''``)."""
        if not name:
            return []
        return [i for i in self.agent_ids() if self.agent_name(i) == name]

    def resolve_agent(self, needle: str, reason: str) -> AgentId:
        """The one resolver of every verb that takes an agent (R-ID-6): the id guard
        (R-ID-3), an existing id or the one agent wearing the name, the workspace guard
        (R-WS-2), the existence guard (R-ID-4, declining with ``reason``). Returns the id,
        guarded where it enters (R-ID-9)."""
        target = self.resolve_name(require_agent_id(needle))
        self.check_layout()
        self.require_agent(target, reason)
        return target

    def resolve_name(self, needle: AgentId) -> AgentId:
        """R-ID-6: an existing id wins; else the one agent wearing the name; several → refuse.

        With no match (or a registry that cannot be read) the needle comes back unchanged
        and the existence guard declines it later.
        """
        try:
            if self.agent_exists(needle):
                return needle
            hits = self.agents_named(needle)
        except (LernieError, OSError):
            return needle
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise AmbiguousName(needle, hits)
        return needle
