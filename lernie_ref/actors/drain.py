"""Drain: move pending mail into the transcript at a step boundary (R-DRAIN-1, R-DRAIN-2,
R-DRAIN-3, R-DRAIN-4, R-DRAIN-5, R-DRAIN-6).

Only the lock holder drains (R-DRAIN-1), once per hop, before the warrant. In
order:

1. A torn-down worktree is re-created from the agent's branch when mail is
   pending; with nothing pending it is left alone (R-DRAIN-6).
2. Stray recovery: anything uncommitted under ``messages/`` (a delivery or an
   entry whose rename landed but whose commit did not) is committed first with
   ``transcript: recover delivered stray [<id>]`` (R-DRAIN-2, I-18); a lone tool
   result is committed with its call's work under its own subject (R-TOOL-8).
3. The inbox is listed **once** (R-DRAIN-3); the deposits are ordered by
   (mtime in ns, name). Each is moved by ``rename`` to ``messages/NNN-<sender>.md``
   and committed on its own (R-DRAIN-4): plain mail first, then own-child results
   in the same order (they stand in for upstream's result interpreter, D-4).
4. The drain returns the identities ``(name, mtime_ns)`` it saw and left in the
   inbox (R-DRAIN-5); deposits landing after the one read
   are unseen, and the release rule owes them a launch (R-REL-1). This drain
   delivers every deposit it lists, so nothing is left and the seen-set is
   empty: every deposit pending at release time is unseen.

Points: ``drain.listed``, ``drain.rematerialized``, ``drain.stray-committed``,
then per deposit ``drain.renamed`` and ``drain.committed``.
"""

from __future__ import annotations

import os
from pathlib import Path

from lernie_ref.core.actor import Actor, Passed
from lernie_ref.core.errors import (
    ContainmentError,
    DrainError,
    GitOpError,
    LernieError,
    io_text,
)
from lernie_ref.core.frontmatter import own_result_ref, parse_entry_name
from lernie_ref.core.ids import AgentId
from lernie_ref.core.record import record
from lernie_ref.core.vocab import MESSAGES_DIR, TOOL_ORIGIN, Point
from lernie_ref.substrate import guarded
from lernie_ref.substrate.deposit import Pending, pending
from lernie_ref.substrate.gitrun import GitRunner
from lernie_ref.substrate.lock import ExecutorLock
from lernie_ref.substrate.transcript import (
    commit,
    commit_subject,
    entry_name,
    next_seq,
)
from lernie_ref.substrate.workspace import Workspace

Seen = frozenset[tuple[str, int]]

STRAY_SUBJECT = "transcript: recover delivered stray [{agent}]"




@record(frozen=True)
class Delivery:
    delivered: int
    seen: Seen
    worktree_present: bool = True
    stray_recovered: bool = False


def _read_deposit(inbox: guarded.Dir, item: Pending) -> str:
    """R-DRAIN-7: a deposit that is not UTF-8 text aborts the drain and stays pending; it is
    read as a regular file and never through a link (R-WS-7)."""
    try:
        data = inbox.read_bytes(item.name)
    except ContainmentError as exc:
        raise DrainError(f"{exc}; it stays in the inbox until it is removed") from None
    except OSError as exc:
        raise DrainError(f"read deposit {item.path}: {io_text(exc)}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise DrainError(
            f"deposit {item.path} is not UTF-8 text; it stays in the inbox until it is removed"
        ) from None


def recover_strays(worktree: Path, agent_id: AgentId, git: GitRunner) -> bool:
    """R-DRAIN-2: commit anything uncommitted under ``messages/``; ``True`` if there was some.

    A lone tool result (``NNN-tool.json``, the newest entry: a driver died between its
    rename and its commit) is committed as its writer would have committed it: with
    ``git add -A`` under its own subject, so the call's work lands in the call's commit
    (R-TOOL-8). Anything else is committed alone under the recovery subject.
    """
    try:
        status = git.run(
            worktree, ["status", "--porcelain", "--untracked-files=all", "--", MESSAGES_DIR]
        ).stdout
    except LernieError as exc:
        raise GitOpError("drain status", exc) from None
    if not status.strip():
        return False
    seq = _lone_tool_result(worktree, status)
    if seq is not None:
        subject = commit_subject(seq, TOOL_ORIGIN, agent_id)
        commit(git, worktree, None, subject, op="drain recover")
        return True
    try:
        git.run(worktree, ["add", "--", MESSAGES_DIR])
    except LernieError as exc:
        raise GitOpError("drain recover add", exc) from None
    try:
        git.run(
            worktree,
            ["commit", "-q", "--no-verify", "-m", STRAY_SUBJECT.format(agent=agent_id)],
        )
    except LernieError as exc:
        raise GitOpError("drain recover commit", exc) from None
    return True


