"""The inbox substrate: listing and create-only, durable deposits (R-DEP).

Deposits are create-only and durable, stricter than upstream (D-1, D-2): the
bytes go to a uniquely named dot-temp (``O_CREAT|O_EXCL``), are fsynced, and are
published with ``link(2)``, which fails with ``EEXIST`` instead of replacing; a
taken name moves the writer to the next number. Right before each link the temp's
times are set to now, in nanoseconds, so a deposit's mtime orders it by its
publication (R-DEP-12, D-39). The temp is then unlinked and
the directory fsynced. A temp name starts with ``.`` and ends in ``.tmp``, so no
reader ever accepts it (R-DEP-9). Every name is reached through
:mod:`~lernie_ref.substrate.guarded`, never through a link (R-WS-7), and content may be
a stream copied in pieces after the head (R-CLI-7).

The deposit actors yield :class:`~lernie_ref.core.actor.Passed` points after each step
another process could observe; production runs them straight through.
"""

from __future__ import annotations

import codecs  # loaded at interpreter start-up anyway (the text encodings use it)
import os
import time

from lernie_ref.core import TYPE_CHECKING, Protocol
from lernie_ref.core.actor import Passed, run
from lernie_ref.core.clock import iso_stamp
from lernie_ref.core.errors import (
    ContentError,
    DepositError,
    LernieError,
    NotASender,
    UsageError,
    io_text,
)
from lernie_ref.core.frontmatter import (
    deposit_name,
    next_sequence,
    render_plain,
    render_result,
    sender_of,
    seq_text,
)
from lernie_ref.core.ids import AgentId, parent_id, require_agent_id
from lernie_ref.core.names import INBOX_DIR, REPO_DIR, Point
from lernie_ref.substrate import guarded
from lernie_ref.substrate.guarded import write_all

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import TypeVar

    from lernie_ref.core.actor import Actor
    from lernie_ref.core.clock import Clock
    from lernie_ref.core.vocab import Epitaph
    from lernie_ref.substrate.gitrun import GitRunner

    P = TypeVar("P", bound=str | Path)
    """A workspace path: a ``Path`` in the library, the root's text on the CLI's message
    path. Paths built from it keep its type."""


def inbox_dir(ws: P, agent_id: AgentId) -> P:
    """R-DEP-1: ``<ws>/inbox/<agent_id>/``, the deposit target and the lock's home."""
    return type(ws)(_inbox_text(ws, agent_id))


def _inbox_text(ws: str | Path, agent_id: AgentId) -> str:
    """:func:`inbox_dir` as text, joined as ``os.path.join`` joins it (an id is one
    component, never absolute), without its generic code: every deposit asks."""
    root = os.fspath(ws)
    if root and root[-1] != "/":
        return f"{root}/{INBOX_DIR}/{agent_id}"
    return f"{root}{INBOX_DIR}/{agent_id}"


class Pending(tuple[str, int, "Path", str]):
    """One pending deposit ``(name, mtime_ns, path, sender)``: an accepted name (R-DEP-9)
    with its mtime in ns. A named 4-tuple written by hand (no ``typing`` import)."""

    __slots__ = ()

    def __new__(cls, name: str, mtime_ns: int, path: Path, sender: str) -> Pending:
        return tuple.__new__(cls, (name, mtime_ns, path, sender))

    @property
    def name(self) -> str:
        return self[0]

    @property
    def mtime_ns(self) -> int:
        return self[1]

    @property
    def path(self) -> Path:
        return self[2]

    @property
    def sender(self) -> str:
        return self[3]

    def __repr__(self) -> str:
        return (
            f"Pending(name={self[0]!r}, mtime_ns={self[1]!r}, path={self[2]!r}, "
            f"sender={self[3]!r})"
        )


def writer_pid(name: str) -> int | None:
    """R-DEP-6: the pid a deposit temp's name carries (``.<sender>-<NNN>.md.<pid>.<12
    hex>.tmp``), or ``None`` for any other name."""
    if not (name.startswith(".") and name.endswith(".tmp")):
        return None
    parts = name[: -len(".tmp")].rsplit(".", 2)
    if len(parts) != 3 or not parts[0].endswith(".md"):
        return None
    pid, tail = parts[1], parts[2]
    if not (pid.isdigit() and pid.isascii() and len(tail) == 12):
        return None
    if any(c not in "0123456789abcdef" for c in tail):
        return None
    return int(pid)


