"""Helpers for the operator-verb tests: in-process hops, crashes at chosen points, lock holders.

An in-process hop is the driver's own actor (``hop_actor``) run in the test
process with a recording launcher: no detached process is started, and a
"crash" is the generator closed at a named protocol point (the hop releases its
lease on any exception, as the kernel would at process death, and deposits
nothing more).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from lernie_ref.actors.hop import HopDeps, HopResult, Outcome, hop_actor
from lernie_ref.adapters import ScriptedModel
from lernie_ref.core.actor import Stepper, run
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.frontmatter import split_frontmatter, terminal_ref_of
from lernie_ref.core.vocab import Point
from lernie_ref.inbox import Launcher, RecordingLauncher, pending
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.lock import LOCK_FD_ENV
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import poll


def deps(
    launcher: Launcher,
    *,
    stop: Callable[[], bool] = lambda: False,
    budget: int = 100,
) -> HopDeps:
    return HopDeps(
        model=ScriptedModel(),
        launcher=launcher,
        clock=SystemClock(),
        config=Config(step_budget=budget),
        stop_requested=stop,
    )


def drive(
    ws: Workspace,
    agent: str,
    launcher: Launcher | None = None,
    *,
    stop: Callable[[], bool] = lambda: False,
    budget: int = 100,
) -> HopResult:
    """Run hops in-process (successors adopt the baton) until one ends without tools."""
    env: Mapping[str, str] = {}
    hop_deps = deps(launcher or RecordingLauncher(), stop=stop, budget=budget)
    for _ in range(50):
        result = run(hop_actor(ws, agent, env, hop_deps))
        if result.outcome is not Outcome.TOOLS_RAN:
            return result
        assert result.lock is not None
        env = {LOCK_FD_ENV: str(result.lock.fd)}
    raise AssertionError("hop chain did not end")


def crash_at(
    ws: Workspace,
    agent: str,
    point: Point,
    *,
    hops_before: int = 0,
    detail: str | None = None,
) -> None:
    """Drive ``agent`` and die right after ``point`` (in the hop after ``hops_before`` tool hops).

    ``detail`` narrows the point (e.g. the warrant value). Death = the generator is
    closed: the lease goes (as at process death) and nothing else is written.
    """
    env: Mapping[str, str] = {}
    hop_deps = deps(RecordingLauncher())
    for _ in range(hops_before):
        result = run(hop_actor(ws, agent, env, hop_deps))
        assert result.outcome is Outcome.TOOLS_RAN, result
        assert result.lock is not None
        env = {LOCK_FD_ENV: str(result.lock.fd)}
    actor = hop_actor(ws, agent, env, hop_deps)
    stepper = Stepper(actor)
    while True:
        passed = stepper.step()
        if passed is None:
            raise AssertionError(f"hop ended before {point!r}")
        if passed.name == point and (detail is None or passed.detail == detail):
            break
    actor.close()


def results_from(ws: Workspace, recipient: str, sender: str) -> list[tuple[str, str]]:
    """``(epitaph, terminal_ref)`` of each result from ``sender`` pending for ``recipient``."""
    out = []
    for deposit in pending(ws.inbox_dir(recipient)):
        if deposit.sender != sender:
            continue
        body = deposit.path.read_text()
        ref = terminal_ref_of(body)
        if ref is not None:
            out.append((split_frontmatter(body)[0], ref))
    return out


def mark(ws: Workspace, kind: str, agent: str) -> str | None:
    ref = f"refs/lernie/{kind}/{agent}"
    result = ws.git.run(ws.repo_git, ["rev-parse", "--verify", "--quiet", ref], check=False)
    return result.stdout if result.returncode == 0 else None


def tree_listing(root: Path) -> list[str]:
    """Every path under ``root`` except git internals (to prove nothing was written)."""
    out = []
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "repo.git"]
        for name in dirs + files:
            out.append(os.path.relpath(os.path.join(base, name), root))
    return sorted(out)


HOLDER_CODE = (
    "import fcntl, os, signal, sys, time\n"
    "if sys.argv[2] == 'ignore': signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
    "if sys.argv[3] == 'lock': fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
    "signal.signal(signal.SIGUSR1, lambda *_: fcntl.flock(fd, fcntl.LOCK_UN))\n"
    "print('ready', flush=True)\n"
    "while True: time.sleep(600)\n"
)


def spawn_holder(
    inbox: Path,
    *,
    lock: bool = True,
    ignore_term: bool = False,
    own_session: bool = True,
    extra_argv: tuple[str, ...] = (),
) -> subprocess.Popen[str]:
    """A real process that opens ``inbox`` (and, with ``lock``, holds its flock) until killed.

    SIGUSR1 makes it release the lock (and live on); ``extra_argv`` lands on its
    command line (``("advance", ws, agent)`` makes it look like a driver).
    """
    inbox.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            HOLDER_CODE,
            str(inbox),
            "ignore" if ignore_term else "term",
            "lock" if lock else "open",
            *extra_argv,
        ],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=own_session,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Poll ``predicate`` with a generous timeout (a wait for a state, never a timing claim)."""
    poll(predicate, timeout=timeout, what=what)
