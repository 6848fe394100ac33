"""Git lock files that only the holder of an agent's executor lock can create (R-WS-8).

git guards each file it rewrites with a ``<file>.lock`` created ``O_CREAT|O_EXCL``
and renamed over the file when done. A git process killed in between (a driver's
process group killed, a power loss) leaves the ``.lock`` behind, and every later
git call that needs it fails with ``Unable to create '….lock': File exists`` —
for good, since no process will ever remove it.

The executor lock settles whose such a file can be. After an agent's creation
commit, every git call that writes the agent's worktree index, its worktree
``HEAD``, its branch ``refs/heads/agents/<id>`` or its marks
``refs/lernie/<kind>/<id>`` is made by the process holding the agent's executor
lock (its driver, or the sweep holding it, R-SCAN-6). So once a process holds
that lock, a lock file among these was left by a predecessor holder, which is
dead (the kernel released its flock) — unless one of its git children outlived
it and is still running (only the driver's pid was killed). The holder therefore
looks for a live ``git`` working in the agent's worktree, or naming the agent on
its command line, waits for it (bounded), and then removes what is left, with one
notice line, before its own first git call.

Shared lock files of ``repo.git`` (``packed-refs.lock``, ``config.lock``,
another agent's refs) are never touched here: another agent's holder may own
them. The git runner retries a call that meets one (R-WS-9).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from lernie_ref.core.errors import StaleLockError, io_text
from lernie_ref.core.ids import AgentId
from lernie_ref.core.vocab import AGENT_REF_PREFIX, MARK_REF_PREFIX, REPO_DIR, MarkKind
from lernie_ref.substrate import guarded

WORKTREE_LOCKS = ("index.lock", "HEAD.lock")
"""Lock files in the agent's worktree admin directory ``repo.git/worktrees/<name>/``."""

OWNER_WAIT_PAUSES = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
"""How long (seconds, in turn) a holder waits for a live git that may own a lock file."""


def worktree_admin_dir(repo_git: Path, worktree: Path, agent_id: AgentId) -> Path:
    """``repo.git/worktrees/<name>`` of the agent's worktree.

    The name is read from the worktree's ``.git`` file (git adds a number when the
    plain name was taken); a pointer that leads anywhere but one directory directly
    under ``repo.git/worktrees/`` is not followed, and ``<id>`` is assumed.
    """
    fallback = repo_git / "worktrees" / agent_id
    try:
        text = (worktree / ".git").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return fallback
    if not text.startswith("gitdir: "):
        return fallback
    pointed = Path(text[len("gitdir: ") :].strip())
    name = pointed.name
    if pointed.parent.name != "worktrees" or name in ("", ".", "..") or "/" in name:
        return fallback
    return repo_git / "worktrees" / name


def owned_lock_files(repo_git: Path, worktree: Path, agent_id: AgentId) -> list[Path]:
    """R-WS-8: every git lock file only the holder of ``agent_id``'s executor lock creates."""
    admin = worktree_admin_dir(repo_git, worktree, agent_id)
    paths = [admin / name for name in WORKTREE_LOCKS]
    paths.append(repo_git / f"{AGENT_REF_PREFIX}{agent_id}.lock")
    paths.extend(repo_git / f"{MARK_REF_PREFIX}{kind.value}/{agent_id}.lock" for kind in MarkKind)
    return paths


def _owned_lock_texts(repo_git: Path, worktree: Path, agent_id: AgentId) -> list[str]:
    """The paths of :func:`owned_lock_files` as text; ``pathlib`` only for a ``.git`` pointer
    that is not in its plain form (where its normalisation could matter)."""
    return [*_worktree_lock_texts(repo_git, worktree, agent_id),
            *_ref_lock_texts(repo_git, agent_id)]


def _worktree_lock_texts(repo_git: Path, worktree: str | Path, agent_id: AgentId) -> list[str]:
    """The worktree's lock files of :func:`owned_lock_files`, as text."""
    repo = os.fspath(repo_git)
    try:
        text = _read_text(os.fspath(worktree) + "/.git")
    except (OSError, UnicodeDecodeError):
        text = ""
    admin = f"{repo}/worktrees/{_admin_name(text, repo_git, worktree, agent_id)}/"
    return [admin + lock for lock in WORKTREE_LOCKS]


