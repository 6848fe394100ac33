"""The inbox substrate: deposits, the launcher and probe-and-launch (R-DEP, R-LAUNCH, R-PROBE).

A *writer* deposits into an agent's inbox and then probes its executor lock; a
free lock means nobody drives the agent, so the writer releases the probe at
once and launches a driver (launching is not driving, R-PROBE-3). A busy lock
means the holder drains at its next step boundary.

Deposits are create-only and durable, stricter than upstream (D-1, D-2): the
bytes go to a uniquely named dot-temp (``O_CREAT|O_EXCL``), are fsynced, and are
published with ``link(2)``, which fails with ``EEXIST`` instead of replacing; a
taken name moves the writer to the next number. The temp is then unlinked and
the directory fsynced. A temp name starts with ``.`` and ends in ``.tmp``, so no
reader ever accepts it (R-DEP-9).

Actors yield :class:`~lernie_ref.core.actor.Point` s after each step another process
could observe; production runs them straight through.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from enum import Enum, StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from lernie_ref.core.actor import Actor, Point, run
from lernie_ref.core.clock import Clock, SystemClock, iso_stamp
from lernie_ref.core.errors import (
    DepositError,
    LaunchError,
    LernieError,
    NotASender,
    ProbeError,
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
from lernie_ref.core.ids import USER_SENDER, parent_of, require_agent_id
from lernie_ref.substrate.gitrun import GitRunner, SubprocessGit
from lernie_ref.substrate.lock import LOCK_FD_ENV, try_acquire

if TYPE_CHECKING:
    from lernie_ref.substrate.workspace import Workspace

__all__ = [
    "CONV_BRANCH_ENV",
    "INBOX_DIR",
    "USER_SENDER",
    "AdvanceLauncher",
    "Epitaph",
    "Launcher",
    "Pending",
    "ProbeOutcome",
    "RecordingLauncher",
    "cli_dispatch",
    "cli_message",
    "cli_prompt",
    "deposit",
    "deposit_actor",
    "deposit_child_result",
    "deposit_result",
    "deposit_result_actor",
    "inbox_dir",
    "parent_of",
    "pending",
    "probe_actor",
    "probe_and_launch",
    "resolve_cli_sender",
]

INBOX_DIR = "inbox"
STEPS_DIR = "steps"
DRIVER_LOG = "driver.log"
CONV_BRANCH_ENV = "LERNIE_CONV_BRANCH"
RETURNED_REF_PREFIX = "refs/lernie/returned/"

MESSAGE_REASON = "a message is addressed to an existing agent, by id or unique name (ARCH §2.11)"
DISPATCH_REASON = (
    "a dispatch forks a child of an existing agent (ARCH §2.3: the `agents/*` refs are "
    "the registry)"
)


def inbox_dir(ws: Path, agent_id: str) -> Path:
    """R-DEP-1: ``<ws>/inbox/<agent_id>/``, the deposit target and the lock's home."""
    return Path(ws) / INBOX_DIR / agent_id


class Epitaph(StrEnum):
    """R-DEP-5: how a step loop ended, spelled as on disk."""

    FINAL_RESPONSE = "final-response"
    STOPPED = "stopped"
    BUDGET_EXHAUSTED = "budget-exhausted"
    DIED = "died"


# --------------------------------------------------------------------- reading


class Pending(NamedTuple):
    """One pending deposit: an accepted name (R-DEP-9) with its mtime in ns."""

    name: str
    mtime_ns: int
    path: Path
    sender: str


def pending(inbox: Path) -> list[Pending]:
    """Every pending deposit of ``inbox``, ordered by ``(mtime_ns, name)``; missing dir → ``[]``.

    A name that vanishes between the listing and its stat (delivered meanwhile) is
    skipped; an unreadable mtime counts as the epoch, like upstream.
    """
    try:
        names = os.listdir(inbox)
    except FileNotFoundError:
        return []
    out: list[Pending] = []
    for name in names:
        sender = sender_of(name)
        if sender is None:
            continue
        path = Path(inbox) / name
        try:
            mtime_ns = os.stat(path).st_mtime_ns
        except FileNotFoundError:
            continue
        except OSError:
            mtime_ns = 0
        out.append(Pending(name, mtime_ns, path, sender))
    out.sort(key=lambda p: (p.mtime_ns, p.name.encode("utf-8", "surrogateescape")))
    return out


