"""The production launcher for real: session, stdio, driver.log, scrubbed baton (R-LAUNCH-2)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from lernie_ref.core.errors import LaunchError
from lernie_ref.inbox import AdvanceLauncher
from lernie_ref.substrate import launcher

DRIVER = r"""
import json, os, sys
from pathlib import Path
verb, ws, agent = sys.argv[1:4]
null = os.stat("/dev/null")
def is_null(fd):
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino, st.st_rdev) == (null.st_dev, null.st_ino, null.st_rdev)
report = {
    "argv": sys.argv[1:],
    "own_session": os.getsid(0) == os.getpid(),
    "group_leader": os.getpgid(0) == os.getpid(),
    "lock_fd_env": os.environ.get("LERNIE_LOCK_FD"),
    "marker_env": os.environ.get("LAUNCH_TEST_MARKER"),
    "stdin_null": is_null(0),
    "stdout_null": is_null(1),
    "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),
}
sys.stderr.write(f"driver for {agent} says hello\n")
sys.stderr.flush()
tmp = Path(ws).parent / f".report-{os.getpid()}"
tmp.write_text(json.dumps(report))
tmp.rename(Path(ws).parent / f"report-{os.getpid()}.json")
"""


def _wait_reports(where: Path, count: int) -> list[dict[str, object]]:
    deadline = time.monotonic() + 120
    while True:
        found = sorted(where.glob("report-*.json"))
        if len(found) >= count:
            return [json.loads(p.read_text()) for p in found]
        if time.monotonic() > deadline:
            raise AssertionError(f"only {len(found)} of {count} launched drivers reported")
        time.sleep(0.02)


def test_r_launch_2_detached_driver_for_real(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("LERNIE_LOCK_FD", "3")
    monkeypatch.setenv("LAUNCH_TEST_MARKER", "inherited")
    launcher = AdvanceLauncher(argv_prefix=[sys.executable, str(script)])
    launcher.launch(ws, "A-1")
    launcher.launch(ws, "A-1")
    reports = _wait_reports(tmp_path, 2)
    for report in reports:
        assert report["argv"] == ["advance", str(ws), "A-1"]
        assert report["own_session"] is True
        assert report["group_leader"] is True
        assert report["lock_fd_env"] is None
        assert report["marker_env"] == "inherited"
        assert report["stdin_null"] is True and report["stdout_null"] is True
        fds = report["fds"]
        assert isinstance(fds, list) and [f for f in fds if f > 3] == []  # nothing else leaked
    log = ws / "steps" / "A-1" / "driver.log"
    assert log.read_text() == "driver for A-1 says hello\n" * 2  # appended, never truncated


def test_r_launch_2_a_log_that_cannot_be_opened_declines_the_launch(tmp_path: Path) -> None:
    (tmp_path / "steps" / "A-1" / "driver.log").mkdir(parents=True)
    before = {id(p) for p in launcher._LAUNCHED}
    with pytest.raises(LaunchError) as caught:
        AdvanceLauncher(argv_prefix=[sys.executable, "-c", "pass"]).launch(tmp_path, "A-1")
    assert str(caught.value) == "Is a directory (os error 21)"
    assert {id(p) for p in launcher._LAUNCHED} <= before  # nothing was spawned


def test_r_launch_2_a_program_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LaunchError) as caught:
        AdvanceLauncher(argv_prefix=[str(tmp_path / "no-such-lernie")]).launch(tmp_path, "A-1")
    assert str(caught.value) == "No such file or directory (os error 2)"
    assert (tmp_path / "steps" / "A-1" / "driver.log").is_file()


def test_default_target_is_this_interpreter_running_the_package() -> None:
    assert AdvanceLauncher().argv_prefix == [sys.executable, "-m", "lernie_ref"]
    assert os.path.isabs(sys.executable)