def writer_dead(pid: int) -> bool:
    """Whether no process has ``pid`` (``kill(pid, 0)`` finds none). A reused pid reads as
    alive: its temp then waits for a later scan."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def pending(
    inbox: str | Path, held: int | None = None, temps: list[str] | None = None
) -> list[Pending]:
    """R-DEP-11: every pending deposit of ``inbox``, ordered by ``(mtime_ns, name)``; missing
    dir → ``[]``.

    A name that vanishes between the listing and its stat (delivered meanwhile) is
    skipped; an unreadable mtime counts as the epoch, like upstream. ``held``: a
    descriptor of ``inbox`` itself the caller holds (its lock's), listed instead of the
    path: the same directory, without walking the path again. ``temps``: a list that
    receives the names of writers' temp files met in the same listing (R-DEP-6).
    """
    try:
        names = os.listdir(inbox if held is None else held)
    except FileNotFoundError:
        return []
    if not names:  # an empty inbox, the common case of a sweep and a flush: nothing to make
        return []
    from pathlib import Path

    out: list[Pending] = []
    for name in names:
        sender = sender_of(name)
        if sender is None:
            if temps is not None and name.startswith(".") and name.endswith(".tmp"):
                temps.append(name)
            continue
        path = Path(inbox) / name
        try:
            mtime_ns = os.stat(path, follow_symlinks=False).st_mtime_ns
        except FileNotFoundError:
            continue
        except OSError:
            mtime_ns = 0
        out.append(Pending(name, mtime_ns, path, sender))
    out.sort(key=lambda p: (p.mtime_ns, p.name.encode("utf-8", "surrogateescape")))
    return out


class Stream(Protocol):
    """Content read in pieces (standard input, a file): ``read(n)`` → at most ``n`` bytes."""

    def read(self, size: int, /) -> bytes: ...


CHUNK = 1 << 20
"""Streamed content is copied in pieces of this size: memory stays flat at any length."""


class ContentStream:
    """A :class:`Stream` over a binary file whose read errors name the source (R-CLI-7)."""

    def __init__(self, handle: Stream, label: str) -> None:
        self._handle = handle
        self.label = label

    def read(self, size: int, /) -> bytes:
        try:
            return self._handle.read(size)
        except OSError as exc:
            raise ContentError(f"read {self.label}: {io_text(exc)}") from None


def copy_text(source: Stream, fd: int) -> int:
    """Copy ``source`` to ``fd`` piece by piece, checking it is UTF-8 text; the byte count.

    Text that is not UTF-8 raises :class:`UsageError` (R-CLI-6): the caller removes what
    it wrote, so nothing a reader would accept is left.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    total = 0
    while True:
        chunk = source.read(CHUNK)
        try:
            decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError:
            raise UsageError("the message content is not valid UTF-8") from None
        if not chunk:
            return total
        write_all(fd, chunk)
        total += len(chunk)


def link_new(inbox: guarded.Dir, temp: str, final: str) -> None:
    """R-DEP-6: publish ``temp`` as ``final`` with ``link(2)``, create-only: a taken name
    raises ``FileExistsError`` and nothing is replaced."""
    inbox.link(temp, final)


def _publish_actor(
    ws: P,
    recipient: AgentId,
    sender: str,
    body: bytes,
    stream: Stream | None = None,
    publish: Callable[[guarded.Dir, str, str], None] = link_new,
) -> Actor[P]:
    """R-DEP-1, R-DEP-2, R-DEP-6, R-DEP-7: create-only, durable publication of ``body``
    (then ``stream``) from ``sender``. Every name is reached through
    :mod:`~lernie_ref.substrate.guarded` (R-WS-7); ``publish`` is the last step
    (:func:`link_new`, or the writer's part, R-STEP-10)."""
    require_agent_id(sender)  # the sender is a path component too (R-WS-7)
    if sender.startswith(".") or "\n" in sender or "\r" in sender:
        raise NotASender(sender)  # R-ID-7, D-18: its mail would be invisible or forged
    # The directory as text for the error messages; the one path object made is the result.
    directory = _inbox_text(ws, recipient)
    try:
        inbox = guarded.walk(ws, (INBOX_DIR, recipient), create=True)
    except OSError as exc:
        raise DepositError.io(directory, exc) from None
    with inbox:
        name = yield from _publish_in(
            inbox, directory, recipient, sender, body, stream, publish
        )
    return type(ws)(f"{directory}/{name}")


def _publish_in(
    inbox: guarded.Dir,
    directory: str,
    recipient: str,
    sender: str,
    body: bytes,
    stream: Stream | None,
    publish: Callable[[guarded.Dir, str, str], None],
) -> Actor[str]:
    try:
        names = inbox.listdir()
    except OSError as exc:
        raise DepositError.io(directory, exc) from None
    seq = next_sequence(names, sender)
    yield Passed(Point.DEPOSIT_LISTED, recipient, deposit_name(sender, seq))

    # the writer's pid in the name: the next scan removes a dead writer's temp (R-DEP-6)
    temp = f".{sender}-{seq_text(seq)}.md.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    try:
        fd = inbox.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:  # never unlink a name this writer did not create
        raise DepositError.io(os.path.join(directory, temp), exc) from None
    try:
        try:
            write_all(fd, body)
            if stream is not None:
                copy_text(stream, fd)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        _unlink_quietly(inbox, temp)
        raise DepositError.io(os.path.join(directory, temp), exc) from None
    except BaseException:
        _unlink_quietly(inbox, temp)
        raise

    try:
        yield Passed(Point.DEPOSIT_TEMP_WRITTEN, recipient, temp)
        while True:
            final = deposit_name(sender, seq)
            try:  # R-DEP-12: its mtime is its publication's, not its write's
                _stamp(inbox, temp)
            except OSError as exc:
                raise DepositError.io(os.path.join(directory, temp), exc) from None
            try:
                publish(inbox, temp, final)
                break
            except FileExistsError:
                yield Passed(Point.DEPOSIT_COLLIDED, recipient, final)
                seq += 1
            except OSError as exc:
                raise DepositError.io(os.path.join(directory, final), exc) from None
        yield Passed(Point.DEPOSIT_PUBLISHED, recipient, final)
    except BaseException:
        _unlink_quietly(inbox, temp)
        raise
    try:
        inbox.unlink(temp)
        inbox.fsync()
    except OSError as exc:
        raise DepositError.io(directory, exc) from None
    return final


def _stamp(inbox: guarded.Dir, temp: str) -> None:
    """R-DEP-12: stamp ``temp`` as published now, read from the real-time clock in
    nanoseconds (the kernel's own file clock may tick in milliseconds): deposits published one
    after another get increasing mtimes, so the (mtime, name) listing (R-DEP-11) is
    their publication order, ties included."""
    inbox.touch(temp, time.time_ns())


def _unlink_quietly(inbox: guarded.Dir, name: str) -> None:
    try:  # noqa: SIM105 (contextlib stays off the message path)
        inbox.unlink(name)
    except OSError:
        pass


def deposit_actor(
    ws: P,
    agent_id: AgentId,
    sender: str,
    content: str | Stream,
    clock: Clock,
    publish: Callable[[guarded.Dir, str, str], None] = link_new,
) -> Actor[P]:
    """R-DEP-4: deposit a plain message from ``sender`` into ``agent_id``'s inbox.

    ``content`` is text, or a :class:`Stream` copied in pieces after the head (R-CLI-7).
    Returns the published path; a taken name moves it to the next number (R-DEP-6).
    ``publish``: the writer's part that makes the name (R-STEP-10; :func:`link_new`).

    Points: ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_COLLIDED`` (once per taken name), ``Point.DEPOSIT_PUBLISHED``.
    Always: ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_PUBLISHED``.
    """
    iso = iso_stamp(clock.now_ns())
    if isinstance(content, str):
        body = render_plain(sender, iso, content)
        return (yield from _publish_actor(ws, agent_id, sender, body, None, publish))
    head = render_plain(sender, iso, "")
    return (yield from _publish_actor(ws, agent_id, sender, head, content, publish))


def deposit(ws: P, agent_id: AgentId, sender: str, content: str | Stream, clock: Clock) -> P:
    """R-DEP-4, R-DEP-6, R-DEP-7: :func:`deposit_actor` run straight through."""
    return run(deposit_actor(ws, agent_id, sender, content, clock))


def deposit_result_actor(
    ws: Path,
    recipient: AgentId,
    child: AgentId,
    epitaph: Epitaph | str,
    terminal_ref: str,
    response: str | None,
    clock: Clock,
    git: GitRunner,
) -> Actor[Path]:
    """R-DEP-5, R-DEP-8: deposit ``child``'s result into ``recipient``'s inbox, then set the
    returned mark (I-14: every result publication moves it).

    A mark failure raises ``mark refs/lernie/returned/<child>: …`` and leaves the file in
    place.

    Points: ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_COLLIDED``, ``Point.DEPOSIT_PUBLISHED``, then ``Point.DEPOSIT_MARKED``.
    Always: ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_PUBLISHED``, ``Point.DEPOSIT_MARKED``.
    """
    from pathlib import Path

    from lernie_ref.core.vocab import RETURNED_REF_PREFIX

    iso = iso_stamp(clock.now_ns())
    body = render_result(child, iso, str(epitaph), terminal_ref, response)
    path = yield from _publish_actor(Path(ws), recipient, child, body)
    try:
        git.run(Path(ws) / REPO_DIR, ["update-ref", RETURNED_REF_PREFIX + child, terminal_ref])
    except LernieError as exc:
        raise DepositError.mark(child, exc) from None
    except OSError as exc:
        raise DepositError.mark(child, io_text(exc)) from None
    yield Passed(Point.DEPOSIT_MARKED, recipient, child)
    return path


def deposit_result(
    ws: Path,
    recipient: AgentId,
    child: AgentId,
    epitaph: Epitaph | str,
    terminal_ref: str,
    response: str | None,
    clock: Clock,
    git: GitRunner,
) -> Path:
    """R-DEP-5, R-DEP-8: :func:`deposit_result_actor` run straight through."""
    return run(
        deposit_result_actor(ws, recipient, child, epitaph, terminal_ref, response, clock, git)
    )


def deposit_child_result(
    ws: Path,
    child: AgentId,
    epitaph: Epitaph | str,
    terminal_ref: str,
    response: str | None,
    clock: Clock,
    git: GitRunner,
) -> Path | None:
    """R-ADDR-1: deposit ``child``'s result into its parent's inbox; ``None`` for a root."""
    parent = parent_id(child)  # guarded where it is derived (R-ID-9)
    if parent is None:
        return None
    return deposit_result(ws, parent, child, epitaph, terminal_ref, response, clock, git)
