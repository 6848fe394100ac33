"""What a workspace holds, read the way a test wants it: transcripts, inboxes, commit
subjects, marks, pending results, lock and worktree state."""

from __future__ import annotations

from pathlib import Path

from lernie_ref.core.entry import Entry
from lernie_ref.core.frontmatter import split_frontmatter, terminal_ref_of
from lernie_ref.core.ids import require_agent_id
from lernie_ref.inbox import pending
from lernie_ref.substrate.lock import try_acquire
from lernie_ref.substrate.transcript import load
from lernie_ref.substrate.workspace import Workspace


def entries(ws: Workspace, agent: str) -> list[Entry[Path]]:
    return load(ws.worktree(require_agent_id(agent)))


def names(ws: Workspace, agent: str) -> list[str]:
    return [e.name for e in entries(ws, agent)]


def inbox_names(ws: Workspace, agent: str) -> list[str]:
    return [p.name for p in pending(ws.inbox_dir(require_agent_id(agent)))]


def subjects(ws: Workspace, agent: str) -> list[str]:
    out = ws.git.run(ws.repo_git, ["log", "--format=%s", f"agents/{agent}"]).stdout
    return out.splitlines()


def lock_is_free(ws: Workspace, agent: str) -> bool:
    lock = try_acquire(ws.inbox_dir(require_agent_id(agent)))
    if lock is None:
        return False
    lock.release()
    return True


def worktree_clean(ws: Workspace, agent: str) -> bool:
    status = ws.git.run(ws.worktree(require_agent_id(agent)), ["status", "--porcelain"]).stdout
    return status.strip() == ""


def results_from(ws: Workspace, recipient: str, sender: str) -> list[tuple[str, str]]:
    """``(epitaph, terminal_ref)`` of each result from ``sender`` pending for ``recipient``."""
    out = []
    for deposit in pending(ws.inbox_dir(require_agent_id(recipient))):
        if deposit.sender != sender:
            continue
        body = deposit.path.read_text()
        ref = terminal_ref_of(body)
        if ref is not None:
            out.append((split_frontmatter(body)[0], ref))
    return out


def mark(ws: Workspace, kind: str, agent: str) -> str | None:
    """The commit git reads for ``refs/lernie/<kind>/<agent>``, or None."""
    ref = f"refs/lernie/{kind}/{agent}"
    result = ws.git.run(ws.repo_git, ["rev-parse", "--verify", "--quiet", ref], check=False)
    return result.stdout if result.returncode == 0 else None


def changed_in(ws: Workspace, agent: str, subject: str) -> list[str]:
    """The paths changed by the one commit of ``agent``'s branch whose subject is ``subject``."""
    log = ws.git.run(ws.repo_git, ["log", "--format=%H %s", f"agents/{agent}"]).stdout
    (sha,) = [line.split(" ", 1)[0] for line in log.splitlines()
              if line.split(" ", 1)[1] == subject]
    out = ws.git.run(ws.repo_git, ["show", "--name-only", "--format=", sha]).stdout
    return sorted(out.split())
