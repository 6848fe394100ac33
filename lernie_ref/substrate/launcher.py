"""Launching a driver (R-LAUNCH): the :class:`Launcher` protocol, the production launcher
that starts ``lernie advance`` detached, and a recording launcher that starts nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from lernie_ref.core.errors import ContainmentError, LaunchError, io_text
from lernie_ref.core.ids import require_agent_id
from lernie_ref.core.vocab import DRIVER_LOG, LOCK_FD_ENV, STEPS_DIR
from lernie_ref.substrate import guarded


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
        try:  # steps/<id>/driver.log, never through a link (R-WS-7)
            with guarded.walk(ws, (STEPS_DIR, agent_id), create=True) as steps:
                log = steps.open(DRIVER_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except OSError as exc:
            raise LaunchError(io_text(exc)) from None
        except ContainmentError as exc:
            raise LaunchError(str(exc)) from None
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
