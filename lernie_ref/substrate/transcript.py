"""The transcript: ``messages/NNN-<origin>.md|.json``, one commit per entry.

An agent's transcript is the set of entry files under ``messages/`` in its
worktree (R-TR-1), read here into the one entry value of the package
(:class:`~lernie_ref.core.entry.Entry`, bytes supplied lazily) for the pure
decisions of the core (R-DEBT-1). Order lives in the name only: ``NNN`` is
derived, never stored, as the largest sequence present plus one (R-TR-2), and
only the lock holder writes, so two entries can never take one number (I-4).
Every entry is published by a ``rename`` into ``messages/`` and then committed
on its own with the subject ``transcript NNN: <origin> [<id>]`` (R-TR-3); model
and tool entries are rendered by the core (R-TR-4) and composed into the
model's history here (R-TR-5). A crash between the rename and the commit leaves
an uncommitted file under ``messages/`` that the next drain's stray recovery
commits first (R-DRAIN-2, I-18): a file that left the inbox always lands.

The writers here are actors with explicit protocol points (:mod:`lernie_ref.core.actor`): they
yield ``transcript.renamed`` after the rename and ``transcript.committed`` after
the commit, so a test can stop the world between the two.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from itertools import compress, repeat
from operator import ge, itemgetter, lt
from pathlib import Path

from lernie_ref.core import debt
from lernie_ref.core.actor import Actor, Passed
from lernie_ref.core.debt import DebtReading
from lernie_ref.core.entry import Block, Entry, render_model_entry, render_tool_entry
from lernie_ref.core.errors import (
    GitOpError,
    LernieError,
    ReservedModelId,
    TranscriptError,
    io_text,
)
from lernie_ref.core.frontmatter import parse_entry_name, parse_u32, seq_text
from lernie_ref.core.ids import AgentId, require_agent_id
from lernie_ref.core.record import record
from lernie_ref.core.vocab import MESSAGES_DIR, TOOL_ORIGIN, Point, Role
from lernie_ref.substrate import guarded
from lernie_ref.substrate.gitrun import GitRunner


class Transcript:
    """The entries of ``<worktree>/messages/``, newest first, read lazily (R-DEBT-1).

    Iterating lists the directory once (on the first iteration, so a reader that is
    never iterated reads nothing), then hands out entries newest first without
    parsing or ordering the whole listing in Python: the names' leading numbers are
    read in bulk, and each step takes the next few sequences below the ones already
    handed out (a chunk that grows fourfold each time), so a decision that stops
    near the newest entry looks at a handful of names. Each name taken is parsed by
    the one parser of R-TR-1; names it declines are skipped. Entries with one
    sequence (impossible under the lock) come by origin, then kind, both
    descending, in listing order beyond that. Each entry's bytes are read when a
    decision first asks for them, once. Iterating again replays the entries handed
    out so far and continues from there.

    A missing directory is an empty transcript; a ``messages`` that is not a
    directory, or cannot be listed, raises :class:`TranscriptError`.
    """

    FIRST_CHUNK = 8
    """Sequences taken by the first step: a terminal response, its window and the one before."""

    def __init__(self, worktree: str | Path) -> None:
        self.worktree = worktree
        self._directory: Path | None = None  # made when an entry or an error names it
        self._names: list[str] | None = None
        self._numbered: list[int] = []  # indices into _names of the names with a number
        self._seqs: list[int] = []  # their numbers, aligned with _numbered
        self._below: int | None = None  # every sequence >= this was handed out
        self._chunk = self.FIRST_CHUNK
        self._given: list[Entry[Path]] = []

    @property
    def directory(self) -> Path:
        """``<worktree>/messages``."""
        if self._directory is None:
            where = self.worktree
            self._directory = (where if isinstance(where, Path) else Path(where)) / MESSAGES_DIR
        return self._directory

    def __iter__(self) -> Iterator[Entry[Path]]:
        done = 0
        while True:
            if done < len(self._given):
                yield self._given[done]
                done += 1
            elif not self._take_next():
                return

    def everything(self) -> list[Entry[Path]]:
        """Every entry, newest first: the rest is ordered in one sort rather than in steps."""
        if self._below == -1:  # every entry was handed out already: the sweep asks twice
            return list(self._given)
        names = self._listing()
        seqs, below = self._seqs, self._below
        if not seqs:  # no numbered name: nothing (more) to hand out
            self._below = -1
            return list(self._given)
        order = sorted(range(len(seqs)), key=seqs.__getitem__, reverse=True)  # stable
        if below is not None:
            order = [j for j in order if seqs[j] < below]
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and seqs[order[end]] == seqs[order[start]]:
                end += 1
            self._give(names, order[start:end])
            start = end
        self._below = -1
        return list(self._given)

    def _listing(self) -> list[str]:
        if self._names is not None:
            return self._names
        try:
            names = os.listdir(f"{os.fspath(self.worktree)}/{MESSAGES_DIR}")
        except FileNotFoundError:
            names = []
        except OSError as exc:
            raise TranscriptError(f"read transcript {self.directory}: {io_text(exc)}") from None
        if not names:  # no entry (a missing directory too): no numbers to read
            self._names = names
            return names
        # The number of every name whose text before its first "-" is a (possibly
        # "+"-signed) decimal number: a superset of the entries, read in bulk in C.
        heads = list(map(str.lstrip, map(itemgetter(0), map(str.partition, names,
                                                             repeat("-"))), repeat("+")))
        self._numbered = list(compress(range(len(names)), map(str.isdecimal, heads)))
        self._seqs = list(map(int, map(heads.__getitem__, self._numbered)))
        self._names = names
        return names

    def _take_next(self) -> bool:
        """Hand out the entries of the next chunk of sequences; False when none are left."""
        names = self._listing()
        seqs, below = self._seqs, self._below
        rest = seqs if below is None else list(compress(seqs, map(lt, seqs, repeat(below))))
        if not rest:
            self._below = -1
            return False
        low = max(rest) - self._chunk + 1
        taken = [j for j in compress(range(len(seqs)), map(ge, seqs, repeat(low)))
                 if below is None or seqs[j] < below]
        taken.sort(key=seqs.__getitem__, reverse=True)  # stable: listing order within one
        start = 0
        while start < len(taken):
            end = start + 1
            while end < len(taken) and seqs[taken[end]] == seqs[taken[start]]:
                end += 1
            self._give(names, taken[start:end])
            start = end
        self._below = low
        self._chunk *= 4
        return True

    def _give(self, names: list[str], group: list[int]) -> None:
        """Parse the names of one sequence (R-TR-1) and hand out the entries among them."""
        entries: list[Entry[Path]] = []
        for j in group:
            name = names[self._numbered[j]]
            parsed = parse_entry_name(name)
            if parsed is not None:
                entries.append(_disk_entry(self.directory / name, *parsed))
        entries.sort(key=lambda e: (e.origin, e.delivered), reverse=True)
        self._given.extend(entries)


def _disk_entry(path: Path, seq: int, origin: str, delivered: bool) -> Entry[Path]:
    return Entry(seq, origin, delivered, path, lambda: read_path(path))


def read_path(path: Path) -> bytes:
    """An entry file's bytes; unreadable → :class:`TranscriptError`."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"read transcript entry {path}: {io_text(exc)}") from None


