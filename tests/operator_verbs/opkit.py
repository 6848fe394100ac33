"""Helpers for the operator-verb tests: results and marks on disk, lock-holding processes.

In-process hops, crashes at chosen points and polling come from the public test kit
(:mod:`lernie_ref.testing`: ``Inline``, ``drive``, ``poll``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lernie_ref.core.frontmatter import split_frontmatter, terminal_ref_of
from lernie_ref.inbox import pending
from lernie_ref.substrate.workspace import Workspace


def results_from(ws: Workspace, recipient: str, sender: str) -> list[tuple[str, str]]:
    """``(epitaph, terminal_ref)`` of each result from ``sender`` pending for ``recipient``."""
    out = []
    for deposit in pending(ws.inbox_dir(recipient)):
        if deposit.sender != sender:
            continue
        body = deposit.path.read_text()
        ref = terminal_ref_of(body)
        if ref is not None:
            out.append((split_frontmatter(body)[0], ref))
    return out


def mark(ws: Workspace, kind: str, agent: str) -> str | None:
    ref = f"refs/lernie/{kind}/{agent}"
    result = ws.git.run(ws.repo_git, ["rev-parse", "--verify", "--quiet", ref], check=False)
    return result.stdout if result.returncode == 0 else None


def tree_listing(root: Path) -> list[str]:
    """Every path under ``root`` except git internals (to prove nothing was written)."""
    out = []
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "repo.git"]
        for name in dirs + files:
            out.append(os.path.relpath(os.path.join(base, name), root))
    return sorted(out)


HOLDER_CODE = (
    "import fcntl, os, signal, sys, time\n"
    "if sys.argv[2] == 'ignore': signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
    "if sys.argv[3] == 'lock': fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
    "signal.signal(signal.SIGUSR1, lambda *_: fcntl.flock(fd, fcntl.LOCK_UN))\n"
    "print('ready', flush=True)\n"
    "while True: time.sleep(600)\n"
)


def spawn_holder(
    inbox: Path,
    *,
    lock: bool = True,
    ignore_term: bool = False,
    own_session: bool = True,
    extra_argv: tuple[str, ...] = (),
) -> subprocess.Popen[str]:
    """A real process that opens ``inbox`` (and, with ``lock``, holds its flock) until killed.

    SIGUSR1 makes it release the lock (and live on); ``extra_argv`` lands on its
    command line (``("advance", ws, agent)`` makes it look like a driver).
    """
    inbox.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            HOLDER_CODE,
            str(inbox),
            "ignore" if ignore_term else "term",
            "lock" if lock else "open",
            *extra_argv,
        ],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=own_session,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc
