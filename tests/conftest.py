"""Shared fixtures: fresh workspaces, a fixed clock, the real CLI, quiescence.

Keep this small; area-specific helpers live next to their tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import settings

from lernie_ref.core.clock import FixedClock
from lernie_ref.substrate.workspace import Workspace, create_workspace

# No Hypothesis example has a deadline: a test asserts outcomes, never how long an example
# took, and on a busy machine (the suite runs beside other work) a deadline is a flake.
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")

# 2026-07-11T00:00:00Z, the instant of upstream's deposit fixtures.
FIXTURE_NS = 1_783_728_000 * 1_000_000_000


@pytest.fixture
def fixed_clock() -> FixedClock:
    """A clock standing at 2026-07-11T00:00:00Z that advances 1 µs per read."""
    return FixedClock(FIXTURE_NS, tick_ns=1_000)


@pytest.fixture
def make_ws(tmp_path: Path) -> Callable[..., Workspace]:
    """Factory: ``make_ws("name")`` creates a fresh workspace under ``tmp_path``."""
    counter = iter(range(1_000_000))

    def make(name: str | None = None) -> Workspace:
        return create_workspace(tmp_path / (name or f"ws{next(counter)}"))

    return make


@pytest.fixture
def ws(make_ws: Callable[..., Workspace]) -> Workspace:
    """A fresh, empty workspace."""
    return make_ws("ws")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow",
        action="store_true",
        default=False,
        help="also run the long variants (tests marked slow)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked ``slow`` runs only with ``--run-slow`` or when ``-m`` names the marker;
    every slow test has a CI-sized sibling that runs by default."""
    if config.getoption("--run-slow") or "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="long run: select it with --run-slow or -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def run_cli(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    prefix: Sequence[str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m lernie_ref <args>`` (or ``<prefix> <args>``) as a real process."""
    full_env = dict(os.environ)
    full_env.pop("LERNIE_CONV_BRANCH", None)
    full_env.pop("LERNIE_LOCK_FD", None)
    if env:
        full_env.update(env)
    argv = [*(prefix or [sys.executable, "-m", "lernie_ref"]), *args]
    return subprocess.run(
        argv, capture_output=True, text=True, env=full_env, timeout=timeout, check=False
    )


def processes_mentioning(needle: str) -> list[int]:
    """Pids (other than ours) whose command line contains ``needle``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if needle.encode() in cmdline:
            found.append(int(entry))
    return found


def wait_quiescent(ws: Workspace | Path, timeout: float = 120.0) -> None:
    """Wait until no process names the workspace on its command line (launched drivers done).

    Polls with a generous timeout; never asserts on timing. The workspace must look quiet
    at two polls in a row: a driver that ``lernie message`` has just spawned can still be
    inside ``execve``, where its command line reads empty, when the command returns.
    """
    root = str(Path(ws.root if isinstance(ws, Workspace) else ws))
    deadline = time.monotonic() + timeout
    calm = 0
    while calm < 2:
        if processes_mentioning(root):
            calm = 0
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"processes still running on {root}: {processes_mentioning(root)}"
                )
        else:
            calm += 1
        if calm < 2:
            time.sleep(0.05)
