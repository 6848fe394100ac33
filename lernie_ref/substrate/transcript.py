"""The transcript: ``messages/NNN-<origin>.md|.json``, one commit per entry (R-TR-1..5).

An agent's transcript is the set of entry files under ``messages/`` in its
worktree. Order lives in the name only: ``NNN`` is derived, never stored, as the
largest sequence present plus one (R-TR-2), and only the lock holder writes, so
two entries can never take one number (I-4). Every entry is published by a
``rename`` into ``messages/`` and then committed on its own with the subject
``transcript NNN: <origin> [<id>]`` (R-TR-3). A crash between the rename and the
commit leaves an uncommitted file under ``messages/`` that the next drain's
stray recovery commits first (R-DRAIN-2, I-18): a file that left the inbox
always lands.

The writers here are actors (DESIGN, "actors with explicit atomic points"): they
yield ``transcript.renamed`` after the rename and ``transcript.committed`` after
the commit, so a test can stop the world between the two.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lernie_ref.core.actor import Actor, Passed
from lernie_ref.core.entry import Block, entry_blocks, render_model_entry, render_tool_entry
from lernie_ref.core.errors import (
    GitOpError,
    LernieError,
    ReservedModelId,
    TranscriptError,
    io_text,
)
from lernie_ref.core.frontmatter import parse_entry_name, parse_u32, seq_text
from lernie_ref.core.vocab import MESSAGES_DIR, TOOL_ORIGIN, Point, Role
from lernie_ref.substrate import guarded
from lernie_ref.substrate.gitrun import GitRunner


@dataclass(frozen=True)
class Entry:
    """One transcript entry (R-TR-1): ``delivered`` for ``.md``, else the agent's own ``.json``."""

    seq: int
    origin: str
    delivered: bool
    path: Path


def read_entries(worktree: Path) -> list[Entry]:
    """R-DEBT-1: every legible entry of ``<worktree>/messages/``, newest first.

    A missing directory is an empty transcript; a ``messages`` that is not a
    directory, or cannot be listed, raises :class:`TranscriptError`.
    """
    directory = Path(worktree) / MESSAGES_DIR
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise TranscriptError(f"read transcript {directory}: {io_text(exc)}") from None
    out: list[Entry] = []
    for name in names:
        parsed = parse_entry_name(name)
        if parsed is not None:
            seq, origin, delivered = parsed
            out.append(Entry(seq, origin, delivered, directory / name))
    out.sort(key=lambda e: (e.seq, e.origin, e.delivered), reverse=True)
    return out


def read_bytes(entry: Entry) -> bytes:
    try:
        return entry.path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"read transcript entry {entry.path}: {io_text(exc)}") from None


def read_text(entry: Entry) -> str:
    """The entry's text; unreadable or non-UTF-8 → :class:`TranscriptError`."""
    data = read_bytes(entry)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TranscriptError(f"transcript entry {entry.path} is not UTF-8 text") from None



@dataclass(frozen=True)
class TranscriptEntry:
    """One entry as read from ``messages/`` (R-TR-1): its name, parsed parts and bytes."""

    seq: int
    origin: str
    delivered: bool
    name: str
    data: bytes

    @property
    def role(self) -> Role:
        """R-TR-5: ``.md`` → user, ``NNN-tool.json`` → tool, any other ``.json`` → assistant."""
        if self.delivered:
            return "user"
        return "tool" if self.origin == TOOL_ORIGIN else "assistant"

    @property
    def text(self) -> str:
        """A delivered entry's whole text, frontmatter included (lossy for non-UTF-8 bytes)."""
        return self.data.decode("utf-8", "replace")

    def blocks(self) -> list[Block]:
        """The content blocks: one text block for a delivered entry, the JSON's blocks otherwise."""
        if self.delivered:
            return [{"type": "text", "text": self.text}]
        try:
            return entry_blocks(self.data)
        except LernieError as exc:
            raise TranscriptError(f"transcript entry {MESSAGES_DIR}/{self.name}: {exc}") from None


@dataclass(frozen=True)
class WireMessage:
    """R-TR-5: one message of the model's history: a role and its blocks."""

    role: Role
    content: list[Block]

    def to_json(self) -> dict[str, object]:
        return {"role": self.role, "content": list(self.content)}


def messages_dir(worktree: Path) -> Path:
    return worktree / MESSAGES_DIR


def next_seq(worktree: Path) -> int:
    """R-TR-2: 1 + the largest ``NNN`` (text before the first ``-``) in ``messages/``; else 1."""
    try:
        names = os.listdir(messages_dir(worktree))
    except FileNotFoundError:
        return 1
    except OSError as exc:
        raise TranscriptError(f"read {messages_dir(worktree)}: {io_text(exc)}") from None
    best = 0
    for name in names:
        seq = parse_u32(name.split("-", 1)[0])
        if seq is not None and seq > best:
            best = seq
    return best + 1