# --------------------------------------------------------------------- deposits


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _publish_actor(ws: Path, recipient: str, sender: str, body: bytes) -> Actor[Path]:
    """R-DEP-1/2/6/7: create-only, durable publication of ``body`` from ``sender``."""
    require_agent_id(recipient)
    require_agent_id(sender)  # the sender is a path component too (R-WS-7)
    if sender.startswith(".") or "\n" in sender or "\r" in sender:
        raise NotASender(sender)  # R-ID-7, D-18: its mail would be invisible or forged
    directory = inbox_dir(ws, recipient)
    try:
        os.makedirs(directory, exist_ok=True)
        names = os.listdir(directory)
    except OSError as exc:
        raise DepositError.io(directory, exc) from None
    seq = next_sequence(names, sender)
    yield Point("deposit.listed", recipient, deposit_name(sender, seq))

    temp = directory / f".{sender}-{seq_text(seq)}.md.{os.urandom(6).hex()}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as exc:  # never unlink a name this writer did not create
        raise DepositError.io(temp, exc) from None
    try:
        try:
            view = memoryview(body)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        _unlink_quietly(temp)
        raise DepositError.io(temp, exc) from None

    try:
        yield Point("deposit.temp-written", recipient, temp.name)
        while True:
            final = directory / deposit_name(sender, seq)
            try:
                os.link(temp, final)
                break
            except FileExistsError:
                yield Point("deposit.collided", recipient, final.name)
                seq += 1
            except OSError as exc:
                raise DepositError.io(final, exc) from None
        yield Point("deposit.published", recipient, final.name)
    except BaseException:
        _unlink_quietly(temp)
        raise
    try:
        os.unlink(temp)
        _fsync_dir(directory)
    except OSError as exc:
        raise DepositError.io(directory, exc) from None
    return final


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def deposit_actor(
    ws: Path, agent_id: str, sender: str, content: str, clock: Clock | None = None
) -> Actor[Path]:
    """R-DEP-4: deposit a plain message from ``sender`` into ``agent_id``'s inbox.

    Points: ``deposit.listed``, ``deposit.temp-written``, (``deposit.collided``)*,
    ``deposit.published``. Returns the published path.
    """
    iso = iso_stamp((clock or SystemClock()).now_ns())
    body = render_plain(sender, iso, content)
    return (yield from _publish_actor(Path(ws), agent_id, sender, body))


def deposit(ws: Path, agent_id: str, sender: str, content: str, clock: Clock | None = None) -> Path:
    """R-DEP-4/6/7: :func:`deposit_actor` run straight through."""
    return run(deposit_actor(ws, agent_id, sender, content, clock))


def deposit_result_actor(
    ws: Path,
    recipient: str,
    child: str,
    epitaph: Epitaph | str,
    terminal_ref: str,
    response: str | None,
    clock: Clock | None = None,
    git: GitRunner | None = None,
) -> Actor[Path]:
    """R-DEP-5/8: deposit ``child``'s result into ``recipient``'s inbox, then set the returned mark.

    Points: those of a deposit, then ``deposit.marked``. A mark failure raises
    ``mark refs/lernie/returned/<child>: …`` and leaves the file in place.
    """
    iso = iso_stamp((clock or SystemClock()).now_ns())
    body = render_result(child, iso, str(epitaph), terminal_ref, response)
    path = yield from _publish_actor(Path(ws), recipient, child, body)
    runner = git or SubprocessGit()
    try:
        runner.run(Path(ws) / "repo.git", ["update-ref", RETURNED_REF_PREFIX + child, terminal_ref])
    except LernieError as exc:
        raise DepositError.mark(child, exc) from None
    except OSError as exc:
        raise DepositError.mark(child, io_text(exc)) from None
    yield Point("deposit.marked", recipient, child)
    return path