def _admin_name(text: str, repo_git: Path, worktree: str | Path, agent_id: AgentId) -> str:
    """The name of the worktree's admin directory under ``repo.git/worktrees/``, from the
    text of its ``.git`` file (as :func:`worktree_admin_dir` reads it)."""
    name: str = agent_id
    if text.endswith(f"/worktrees/{agent_id}\n") and not agent_id[-1].isspace():
        # The pointer as git writes it (``gitdir: <repo>/worktrees/<id>``, one line). Every
        # reading below names the id for such a text (a text with no ``gitdir: `` falls
        # back to it): one comparison instead of the parse, for every agent of a pass.
        return name
    if text.startswith("gitdir: "):
        pointed = text[len("gitdir: ") :].strip()
        if "//" in pointed or "/./" in pointed or pointed.endswith(("/", "/.")):
            name = worktree_admin_dir(repo_git, Path(worktree), agent_id).name
        else:
            parent, _, last = pointed.rpartition("/")
            # the parent's last component (``os.path.basename``) names ``worktrees``
            if parent.rpartition("/")[2] == "worktrees" and last not in ("", ".", ".."):
                name = last
    return name


class LockLook:
    """:func:`worktree_lock_exists` for every agent of a pass (the sweep's), from
    descriptors of ``agents/`` and ``repo.git/worktrees/`` opened once: each ``.git``
    pointer and lock file is reached by one path component from them rather than by
    its whole path. Where a descriptor could not be opened the look takes the path.
    The pass's directories are the workspace's own for the whole pass (R-WS-7)."""

    def __init__(self, repo_git: Path, agents_root: str | Path) -> None:
        self._repo_git = repo_git
        self._agents_text = os.fspath(agents_root)
        self._agents = _open_dir(self._agents_text)
        self._admins = _open_dir(f"{os.fspath(repo_git)}/worktrees")

    def exists(self, agent_id: AgentId) -> bool:
        """Is one of the worktree's lock files there (``index.lock``, ``HEAD.lock``)?"""
        worktree = f"{self._agents_text}/{agent_id}"
        if self._agents < 0 or self._admins < 0:
            return worktree_lock_exists(self._repo_git, worktree, agent_id)
        try:
            text = _read_text(f"{agent_id}/.git", self._agents)
        except (OSError, UnicodeDecodeError):
            text = ""
        name = _admin_name(text, self._repo_git, worktree, agent_id)
        # ``faccessat(F_OK)`` with the effective ids: true exactly when ``stat`` succeeds
        # (what ``os.path.exists`` answers), with no exception raised for a missing file
        for lock in WORKTREE_LOCKS:
            if os.access(f"{name}/{lock}", os.F_OK, dir_fd=self._admins, effective_ids=True):
                return True
        return False

    def close(self) -> None:
        for fd in (self._agents, self._admins):
            if fd >= 0:
                os.close(fd)
        self._agents = self._admins = -1