def _lone_tool_result(worktree: Path, status: str) -> int | None:
    """The sequence of the stray when ``status`` (porcelain, ``messages/`` only) shows one
    new file and it is a tool result that is the newest entry (R-TR-2); else ``None``."""
    lines = status.splitlines()
    if len(lines) != 1 or lines[0][:3] not in ("?? ", "A  "):
        return None
    path = lines[0][3:]
    prefix = f"{MESSAGES_DIR}/"
    if not path.startswith(prefix):
        return None
    parsed = parse_entry_name(path[len(prefix):])
    if parsed is None:
        return None
    seq, origin, delivered = parsed
    if origin != TOOL_ORIGIN or delivered or seq != next_seq(worktree) - 1:
        return None
    return seq


def rematerialize(ws: Workspace, agent_id: AgentId) -> None:
    """R-DRAIN-6: re-create ``agents/<id>/`` from the branch (pruning a stale registration)."""
    worktree = Path(os.path.abspath(ws.worktree(agent_id)))
    ws.require_free_worktree_path(agent_id)
    try:
        ws.git.run(ws.repo_git, ["worktree", "prune"])
        ws.git.run(ws.repo_git, ["worktree", "add", "-q", str(worktree), f"agents/{agent_id}"])
    except LernieError as exc:
        raise GitOpError("worktree add (rematerialize)", exc) from None


def deliver_actor(worktree: Path, agent_id: AgentId, item: Pending, git: GitRunner) -> Actor[str]:
    """R-DRAIN-4: ``rename`` one deposit to ``messages/NNN-<sender>.md``, then commit it alone.

    Points: ``Point.DRAIN_RENAMED``, ``Point.DRAIN_COMMITTED``.
    Always: ``Point.DRAIN_RENAMED``, ``Point.DRAIN_COMMITTED``.
    """
    seq = next_seq(worktree)
    name = entry_name(seq, item.sender, delivered=True)
    try:  # inbox/<id>/<name> → agents/<id>/messages/NNN-<sender>.md, no link followed (R-WS-7)
        with (
            guarded.walk_tail(item.path.parent, 2) as inbox,
            guarded.walk_tail(worktree / MESSAGES_DIR, 3, create=True) as messages,
        ):
            inbox.rename(item.name, messages, name)
    except OSError as exc:
        raise DrainError(f"deliver {item.path}: {io_text(exc)}") from None
    yield Passed(Point.DRAIN_RENAMED, agent_id, name)
    subject = commit_subject(seq, item.sender, agent_id)
    commit(git, worktree, [f"{MESSAGES_DIR}/{name}"], subject, op="transcript")
    yield Passed(Point.DRAIN_COMMITTED, agent_id, name)
    return name


def drain_actor(
    ws: Workspace,
    agent_id: AgentId,
    lock: ExecutorLock,
    git: GitRunner | None = None,
    *,
    strays_recovered: bool = False,
) -> Actor[Delivery]:
    """R-DRAIN-1 to R-DRAIN-6 under ``lock`` (held by the caller for the whole drain).

    ``strays_recovered``: the caller ran the stray recovery (R-DRAIN-2) on the present
    worktree under this same lock and has committed everything it wrote since, so the
    drain does not ask git again (unless it re-creates the worktree).

    Points: ``Point.DRAIN_LISTED``, ``Point.DRAIN_REMATERIALIZED``,
    ``Point.DRAIN_STRAY_COMMITTED``, then per deposit ``Point.DRAIN_RENAMED``,
    ``Point.DRAIN_COMMITTED``.
    Always: ``Point.DRAIN_LISTED``.
    """
    if not lock.held:
        raise DrainError(f"drain of {agent_id} without the executor lock")
    runner = git or ws.git
    worktree = ws.worktree(agent_id)
    listed = pending(ws.inbox_dir(agent_id))
    yield Passed(Point.DRAIN_LISTED, agent_id, str(len(listed)))
    if not ws.worktree_present(agent_id):
        if not listed:
            return Delivery(0, frozenset(), worktree_present=False)
        rematerialize(ws, agent_id)
        yield Passed(Point.DRAIN_REMATERIALIZED, agent_id)
        strays_recovered = False
    stray = not strays_recovered and recover_strays(worktree, agent_id, runner)
    if stray:
        yield Passed(Point.DRAIN_STRAY_COMMITTED, agent_id)
    plain: list[Pending] = []
    results: list[Pending] = []
    if listed:
        with guarded.walk_tail(ws.inbox_dir(agent_id), 2) as inbox:
            for item in listed:
                body = _read_deposit(inbox, item)
                own = own_result_ref(agent_id, item.sender, body) is not None
                (results if own else plain).append(item)
    for item in plain + results:
        yield from deliver_actor(worktree, agent_id, item, runner)
    return Delivery(len(listed), frozenset(), stray_recovered=stray)