def entries(worktree: Path) -> Transcript:
    """R-DEBT-1: the transcript of ``worktree``, newest first, listed and read lazily."""
    return Transcript(worktree)


def read_entries(worktree: Path) -> list[Entry[Path]]:
    """R-DEBT-1: every legible entry of ``<worktree>/messages/``, newest first.

    The bytes are read lazily (see :class:`Transcript`). A missing directory is an
    empty transcript; a ``messages`` that is not a directory, or cannot be listed,
    raises :class:`TranscriptError`.
    """
    return Transcript(worktree).everything()


def with_body(entry: Entry[Path]) -> Entry[Path]:
    """``entry`` itself if it carries its bytes (or their reader), else one that reads its path."""
    if entry.body is not None:
        return entry
    return _disk_entry(entry.path, entry.seq, entry.origin, entry.delivered)


def is_terminal_response(entry: Entry[Path], reading: DebtReading = debt.READING) -> bool:
    """R-DEBT-2 on an entry read from disk: a non-``tool`` model entry whose blocks declare
    no ``tool_use`` (as ``reading`` has it, R-STEP-10)."""
    return reading.is_terminal_response(with_body(entry))


def recipient(
    worktree: Path, agent_id: str, epitaph: str, reading: DebtReading = debt.READING
) -> AgentId | None:
    """R-ADDR-1, R-ADDR-3: where a terminal event of the agent whose worktree is
    ``worktree`` sends its result; ``None`` = no deposit. Read from the transcript, so
    guarded here, where it enters (R-ID-9); the debt is ``reading``'s (R-STEP-10)."""
    to = reading.recipient(entries(worktree), agent_id, epitaph)
    return None if to is None else require_agent_id(to)