def _open_dir(path: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return -1


_MARK_KINDS = tuple(kind.value for kind in MarkKind)


def _ref_lock_texts(repo_git: Path, agent_id: AgentId) -> list[str]:
    """The branch's and the marks' lock files of :func:`owned_lock_files`, as text."""
    repo = os.fspath(repo_git)
    return [
        f"{repo}/{AGENT_REF_PREFIX}{agent_id}.lock",
        *(f"{repo}/{MARK_REF_PREFIX}{kind}/{agent_id}.lock" for kind in _MARK_KINDS),
    ]


def worktree_lock_exists(repo_git: Path, worktree: str | Path, agent_id: AgentId) -> bool:
    """R-WS-8's look at the worktree's two lock files alone (``index.lock``, ``HEAD.lock``):
    a git writing the worktree (a commit, a re-created worktree) holds one."""
    return any(map(os.path.exists, _worktree_lock_texts(repo_git, worktree, agent_id)))


def ref_lock_exists(repo_git: Path, agent_id: AgentId) -> bool:
    """R-WS-8's look at the branch's and the marks' lock files alone: a git moving one
    of the agent's refs holds one."""
    return any(map(os.path.exists, _ref_lock_texts(repo_git, agent_id)))


def _read_text(path: str, dir_fd: int | None = None) -> str:
    """The file's text as ``open(path, encoding="utf-8").read()`` gives it (universal
    newlines), read with three system calls instead of a buffered file object's nine
    (``path`` relative to ``dir_fd`` when given)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        data = os.read(fd, 1 << 16)
        # a regular file's read comes back short only at its end (a `.git` pointer is a
        # line): no second read to see the end, unless the first one filled the buffer
        if len(data) == 1 << 16:
            chunks = [data]
            while len(chunks[-1]) == 1 << 16:
                chunks.append(os.read(fd, 1 << 16))
            data = b"".join(chunks)
    finally:
        os.close(fd)
    text = data.decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def live_git_users(worktree: Path, agent_id: AgentId) -> list[int]:
    """Pids of live ``git`` processes that may own one of the agent's lock files: one whose
    working directory is the agent's worktree (or below it), or whose command line names
    the agent (a mark update runs in ``repo.git``). Zombies are not alive."""
    root = os.path.realpath(worktree)
    # The id as a whole path component (``…/returned/<id>``, ``…/agents/<id>^{commit}``),
    # so a child's id, which extends its parent's, does not count for the parent.
    needle = re.compile(
        rb"(?:^|/)" + re.escape(agent_id.encode("utf-8", "surrogateescape")) + rb"(?:$|[/:^@~])"
    )
    return _live_gits(root, lambda arg: needle.search(arg) is not None)


def clear_stale_locks(
    ws_root: Path,
    worktree: Path,
    agent_id: AgentId,
    *,
    sleep: Callable[[float], None] = time.sleep,
    live_users: Callable[[Path, AgentId], list[int]] = live_git_users,
) -> list[Path]:
    """R-WS-8: remove the agent's lock files a dead process left; the caller holds the
    agent's executor lock and has made no git call yet. Returns the files removed.

    With no such file this is a few ``stat`` calls. With one, a live git that may own
    it is waited for (:data:`OWNER_WAIT_PAUSES`); one still running after the wait
    raises :class:`StaleLockError` and nothing is removed.
    """
    repo_git = ws_root / REPO_DIR
    # the common case (no lock file) costs one stat each, with no Path made (scan runs this
    # for every agent)
    if not any(map(os.path.exists, _owned_lock_texts(repo_git, worktree, agent_id))):
        return []
    present = [p for p in owned_lock_files(repo_git, worktree, agent_id) if p.exists()]
    if not present:
        return []
    for pause in (*OWNER_WAIT_PAUSES, None):
        users = live_users(worktree, agent_id)
        if not users:
            break
        if pause is None:
            names = ", ".join(p.name for p in present)
            pids = ", ".join(str(u) for u in users)
            raise StaleLockError(
                f"git lock file(s) {names} of {agent_id} are in use by live git process(es) "
                f"{pids} that outlived their driver; try again when they have finished"
            )
        sleep(pause)
    removed: list[Path] = []
    for path in present:
        try:  # unlinkat in the directory reached by the guarded walk (R-WS-7)
            parts = path.relative_to(ws_root).parts
            with guarded.walk(ws_root, parts[:-1]) as where:
                where.unlink(parts[-1])
        except FileNotFoundError:
            continue  # its owner finished while we waited
        except OSError as exc:
            raise StaleLockError(f"remove stale git lock {path}: {io_text(exc)}") from None
        removed.append(path)
    return removed


SHARED_LOCKS: tuple[tuple[str, ...], ...] = (
    ("objects", "maintenance.lock"),
    ("packed-refs.lock",),
    ("config.lock",),
    ("shallow.lock",),
    ("gc.log.lock",),
    ("objects", "info", "commit-graph.lock"),
    ("objects", "info", "commit-graphs", "commit-graph-chain.lock"),
    ("objects", "pack", "multi-pack-index.lock"),
)
"""R-WS-9: lock files of ``repo.git`` that any git working in the workspace may create
(automatic maintenance, a ref packed, the configuration, the commit graph), relative to
``repo.git``. A killed git leaves them; maintenance then silently does nothing and a
ref update or config write fails on them for good."""


def live_git_in(ws_root: Path) -> list[int]:
    """Pids of live ``git`` processes that may be working in the workspace: one whose
    working directory is the workspace root or below it (every git call of the protocol
    runs as ``git -C <dir in the workspace>``, and git's own children inherit that
    directory), or whose command line names the workspace's ``repo.git``. Zombies are
    not alive."""
    root = os.path.realpath(ws_root)
    repo = os.path.join(root, REPO_DIR).encode("utf-8", "surrogateescape")
    return _live_gits(root, lambda arg: repo in arg)


def _live_gits(root: str, names: Callable[[bytes], bool]) -> list[int]:
    """Pids of live ``git`` processes (zombies excluded, this process never) whose working
    directory is ``root`` or below it, or one of whose arguments ``names`` accepts."""
    from lernie_ref.substrate import procfs  # only when a lock file is there: a scan seldom

    found: list[int] = []
    try:
        pids = procfs.pids()
    except OSError:
        return found
    me = os.getpid()
    for pid in pids:
        if pid == me:
            continue
        stat = procfs.stat(pid)
        if stat is None or not stat.comm.startswith(b"git") or not stat.alive:
            continue
        cwd = procfs.cwd(pid)
        if cwd is not None and (cwd == root or cwd.startswith(root + os.sep)):
            found.append(pid)
            continue
        argv = procfs.cmdline(pid)
        if argv is not None and any(names(arg) for arg in argv):
            found.append(pid)
    return found


def clear_shared_locks(
    ws_root: Path,
    *,
    sleep: Callable[[float], None] = time.sleep,
    live_users: Callable[[Path], list[int]] = live_git_in,
) -> list[Path]:
    """R-WS-9: remove the shared lock files (:data:`SHARED_LOCKS`) a killed git left, when
    no git works in the workspace. Run by the scan at the start of its pass. With none
    of the files this is a few ``stat`` calls. With one, a live git in the workspace is
    waited for (:data:`OWNER_WAIT_PAUSES`; a file its owner removes meanwhile is simply
    gone); while one still runs after the wait, nothing is removed and no error is
    raised (the file may be that git's, and a later scan looks again). Returns the files
    removed."""
    repo_git = ws_root / REPO_DIR
    present = [repo_git.joinpath(*parts) for parts in SHARED_LOCKS]
    present = [p for p in present if os.path.lexists(p)]
    for pause in (*OWNER_WAIT_PAUSES, None):
        if not present:
            return []
        if not live_users(ws_root):
            break
        if pause is None:
            return []
        sleep(pause)
        present = [p for p in present if os.path.lexists(p)]
    removed: list[Path] = []
    for path in present:
        try:  # unlinkat in the directory reached by the guarded walk (R-WS-7)
            parts = path.relative_to(ws_root).parts
            with guarded.walk(ws_root, parts[:-1]) as where:
                where.unlink(parts[-1])
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StaleLockError(f"remove stale git lock {path}: {io_text(exc)}") from None
        removed.append(path)
    return removed


def describe_shared(ws_root: Path, removed: list[Path]) -> str:
    """The one notice line of a scan that removed shared lock files (R-WS-9)."""
    shown = ", ".join(os.path.relpath(p, ws_root) for p in removed)
    return (
        f"removed stale git lock file(s) {shown} left by a killed git; no git was working "
        "in the workspace (R-WS-9)"
    )


def describe(ws_root: Path, removed: list[Path], agent_id: AgentId) -> str:
    """The one notice line for ``driver.log`` (R-WS-8)."""
    shown = ", ".join(os.path.relpath(p, ws_root) for p in removed)
    return (
        f"removed stale git lock file(s) {shown} of [{agent_id}] left by a dead process "
        "(R-WS-8)"
    )
