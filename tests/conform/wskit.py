"""Helpers for the conformance-kit tests: a real multi-agent workspace, and history surgery.

The workspace is made by the real ``lernie`` CLI with its detached drivers (no
in-process shortcut): the audit must pass what the reference really leaves on
disk. The corruptions edit a *copy* with git plumbing on the copy's own
``repo.git`` (a temporary index, ``commit-tree``, ``update-ref``) so no command
ever touches the worktrees' links back to the original.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from conftest import run_cli, wait_quiescent


def git(repo: Path, *args: str, stdin: bytes | None = None,
        env: Mapping[str, str] | None = None) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full.update(env or {})
    proc = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True,
                          env=full, check=True)
    return proc.stdout.decode().strip()


def cli(*args: str) -> str:
    proc = run_cli(list(args))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def build_team(ws: Path) -> dict[str, str]:
    """A root ``lead`` with children ``a`` (a tool step, then an exchange with ``b``) and
    ``b`` (stopped mid-call, its obituary parked in lead's inbox). Returns name -> id."""
    cli("new", str(ws))
    cli("prompt", str(ws), "--name", "lead",
        "@dispatch name=a @tools 1\n@dispatch name=b hi b\nplan", "--wait")
    wait_quiescent(ws)
    cli("message", str(ws), "a", "@message b @message a pong\nping")
    wait_quiescent(ws)
    ids = {row["name"]: row["id"] for row in json.loads(cli("status", str(ws), "--json"))["agents"]}
    cli("message", str(ws), "b", "@sleep 60")
    deadline = time.monotonic() + 60
    while run_cli(["stop", str(ws), ids["b"]]).stderr:  # "nothing to stop" until b's driver runs
        assert time.monotonic() < deadline, "b's driver never took its lock"
        time.sleep(0.05)
    wait_quiescent(ws)
    return ids


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
                blob = git(repo, "hash-object", "-w", "--stdin", stdin=data)
                git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
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


def blob(repo: Path, rev: str, path: str) -> bytes:
    full = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", "-C", str(repo), "cat-file", "blob", f"{rev}:{path}"],
                          capture_output=True, env=full, check=True).stdout
