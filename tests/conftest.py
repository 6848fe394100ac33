"""Shared fixtures (fresh workspaces, a fixed clock) and the ``slow`` marker's switch.

Every helper a test imports lives in :mod:`tests.support`; this file holds only what
pytest itself must find here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

from lernie_ref.core.clock import FixedClock
from lernie_ref.substrate.workspace import Workspace, create_workspace
from tests.support.workspaces import FIXTURE_NS

# No Hypothesis example has a deadline: a test asserts outcomes, never how long an example
# took, and on a busy machine (the suite runs beside other work) a deadline is a flake.
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")


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
