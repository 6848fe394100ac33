"""Git plumbing for tests: read a repository, and edit a workspace *copy*'s history.

The edits use the copy's own ``repo.git`` (a temporary index, ``commit-tree``,
``update-ref``), so no command touches the worktrees' links back to the original.
Every git here runs without the caller's ``GIT_*`` environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path


def _git(repo: Path, args: Sequence[str], stdin: bytes | None,
         env: Mapping[str, str] | None) -> bytes:
    full = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full.update(env or {})
    proc = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True,
                          env=full, check=True)
    return proc.stdout


def git(repo: Path, *args: str, stdin: bytes | None = None,
        env: Mapping[str, str] | None = None) -> str:
    """``git -C repo <args>``; its stdout, stripped (raises on failure)."""
    return _git(repo, args, stdin, env).decode().strip()


def blob(repo: Path, rev: str, path: str) -> bytes:
    """The exact bytes of ``path`` at ``rev``."""
    return _git(repo, ["cat-file", "blob", f"{rev}:{path}"], None, None)


def copy_ws(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def commit(repo: Path, branch: str, subject: str, add: Mapping[str, bytes] | None = None,
           remove: Sequence[str] = (), parent: str | None = None, tree: str | None = None) -> str:
    """A commit on ``refs/heads/<branch>`` (or on ``parent``) adding/removing paths; returns it."""
    base = parent or git(repo, "rev-parse", f"refs/heads/{branch}")
    if tree is None:
        with tempfile.TemporaryDirectory() as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            git(repo, "read-tree", base, env=env)
            for path, data in (add or {}).items():
                sha = git(repo, "hash-object", "-w", "--stdin", stdin=data)
                git(repo, "update-index", "--add", "--cacheinfo", f"100644,{sha},{path}", env=env)
            for path in remove:
                git(repo, "update-index", "--index-info", env=env,
                    stdin=f"0 {'0' * 40}\t{path}\n".encode())
            tree = git(repo, "write-tree", env=env)
    new = git(repo, "commit-tree", tree, "-p", base, "-m", subject)
    git(repo, "update-ref", f"refs/heads/{branch}", new)
    return new


def history(repo: Path, branch: str) -> list[tuple[str, str]]:
    """(commit, subject) of the branch's first-parent history, oldest first."""
    out = git(repo, "log", "--first-parent", "--reverse", "--format=%H %s", f"refs/heads/{branch}")
    return [(line[:40], line[41:]) for line in out.splitlines()]


def entries_at(repo: Path, rev: str) -> list[str]:
    return git(repo, "ls-tree", "--name-only", f"{rev}:messages").splitlines()
