"""Conformance-kit fixtures: no detached driver outlives its test, even a failing one."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import processes_mentioning


@pytest.fixture(autouse=True)
def _reap_own_drivers(tmp_path: Path) -> Iterator[None]:
    yield
    for pid in processes_mentioning(str(tmp_path)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
