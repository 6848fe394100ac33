"""Fault-test fixtures: no process outlives its test (slow runs: see tests/conftest.py)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import processes_mentioning


@pytest.fixture(autouse=True)
def _reap_own_processes(tmp_path: Path) -> Iterator[None]:
    yield
    # Passing tests already waited for their processes; this cleans up after a failure.
    for pid in processes_mentioning(str(tmp_path)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
