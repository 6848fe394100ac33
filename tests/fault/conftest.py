"""Fault-test fixtures: long runs only on request, and no process outlives its test.

A test marked ``slow`` runs only when the marker is selected (``pytest -m slow``);
every slow test has a CI-sized sibling that runs by default.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import processes_mentioning


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="long run: select it with -m slow")
    here = Path(__file__).parent
    for item in items:
        if "slow" in item.keywords and here in Path(str(item.fspath)).parents:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _reap_own_processes(tmp_path: Path) -> Iterator[None]:
    yield
    # Passing tests already waited for their processes; this cleans up after a failure.
    for pid in processes_mentioning(str(tmp_path)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
