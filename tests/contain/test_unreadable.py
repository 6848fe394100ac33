"""Unreadable files and directories (issue 14, hostile input): run as an unprivileged user,
each case is exit 1 with one line naming the path, nothing written outside the workspace,
nothing lost; once the permissions are back the next touch delivers everything in order
(R-WS-7, R-DRAIN-7, R-STEP-5, R-STEP-6, R-STATUS-1, D-25).

Root reads through ``chmod 000``, so the verbs run as uid/gid 65534 on a workspace that user
owns; the test skips (with the reason) when it cannot switch to that user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lernie_ref.substrate.lock import try_acquire
from tests.support.runners import one_line
from tests.support.scenarios import World, make_world
from tests.support.snapshots import snapshot_with_mtimes
from tests.support.waits import wait_quiescent

NOBODY = 65534
_CHECKOUT = Path(__file__).resolve().parents[2]
SOURCE = os.pathsep.join(str(p) for p in (_CHECKOUT, _CHECKOUT / "spec", _CHECKOUT / "stateful"))
"""The package and the model it imports its spellings from (``lernie_spec``), uninstalled."""


def _drop() -> None:
    os.setgid(NOBODY)
    os.setgroups([])
    os.setuid(NOBODY)


def _python_for_nobody(home: Path) -> str:
    """An interpreter the unprivileged user can run and that imports this source tree."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    paths = [os.environ.get("PATH", ""), os.defpath]  # PATH may start with a private shim
    candidates: list[str | None] = [sys.executable]
    candidates += [shutil.which(n, path=p) for p in paths for n in (version, "python3")]
    why = "no candidate interpreter"
    for exe in dict.fromkeys(c for c in candidates if c):
        try:
            proc = subprocess.run(
                [exe, "-c", "import sys, lernie_ref; assert sys.version_info >= (3, 11)"],
                env={"PATH": os.environ.get("PATH", ""), "HOME": str(home), "PYTHONPATH": SOURCE},
                preexec_fn=_drop,
                capture_output=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            why = f"{exe}: {exc}"
            continue
        if proc.returncode == 0:
            return exe
        why = f"{exe}: {proc.stderr.decode(errors='replace').strip().splitlines()[-1:]}"
    pytest.skip(f"no Python the unprivileged user can run: {why}")


@dataclass
class Nobody:
    world: World
    base: Path
    home: Path
    python: str

    @property
    def ws(self) -> str:
        return str(self.world.ws.root)

    def cli(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LERNIE_")}
        env.update(HOME=str(self.home), PYTHONPATH=SOURCE)
        return subprocess.run(
            [self.python, "-m", "lernie_ref", *args],
            input=b"",
            capture_output=True,
            env=env,
            preexec_fn=_drop,
            timeout=120,
            check=False,
        )

    def pending(self) -> list[str]:
        box = self.world.ws.inbox_dir(self.world.root)
        return sorted(n for n in os.listdir(box) if n.endswith(".md"))

    def park(self, text: str) -> None:
        """A message left pending: deposited while the test holds the root's lock."""
        lock = try_acquire(self.world.ws.inbox_dir(self.world.root))
        assert lock is not None
        try:
            assert self.cli("message", self.ws, self.world.root, text).returncode == 0
        finally:
            lock.release()

    def user_entries(self) -> list[str]:
        log = self.cli("log", self.ws, self.world.root)
        assert log.returncode == 0, log.stderr
        lines = log.stdout.decode().splitlines()
        return [lines[i + 1].strip() for i, line in enumerate(lines) if line.endswith(" user")]

    def settle(self) -> None:
        wait_quiescent(self.world.ws)


@pytest.fixture
def nobody() -> Iterator[Nobody]:
    if os.geteuid() != 0:
        pytest.skip("needs root to run the verbs as another user (chmod 000 binds only non-root)")
    # pytest's own temp directory is private to root; this one the other user can reach
    base = Path(tempfile.mkdtemp(prefix="lernie-unread-"))
    try:
        base.chmod(0o755)
        home = base / "home"
        home.mkdir()
        world = make_world(base)
        for top, dirs, files in os.walk(base):
            os.lchown(top, NOBODY, NOBODY)
            for name in dirs + files:
                os.lchown(os.path.join(top, name), NOBODY, NOBODY)
        try:
            python = _python_for_nobody(home)
        except PermissionError as exc:  # setuid refused (a restricted container)
            pytest.skip(f"cannot switch to uid {NOBODY}: {exc}")
        yield Nobody(world, base, home, python)
    finally:
        wait_quiescent(base)
        for top, dirs, _ in os.walk(base):
            for name in dirs:
                os.chmod(os.path.join(top, name), 0o755)
        shutil.rmtree(base, ignore_errors=True)


def _outside_untouched(nb: Nobody, before: dict[str, object]) -> None:
    assert snapshot_with_mtimes(nb.world.outside) == before


def test_r_drain_7_an_unreadable_deposit_stops_the_drain_and_loses_nothing(nobody: Nobody) -> None:
    nb, before = nobody, snapshot_with_mtimes(nobody.world.outside)
    nb.park("first")
    nb.park("second")
    first, second = nb.pending()
    box = nb.world.ws.inbox_dir(nb.world.root)
    held = (box / first).read_bytes()
    (box / first).chmod(0)
    line = one_line(nb.cli("advance", nb.ws, nb.world.root), "advance")
    assert str(box / first) in line and "Permission denied" in line
    assert nb.pending() == [first, second]  # the later one was not delivered past it
    assert (box / first).read_bytes() == held
    assert "second" not in nb.user_entries()
    # a driver meets the same: one line in its driver log, and still nothing out of order
    nb.park("third")
    assert nb.cli("message", nb.ws, nb.world.root, "fourth").returncode == 0
    nb.settle()
    driver_log = nb.world.ws.steps_dir(nb.world.root) / "driver.log"
    assert f"read deposit {box / first}: Permission denied" in driver_log.read_text()
    assert len(nb.pending()) == 4
    _outside_untouched(nb, before)
    (box / first).chmod(0o644)
    assert nb.cli("advance", nb.ws, nb.world.root).returncode == 0
    nb.settle()
    assert nb.pending() == []
    assert nb.user_entries()[-4:] == ["first", "second", "third", "fourth"]


def test_r_ws_7_an_unreadable_inbox_refuses_message_and_scan(nobody: Nobody) -> None:
    nb, before = nobody, snapshot_with_mtimes(nobody.world.outside)
    box = nb.world.ws.inbox_dir(nb.world.root)
    box.chmod(0)
    line = one_line(nb.cli("message", nb.ws, nb.world.root, "lost?"), "message")
    assert str(box) in line and "Permission denied" in line
    line = one_line(nb.cli("scan", nb.ws), "scan")
    assert str(box) in line and "Permission denied" in line
    box.chmod(0o755)
    assert nb.pending() == []
    _outside_untouched(nb, before)
    assert nb.cli("message", nb.ws, nb.world.root, "after").returncode == 0
    nb.settle()
    assert nb.user_entries()[-1] == "after" and nb.pending() == []


def test_r_step_5_an_unreadable_messages_dir_fails_the_hop_and_status_shows_it(
    nobody: Nobody,
) -> None:
    nb, before = nobody, snapshot_with_mtimes(nobody.world.outside)
    messages = nb.world.ws.worktree(nb.world.root) / "messages"
    nb.park("held")
    messages.chmod(0)
    line = one_line(nb.cli("advance", nb.ws, nb.world.root), "advance")
    assert line.startswith(f"lernie advance: i/o writing conversation artifact: {messages}: ")
    assert "Permission denied" in line
    status = nb.cli("status", nb.ws)  # status reports, it does not fail: ENTRIES unknown
    assert status.returncode == 0, status.stderr
    hint = status.stderr.decode().splitlines()  # R-STATUS-5: its mail waits for a driver
    assert len(hint) == 1 and hint[0].startswith(
        f"lernie status: {nb.world.root} has 1 undelivered message(s) and no driver"
    )
    row = next(r for r in status.stdout.decode().splitlines() if r.startswith(nb.world.root + " "))
    assert row.split()[-1] == "?" and " 1 " in row
    assert nb.pending() != []
    messages.chmod(0o755)
    _outside_untouched(nb, before)
    assert nb.cli("advance", nb.ws, nb.world.root).returncode == 0
    nb.settle()
    assert nb.user_entries()[-1] == "held" and nb.pending() == []


def test_r_step_6_an_unreadable_lernie_toml_fails_the_hop_with_one_line(nobody: Nobody) -> None:
    nb, before = nobody, snapshot_with_mtimes(nobody.world.outside)
    toml = nb.world.ws.root / "lernie.toml"
    nb.park("wait for config")
    toml.chmod(0)
    line = one_line(nb.cli("advance", nb.ws, nb.world.root), "advance")
    assert line == f"lernie advance: read {toml}: Permission denied"
    assert len(nb.pending()) == 1
    toml.chmod(0o644)
    _outside_untouched(nb, before)
    assert nb.cli("advance", nb.ws, nb.world.root).returncode == 0
    nb.settle()
    assert nb.user_entries()[-1] == "wait for config" and nb.pending() == []
