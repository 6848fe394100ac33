"""The ``bash`` tool's process: ``sh -c`` in a group of its own, bounded and killed whole
(R-TOOL-4, R-TOOL-7).

Theory of operation. A command runs as ``/bin/sh -c <command>`` in a new session
(so a process group of its own, led by the shell), stdin ``/dev/null``, every
descriptor but 0-2 closed (the executor lock is never inherited), with two marks
in its environment that every process it starts inherits:
``LERNIE_TOOL_WS=<workspace>`` and ``LERNIE_TOOL_AGENT=<agent id>``. One thread
reads stdout and stderr through a selector, keeps the first ``cap`` bytes of
each and counts the rest (so a chatty command never blocks on a full pipe), and
watches three things: the shell's exit (seen with ``waitid(WNOWAIT)``, before it
is reaped, so its process group id cannot be reused meanwhile), the deadline and
the stop flag. Whichever comes first, the call ends the same way: ``SIGKILL``
to the whole process group, then to every process still carrying the two marks
(:func:`kill_marked`: a process that left the group with ``setsid`` is found by
them), then the shell is reaped and the pipes drained. No process the call
started outlives it.

A driver killed while a command runs cannot do this; the next holder of the
agent's lock does it instead before settling the call as ``died`` (R-STEP-2,
R-SCAN-10), with :func:`kill_marked`: under the lock, no other call of that agent
can be running, so every process carrying its marks is a leftover.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lernie_ref.substrate import procfs
from lernie_ref.substrate.launcher import TOOL_MARKS

WS_MARK, AGENT_MARK = TOOL_MARKS
SCRUBBED = ("LERNIE_LOCK_FD", WS_MARK, AGENT_MARK, "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
"""Variables a tool's environment never inherits from the executor's: the lease, the
marks (set afresh), and the provider keys, so a command cannot print a key into the
transcript (R-STEP-8)."""

_POLL_S = 0.02
_DRAIN_S = 2.0
"""After the kill, how long the pipes may take to reach end-of-file (a process that
escaped both the group and the marks may still hold them; it is then left to them)."""


@dataclass
class ShellOutcome:
    """How one command ended and what it wrote."""

    ended: str
    """``exited``, ``timeout`` or ``stopped``."""
    returncode: int | None
    """The shell's exit status (negative: the signal that ended it); ``None`` when the
    call was cut short (timeout, stop)."""
    stdout: bytes
    stderr: bytes
    stdout_total: int
    stderr_total: int


def marks(ws_root: str | Path, agent_id: str) -> dict[str, str]:
    """The two environment marks of ``agent_id``'s tool processes."""
    return {WS_MARK: os.path.realpath(ws_root), AGENT_MARK: agent_id}


def marked_pids(ws_root: str | Path, agent_id: str) -> list[int]:
    """Live processes (other than this one) whose environment carries the agent's marks."""
    wanted = {f"{k}={v}".encode() for k, v in marks(ws_root, agent_id).items()}
    me = os.getpid()
    out: list[int] = []
    try:
        pids = procfs.pids()
    except OSError:
        return out
    for pid in pids:
        if pid == me:
            continue
        environ = procfs.environ(pid)  # None: gone, or another user's
        if environ is not None and wanted.issubset(environ):
            out.append(pid)
    return out


def kill_marked(ws_root: str | Path, agent_id: str) -> list[int]:
    """``SIGKILL`` every process carrying the agent's marks until none is left; the pids.

    Repeated until a pass finds none (a process may fork between a pass's listing and
    its kill; a killed process forks no more), at most 50 passes.
    """
    killed: list[int] = []
    for _ in range(50):
        pids = marked_pids(ws_root, agent_id)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            if pid not in killed:
                killed.append(pid)
        time.sleep(0.005)
    return killed


def tool_env(base: Mapping[str, str], ws_root: str | Path, agent_id: str) -> dict[str, str]:
    """The environment of a tool process: ``base`` without the executor's own variables,
    plus the agent's marks and ``LERNIE_AGENT``."""
    env = {k: v for k, v in base.items() if k not in SCRUBBED}
    env.update(marks(ws_root, agent_id))
    env["LERNIE_AGENT"] = agent_id
    return env


def _exited(pid: int) -> bool:
    """The process ``pid`` (our child) has exited; it stays unreaped (``WNOWAIT``)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def end_call(pid: int, ws_root: str | Path, agent_id: str) -> None:
    """R-TOOL-4: kill what a call started: the shell's process group (its leader ``pid``
    not reaped yet, so the group id still names it) and every process carrying the
    call's marks."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    kill_marked(ws_root, agent_id)


def run_shell(
    command: str,
    cwd: Path,
    env: Mapping[str, str],
    *,
    timeout: float,
    cap: int,
    should_stop: Callable[[], bool],
    ws_root: str | Path,
    agent_id: str,
    clock: Callable[[], float] = time.monotonic,
    end: Callable[[int, str | Path, str], None] = end_call,
) -> ShellOutcome:
    """Run ``command`` with ``sh -c`` (see the module text); raises ``OSError`` when the
    shell cannot start. ``end`` kills what the call started, whichever way it ended (the
    tools' part, R-STEP-10; :func:`end_call` by default)."""
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        close_fds=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    kept: dict[int, list[bytes]] = {}
    totals: dict[int, int] = {}
    selector = selectors.DefaultSelector()
    for pipe in (proc.stdout, proc.stderr):
        os.set_blocking(pipe.fileno(), False)
        selector.register(pipe.fileno(), selectors.EVENT_READ)
        kept[pipe.fileno()] = []
        totals[pipe.fileno()] = 0

    def pump(wait: float) -> None:
        for key, _ in selector.select(wait):
            fd = int(key.fd)
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                selector.unregister(fd)
                continue
            room = cap - sum(len(c) for c in kept[fd])
            if room > 0:
                kept[fd].append(chunk[:room])
            totals[fd] += len(chunk)

    deadline = clock() + timeout
    ended = "exited"
    try:
        while True:
            if _exited(proc.pid):
                break
            if should_stop():
                ended = "stopped"
                break
            left = deadline - clock()
            if left <= 0:
                ended = "timeout"
                break
            if selector.get_map():
                pump(min(_POLL_S, left))
            else:
                time.sleep(min(_POLL_S, left))
    finally:
        end(proc.pid, ws_root, agent_id)  # the leader is not reaped yet
        proc.wait()
        drain_until = clock() + _DRAIN_S
        while selector.get_map() and clock() < drain_until:
            pump(_POLL_S)
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
    fds = list(kept)  # stdout's descriptor, then stderr's (closed now; only keys here)
    return ShellOutcome(
        ended=ended,
        returncode=proc.returncode if ended == "exited" else None,
        stdout=b"".join(kept[fds[0]]),
        stderr=b"".join(kept[fds[1]]),
        stdout_total=totals[fds[0]],
        stderr_total=totals[fds[1]],
    )
