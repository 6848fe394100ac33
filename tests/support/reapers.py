"""No process outlives its test, even a failing one.

A folder whose tests start detached processes turns the reaper on in its ``conftest.py``
with ``from tests.support.reapers import reap_own_processes  # noqa: F401``.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import processes_naming


@pytest.fixture(autouse=True)
def reap_own_processes(tmp_path: Path) -> Iterator[None]:
    """After the test, SIGKILL every process naming its ``tmp_path``.

    Passing tests already waited for their processes; this cleans up after a failure.
    """
    yield
    for pid in processes_naming(str(tmp_path)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
