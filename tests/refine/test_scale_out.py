"""Scale-out of the refinement machine on existing engines (issue #11 (6)).

- ``TestRefinementMachine`` is the machine as a pytest-collected Hypothesis test
  (``slow``: CI runs the machine through ``lernie-check refine``), so pytest-xdist
  (``pytest -n 2 -m slow tests/refine``) spreads it with the other tests and HypoFuzz
  (``hypothesis fuzz -- tests/refine/test_scale_out.py -m slow``) fuzzes it for as
  long as it is left running. ``LERNIE_REFINE_BUG=<name>`` (read by this test module
  only) patches one seeded bug into each of its examples, for a campaign that should
  find it.
- A shared example database: a failure one run finds is saved, and a later run with
  another seed replays it first. Hypothesis's directory database always; its Redis
  database when a ``redis-server`` binary and the ``redis`` package are there (a
  server is started on a free port for the test and shut down after it), else the
  test is skipped saying which is missing.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from lernie_stateful.refine_cli import run
from lernie_stateful.refinement import RefinementMachine
from lernie_stateful.seeded_bugs import BY_NAME

from lernie_ref.testing import poll

CAMPAIGN_BUG = os.environ.get("LERNIE_REFINE_BUG", "")


class Campaign(RefinementMachine):
    """The refinement machine, with the seeded bug ``LERNIE_REFINE_BUG`` (if set) installed
    in for the life of each example."""

    def __init__(self) -> None:
        self._patch = contextlib.ExitStack()
        # the drivers' operator notices are the driver log's, not the campaign's output
        self._patch.enter_context(contextlib.redirect_stderr(io.StringIO()))
        if CAMPAIGN_BUG:
            self._patch.enter_context(BY_NAME[CAMPAIGN_BUG].apply())
        super().__init__()

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            self._patch.close()


TestRefinementMachine = Campaign.TestCase
TestRefinementMachine.settings = settings(
    max_examples=20, stateful_step_count=40, deadline=None,
    suppress_health_check=list(HealthCheck))
TestRefinementMachine.pytestmark = [pytest.mark.slow]  # a campaign target; CI runs refine

BUG = "no-recipient-revival"
"""A bug the machine finds within a few examples at any seed (so the test is short)."""


def _shares_a_failure(database: str) -> None:
    first = run(examples=40, seed=3, steps=20, bug=BY_NAME[BUG], shrink=0, database=database)
    assert first.failed and first.first_at > 1
    again = run(examples=40, seed=4, steps=20, bug=BY_NAME[BUG], shrink=0, database=database)
    assert again.failed
    assert again.first_at == 1  # the saved failure, replayed before anything new


def test_a_directory_database_replays_a_failure_found_by_another_run(tmp_path: Path) -> None:
    _shares_a_failure(str(tmp_path / "examples"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("no redis-server binary on PATH (Debian: apt-get install redis-server)")
    try:
        import redis
    except ImportError:
        pytest.skip("the redis package is not installed (pip install redis)")
    port = _free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port)

        def up() -> bool:
            if proc.poll() is not None:
                pytest.skip(f"redis-server did not start (exit {proc.returncode})")
            try:
                return bool(client.ping())
            except redis.ConnectionError:
                return False

        poll(up, "redis-server to answer", timeout=30)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_redis_database_replays_a_failure_found_by_another_run(redis_url: str) -> None:
    _shares_a_failure(redis_url)