def entry_name(seq: int, origin: str, delivered: bool) -> str:
    """R-TR-1: ``NNN-<origin>.md`` for a delivery, ``NNN-<origin>.json`` otherwise."""
    return f"{seq_text(seq)}-{origin}{'.md' if delivered else '.json'}"


def commit_subject(seq: int, origin: str, agent_id: str) -> str:
    """R-TR-3: ``transcript NNN: <origin> [<id>]``."""
    return f"transcript {seq_text(seq)}: {origin} [{agent_id}]"


def load(worktree: Path) -> list[TranscriptEntry]:
    """Every entry in ``messages/``, oldest first (by sequence, then name). Missing → ``[]``.

    The listing is the one reading of ``messages/`` the reply rules use (R-DEBT-1).
    """
    entries: list[TranscriptEntry] = []
    for item in read_entries(worktree):
        try:
            data = item.path.read_bytes()
        except OSError as exc:
            raise TranscriptError(f"read {item.path}: {io_text(exc)}") from None
        entries.append(TranscriptEntry(item.seq, item.origin, item.delivered, item.path.name, data))
    entries.sort(key=lambda e: (e.seq, e.name))
    return entries


def wire_messages(entries: Sequence[TranscriptEntry]) -> list[WireMessage]:
    """R-TR-5: compose entries into a history; consecutive entries of one role merge."""
    out: list[WireMessage] = []
    for entry in entries:
        blocks = entry.blocks()
        if out and out[-1].role == entry.role:
            out[-1].content.extend(blocks)
        else:
            out.append(WireMessage(entry.role, list(blocks)))
    return out


def history_of(entries: Sequence[TranscriptEntry]) -> list[tuple[Role, Sequence[Block]]]:
    """R-TR-5: the history the warrant (R-STEP-3) is decided over, as plain values."""
    return [(m.role, m.content) for m in wire_messages(entries)]


def _git(git: GitRunner, worktree: Path, op: str, args: Sequence[str]) -> None:
    try:
        git.run(worktree, args)
    except LernieError as exc:
        raise GitOpError(op, exc) from None


def commit(
    git: GitRunner, worktree: Path, paths: Sequence[str] | None, subject: str, *, op: str
) -> None:
    """Stage ``paths`` (``None``: the whole worktree, ``add -A``) and commit with ``subject``."""
    _git(git, worktree, f"{op} add", ["add", "-A"] if paths is None else ["add", "--", *paths])
    _git(git, worktree, f"{op} commit", ["commit", "-q", "--no-verify", "-m", subject])


def write_entry_actor(
    worktree: Path,
    agent_id: str,
    origin: str,
    data: bytes,
    staging: Path,
    git: GitRunner,
) -> Actor[TranscriptEntry]:
    """Publish a model or tool entry: staging file → rename into ``messages/`` → commit.

    The bytes are written to ``staging`` (outside the worktree, in ``steps/<id>/``)
    first, so ``messages/`` never holds a half-written entry. A tool entry is
    committed with ``git add -A`` so a tool's side effects in the worktree land
    with its result; a model entry is committed alone (R-TR-3).
    """
    seq = next_seq(worktree)
    name = entry_name(seq, origin, delivered=False)
    # steps/<id>/staging.json and agents/<id>/messages/: no link followed (R-WS-7)
    with (
        guarded.walk_tail(staging.parent, 2, create=True) as steps,
        guarded.walk_tail(messages_dir(worktree), 3, create=True) as messages,
    ):
        steps.replace(staging.name, data)  # a crash's leftover is written afresh
        steps.rename(staging.name, messages, name)
    yield Passed(Point.TRANSCRIPT_RENAMED, agent_id, name)
    paths = None if origin == TOOL_ORIGIN else [f"{MESSAGES_DIR}/{name}"]
    commit(git, worktree, paths, commit_subject(seq, origin, agent_id), op="transcript")
    yield Passed(Point.TRANSCRIPT_COMMITTED, agent_id, name)
    return TranscriptEntry(seq, origin, False, name, data)


def model_entry_actor(
    worktree: Path,
    agent_id: str,
    model_id: str,
    blocks: Sequence[Block],
    usage: dict[str, int] | None,
    staging: Path,
    git: GitRunner,
) -> Actor[TranscriptEntry]:
    """Commit the assistant entry ``NNN-<model>.json`` (R-TR-4); model id ``tool`` is refused."""
    if model_id == TOOL_ORIGIN:
        raise ReservedModelId(model_id)
    data = render_model_entry(list(blocks), usage)
    return (yield from write_entry_actor(worktree, agent_id, model_id, data, staging, git))


def tool_entry_actor(
    worktree: Path, agent_id: str, result: Block, staging: Path, git: GitRunner
) -> Actor[TranscriptEntry]:
    """Commit one tool result as ``NNN-tool.json``, a bare one-element array (R-TR-4)."""
    data = render_tool_entry(result)
    return (yield from write_entry_actor(worktree, agent_id, TOOL_ORIGIN, data, staging, git))