def deposit_result(
    ws: Path,
    recipient: str,
    child: str,
    epitaph: Epitaph | str,
    terminal_ref: str,
    response: str | None,
    clock: Clock | None = None,
    git: GitRunner | None = None,
) -> Path:
    """R-DEP-5/8: :func:`deposit_result_actor` run straight through."""
    return run(
        deposit_result_actor(ws, recipient, child, epitaph, terminal_ref, response, clock, git)
    )


def deposit_child_result(
    ws: Path,
    child: str,
    epitaph: Epitaph | str,
    terminal_ref: str,
    response: str | None,
    clock: Clock | None = None,
    git: GitRunner | None = None,
) -> Path | None:
    """R-ADDR-1: deposit ``child``'s result into its parent's inbox; ``None`` for a root."""
    parent = parent_of(child)
    if parent is None:
        return None
    return deposit_result(ws, parent, child, epitaph, terminal_ref, response, clock, git)


# --------------------------------------------------------------------- launching


class Launcher(Protocol):
    """R-LAUNCH-1: start a driver for ``agent_id``; never wait; raise LaunchError on failure."""

    def launch(self, ws: Path, agent_id: str) -> None: ...


_LAUNCHED: list[subprocess.Popen[bytes]] = []


class AdvanceLauncher:
    """R-LAUNCH-2: the production launcher, ``<argv_prefix> advance <ws> <id>`` detached.

    The driver runs in its own session (a stop cascade aimed at the launcher's
    group never reaches it), with stdin/stdout on ``/dev/null``, stderr appended to
    ``<ws>/steps/<id>/driver.log``, and ``LERNIE_LOCK_FD`` removed (a launched
    driver acquires; only an exec'd successor adopts). It is never waited on:
    when the launching process exits the driver is reparented to init; while a
    long-lived launcher lives, finished drivers are reaped at its next launch so
    no zombie piles up.
    """

    def __init__(self, argv_prefix: Sequence[str] | None = None) -> None:
        self.argv_prefix: list[str] = (
            list(argv_prefix) if argv_prefix is not None else [sys.executable, "-m", "lernie_ref"]
        )

    def launch(self, ws: Path, agent_id: str) -> None:
        require_agent_id(agent_id)
        for child in list(_LAUNCHED):
            if child.poll() is not None:
                _LAUNCHED.remove(child)
        steps = Path(ws) / STEPS_DIR / agent_id
        try:
            os.makedirs(steps, exist_ok=True)
            log = os.open(
                steps / DRIVER_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666
            )
        except OSError as exc:
            raise LaunchError(io_text(exc)) from None
        env = {k: v for k, v in os.environ.items() if k != LOCK_FD_ENV}
        try:
            child = subprocess.Popen(
                [*self.argv_prefix, "advance", str(ws), agent_id],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise LaunchError(io_text(exc)) from None
        finally:
            os.close(log)
        _LAUNCHED.append(child)


class RecordingLauncher:
    """A launcher that starts nothing and records ``(ws, agent_id)`` (tests, refinement)."""

    def __init__(self, callback: Callable[[Path, str], None] | None = None) -> None:
        self.launches: list[tuple[Path, str]] = []
        self._callback = callback

    def launch(self, ws: Path, agent_id: str) -> None:
        self.launches.append((Path(ws), agent_id))
        if self._callback is not None:
            self._callback(Path(ws), agent_id)


class ProbeOutcome(Enum):
    LAUNCHED = "launched"
    BUSY = "busy"


def probe_actor(ws: Path, agent_id: str, launcher: Launcher) -> Actor[ProbeOutcome]:
    """R-PROBE-1: try-acquire; free → release *then* launch (LAUNCHED); held → BUSY.

    Points: ``probe.busy``, or ``probe.acquired``, ``probe.released``, ``probe.launched``.
    Errors: :class:`~lernie_ref.core.errors.LockError`,
    :class:`~lernie_ref.core.errors.LaunchError`.
    """
    lock = try_acquire(inbox_dir(ws, agent_id))
    if lock is None:
        yield Point("probe.busy", agent_id)
        return ProbeOutcome.BUSY
    try:
        yield Point("probe.acquired", agent_id)
    finally:
        lock.release()
    yield Point("probe.released", agent_id)
    launcher.launch(Path(ws), agent_id)
    yield Point("probe.launched", agent_id)
    return ProbeOutcome.LAUNCHED


def probe_and_launch(ws: Path, agent_id: str, launcher: Launcher) -> ProbeOutcome:
    """R-PROBE-1: :func:`probe_actor` run straight through."""
    return run(probe_actor(ws, agent_id, launcher))


def _probe_for_writer(ws: Path, agent_id: str, launcher: Launcher) -> ProbeOutcome:
    """A writer's probe: lock and launch failures read ``probe executor lock: {io}``."""
    from lernie_ref.core.errors import LockError

    try:
        return probe_and_launch(ws, agent_id, launcher)
    except LockError as exc:
        raise ProbeError(exc.detail) from None
    except LaunchError as exc:
        raise ProbeError(exc.detail) from None


# --------------------------------------------------------------------- writers


def _require_text(what: str, value: str) -> None:
    """R-CLI-6: arguments that are not valid UTF-8 are a usage error (exit 2), as upstream's
    argument parser makes them; nothing is written."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"the {what} is not valid UTF-8") from None


def resolve_cli_sender(value: str | None) -> str:
    """R-ID-7: ``LERNIE_CONV_BRANCH`` when set and non-empty, else ``user``."""
    return value if value else USER_SENDER


def cli_message(
    ws: Workspace,
    agent: str,
    content: str,
    sender: str,
    launcher: Launcher,
    clock: Clock | None = None,
) -> ProbeOutcome:
    """R-PROBE-4: id guard, name resolution, workspace and existence guards, deposit, probe.

    Nothing is written before every guard has passed (I-17). ``sender`` is resolved by
    the caller (:func:`resolve_cli_sender`, or the calling agent's id for a tool).
    """
    _require_text("message content", content)
    require_agent_id(agent)
    target = ws.resolve_name(agent)
    ws.check_layout()
    ws.require_agent(target, MESSAGE_REASON)
    deposit(ws.root, target, sender, content, clock)
    return _probe_for_writer(ws.root, target, launcher)


def cli_dispatch(
    ws: Workspace,
    parent: str,
    goal: str,
    name: str,
    launcher: Launcher,
    clock: Clock | None = None,
) -> str:
    """R-PROBE-6: fork a child of ``parent``, deposit ``goal`` as the parent's message, probe.

    Returns the child id. The branch exists before the deposit, so a dispatch never
    deposits to a missing agent.
    """
    clock = clock or SystemClock()
    _require_text("goal", goal)
    require_agent_id(parent)
    ws.check_layout()
    ws.require_agent(parent, DISPATCH_REASON)
    ws.check_new_name(name)
    child = ws.mint_child(parent, clock)
    ws.create_child_agent(parent, child, name, goal)
    deposit(ws.root, child, parent, goal, clock)
    _probe_for_writer(ws.root, child, launcher)
    return child


def cli_prompt(
    ws: Workspace,
    text: str,
    name: str,
    launcher: Launcher,
    clock: Clock | None = None,
) -> str:
    """R-PROBE-5: mint a root, create its branch and worktree, deposit ``text`` as ``user``, probe.

    Returns the root id.
    """
    clock = clock or SystemClock()
    _require_text("prompt text", text)
    ws.check_layout()
    ws.check_new_name(name)
    root = ws.mint_root(clock)
    ws.create_root_agent(root, name, text)
    deposit(ws.root, root, USER_SENDER, text, clock)
    _probe_for_writer(ws.root, root, launcher)
    return root