def read_bytes(entry: Entry[Path]) -> bytes:
    """The entry's bytes (read from its path when it carries none); unreadable → error."""
    return with_body(entry).data


def read_text(entry: Entry[Path]) -> str:
    """The entry's text; unreadable or non-UTF-8 → :class:`TranscriptError`."""
    return with_body(entry).strict_text()


@record(frozen=True)
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


def load(worktree: str | Path, listed: Transcript | None = None) -> list[Entry[Path]]:
    """Every entry in ``messages/`` with its bytes, oldest first (by sequence, then name).
    Missing → ``[]``; an entry that cannot be read raises :class:`TranscriptError`.

    The listing is the one reading of ``messages/`` the reply rules use (R-DEBT-1);
    ``listed``, a :class:`Transcript` of ``worktree`` the caller already listed, is reused.
    """
    out: list[Entry[Path]] = []
    for item in (Transcript(worktree) if listed is None else listed).everything():
        try:
            data = item.path.read_bytes()
        except OSError as exc:
            raise TranscriptError(f"read {item.path}: {io_text(exc)}") from None
        out.append(Entry(item.seq, item.origin, item.delivered, item.path, data))
    out.sort(key=lambda e: (e.seq, e.name))
    return out


def wire_messages(entries: Sequence[Entry[object]]) -> list[WireMessage]:
    """R-TR-5: compose entries into a history; consecutive entries of one role merge."""
    out: list[WireMessage] = []
    for entry in entries:
        blocks = entry.blocks()
        if out and out[-1].role == entry.role:
            out[-1].content.extend(blocks)
        else:
            out.append(WireMessage(entry.role, list(blocks)))
    return out


def history_of(entries: Sequence[Entry[object]]) -> list[tuple[Role, Sequence[Block]]]:
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
) -> Actor[Entry[Path]]:
    """Publish a model or tool entry: staging file → rename into ``messages/`` → commit.

    The bytes are written to ``staging`` (outside the worktree, in ``steps/<id>/``)
    first, so ``messages/`` never holds a half-written entry. A tool entry is
    committed with ``git add -A`` so a tool's side effects in the worktree land
    with its result; a model entry is committed alone (R-TR-3).

    Points: ``Point.TRANSCRIPT_RENAMED``, ``Point.TRANSCRIPT_COMMITTED``.
    Always: ``Point.TRANSCRIPT_RENAMED``, ``Point.TRANSCRIPT_COMMITTED``.
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
    return Entry(seq, origin, False, messages_dir(worktree) / name, data)


def model_entry_actor(
    worktree: Path,
    agent_id: str,
    model_id: str,
    blocks: Sequence[Block],
    usage: dict[str, int] | None,
    staging: Path,
    git: GitRunner,
) -> Actor[Entry[Path]]:
    """Commit the assistant entry ``NNN-<model>.json`` (R-TR-4); model id ``tool`` is refused.

    Points: ``Point.TRANSCRIPT_RENAMED``, ``Point.TRANSCRIPT_COMMITTED``.
    Always: ``Point.TRANSCRIPT_RENAMED``, ``Point.TRANSCRIPT_COMMITTED``.
    """
    if model_id == TOOL_ORIGIN:
        raise ReservedModelId(model_id)
    data = render_model_entry(list(blocks), usage)
    return (yield from write_entry_actor(worktree, agent_id, model_id, data, staging, git))


def tool_entry_actor(
    worktree: Path, agent_id: str, result: Block, staging: Path, git: GitRunner
) -> Actor[Entry[Path]]:
    """Commit one tool result as ``NNN-tool.json``, a bare one-element array (R-TR-4).

    Points: ``Point.TRANSCRIPT_RENAMED``, ``Point.TRANSCRIPT_COMMITTED``.
    Always: ``Point.TRANSCRIPT_RENAMED``, ``Point.TRANSCRIPT_COMMITTED``.
    """
    data = render_tool_entry(result)
    return (yield from write_entry_actor(worktree, agent_id, TOOL_ORIGIN, data, staging, git))
