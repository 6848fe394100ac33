"""Launching a driver (R-LAUNCH): the :class:`Launcher` protocol, the production launcher
that starts ``lernie advance`` detached, and a recording launcher that starts nothing.

The production launcher uses ``os.posix_spawn`` (:mod:`~lernie_ref.substrate.spawn`)
rather than ``subprocess``: it is on the ``lernie message`` path, where ``subprocess``
(and the modules it loads) would cost more than the spawn itself (R-CLI-5).
"""

from __future__ import annotations

import os
import sys

from lernie_ref.core import TYPE_CHECKING, Protocol
from lernie_ref.core.errors import ContainmentError, LaunchError, io_text
from lernie_ref.core.ids import AgentId
from lernie_ref.core.names import DRIVER_LOG, LOCK_FD_ENV, STEPS_DIR
from lernie_ref.substrate import guarded
from lernie_ref.substrate.spawn import spawn

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path


class Launcher(Protocol):
    """R-LAUNCH-1: start a driver for ``agent_id``; never wait; raise LaunchError on failure."""

    def launch(self, ws: str | Path, agent_id: AgentId) -> None: ...


_LAUNCHED: list[int] = []
"""Pids of drivers this process started and has not reaped yet."""


def _reap() -> None:
    """Reap the drivers that have finished (a long-lived launcher leaves no zombies)."""
    for pid in list(_LAUNCHED):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _LAUNCHED.remove(pid)


TOOL_MARKS = ("LERNIE_TOOL_WS", "LERNIE_TOOL_AGENT")
"""The environment marks of a tool's processes (R-TOOL-7). A driver launched from inside
a tool (a ``lernie message`` run by ``bash``) is not one of them: it never carries them."""


class AdvanceLauncher:
    """R-LAUNCH-2: the production launcher, ``<argv_prefix> advance <ws> <id>`` detached.

    The driver runs in its own session (a stop cascade aimed at the launcher's
    group never reaches it), with stdin/stdout on ``/dev/null``, stderr appended to
    ``<ws>/steps/<id>/driver.log``, and ``LERNIE_LOCK_FD`` removed (a launched
    driver acquires; only an exec'd successor adopts) and so are the tool marks
    (:data:`TOOL_MARKS`). No other descriptor is
    inherited: the library opens every descriptor close-on-exec, and any inheritable
    one the process was handed is closed in the spawn. Signals the
    interpreter ignores (``SIGPIPE``, ``SIGXFSZ``) are reset to their defaults in the
    driver, as ``subprocess`` does. The launch returns once the driver's ``execve`` is
    through (:func:`~lernie_ref.substrate.spawn.spawn` with ``until_exec``): the driver
    no longer shares the launcher's memory and holds none of its descriptors. It is
    never waited on beyond that: when the launching
    process exits the driver is reparented to init; while a long-lived launcher
    lives, finished drivers are reaped at its next launch so no zombie piles up.
    """

    def __init__(self, argv_prefix: Sequence[str] | None = None) -> None:
        self.argv_prefix: list[str] = (
            list(argv_prefix) if argv_prefix is not None else [sys.executable, "-m", "lernie_ref"]
        )

    def launch(self, ws: str | Path, agent_id: AgentId) -> None:
        _reap()
        try:  # steps/<id>/driver.log, never through a link (R-WS-7)
            with guarded.walk(ws, (STEPS_DIR, agent_id), create=True) as steps:
                log = steps.open(DRIVER_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except OSError as exc:
            raise LaunchError(io_text(exc)) from None
        except ContainmentError as exc:
            raise LaunchError(str(exc)) from None
        env = {k: v for k, v in os.environ.items() if k != LOCK_FD_ENV and k not in TOOL_MARKS}
        argv = [*self.argv_prefix, "advance", os.fspath(ws), agent_id]
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, log, 2),
        ]
        try:
            pid = spawn(argv, env, actions, setsid=True, keep=(log,), until_exec=True)
        except OSError as exc:
            raise LaunchError(io_text(exc)) from None
        finally:
            os.close(log)
        _LAUNCHED.append(pid)


class RecordingLauncher:
    """A launcher that starts nothing and records ``(ws, agent_id)`` (tests, refinement)."""

    def __init__(self, callback: Callable[[Path, str], None] | None = None) -> None:
        self.launches: list[tuple[Path, str]] = []
        self._callback = callback

    def launch(self, ws: str | Path, agent_id: AgentId) -> None:
        from pathlib import Path

        self.launches.append((Path(ws), agent_id))
        if self._callback is not None:
            self._callback(Path(ws), agent_id)
