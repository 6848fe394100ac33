"""``lernie advance <ws> <agent>``: drive one hop of an agent (R-STEP-1, R-STEP-2, R-STEP-3,
R-STEP-4, R-STEP-5, R-LOCK-3).

Launched by the harness (detached, stderr in ``steps/<id>/driver.log``) or run by
hand. Preludes: a SIGTERM handler that only sets the stop flag the hop reads at
its check points (R-TERM-1, R-STOP-6), and ``setpgid(0, 0)`` so ``lernie stop`` finds a
group leader (a launched driver already leads its own session; that failure is
silent). Guards before any lease, so a typo creates no inbox directory (I-17).

After a step that ran tools the process replaces itself with the successor hop,
``python -m lernie_ref advance <ws> <id>``, handing the still-held lease over in
``LERNIE_LOCK_FD`` (the exec baton): the lock is never free between hops (I-2).
SIGTERM is blocked across that ``execve`` and unblocked once the successor's
handler is installed, so a stop that lands between the two hops is not lost
(it would otherwise hit the default disposition and kill the process outright).
Prints nothing on stdout; errors are one ``lernie advance: …`` line, exit 1.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from types import FrameType

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.errors import ExecError, ExternalFailure, io_text

if TYPE_CHECKING:
    from lernie_ref.core.ids import AgentId
    from lernie_ref.substrate.config import Config

REASON = "a hop drives an existing agent, named by id or unique name (R-ID-6)"

_stop = False


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    global _stop
    _stop = True


def stop_requested() -> bool:
    return _stop


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="the workspace directory")
    parser.add_argument("agent", help="the agent: an agent id or a unique agent name")


def recorded_config(root: str, agent: AgentId, config: Config) -> Config:
    """R-STEP-9: ``config`` running the model recorded for ``agent`` (its own record or its
    nearest ancestor's); a different choice in this environment is one warning line on
    stderr (the driver log), never a switch."""
    from lernie_ref.substrate import preflight

    found = preflight.recorded(root, agent)
    if found is None:
        return config
    owner, raw = found
    spec = preflight.parse_record(owner, raw)
    chosen = preflight.env_differs(spec, config, os.environ)
    if chosen:
        note = preflight.warning(agent, owner, spec, chosen, os.environ)
        print(f"lernie: {note}", file=sys.stderr)
    return preflight.apply(config, spec)


def run(ns: argparse.Namespace) -> str | None:
    signal.signal(signal.SIGTERM, _on_sigterm)
    # A predecessor hop blocks SIGTERM across its execve (see below); a signal that
    # arrived meanwhile is pending and is delivered to the handler right here.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    from lernie_ref.actors.hop import HopDeps, Outcome, hop_actor
    from lernie_ref.adapters.selection import select_model
    from lernie_ref.core.actor import run as run_actor
    from lernie_ref.core.clock import SystemClock
    from lernie_ref.inbox import AdvanceLauncher
    from lernie_ref.substrate.config import load
    from lernie_ref.substrate.workspace import Workspace

    ws_arg: str = ns.workspace
    ws = Workspace(ws_arg)
    agent = ws.resolve_agent(ns.agent, REASON)
    try:
        config = recorded_config(str(ws.root), agent, load(ws.root, os.environ))
        deps = HopDeps(
            model=select_model(
                config.model, config.model_command, config=config, env=os.environ, root=ws.root
            ),
            launcher=AdvanceLauncher(),
            clock=SystemClock(),
            config=config,
            stop_requested=stop_requested,
        )
        result = run_actor(hop_actor(ws, agent, os.environ, deps))
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise ExternalFailure(f"i/o writing conversation artifact: {where}{io_text(exc)}") from None
    if result.outcome is not Outcome.TOOLS_RAN or result.lock is None:
        return None
    lock = result.lock
    argv = [sys.executable, "-m", "lernie_ref", "advance", ws_arg, agent]
    sys.stdout.flush()
    sys.stderr.flush()
    # Blocked, not lost: the mask survives execve, so a SIGTERM that lands while the
    # successor's interpreter starts waits for its handler instead of killing it.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    if _stop:
        os.kill(os.getpid(), signal.SIGTERM)
    try:
        lock.exec_successor(sys.executable, argv, os.environ)
    except ExecError:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        raise
