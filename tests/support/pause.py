"""A production driver paused at a protocol point and killed there with a real SIGKILL.

A driver (``lernie advance``, started detached by the production launcher) is paused at
a chosen protocol point by a test harness hook, a ``sitecustomize`` on the driver's
``PYTHONPATH`` that wraps the actor runner: at the point it tells the test its pid
through one FIFO and blocks reading another that nobody ever writes. The test then
checks that the paused driver holds the agent's executor lock, kills it with SIGKILL and
reaps it. Exec'd successor hops load the hook afresh, so a point of a later hop of the
chain is reached too (``detail`` tells the passes apart).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from lernie_ref.core.ids import require_agent_id
from lernie_ref.substrate.launcher import AdvanceLauncher
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import poll

HOOK = '''\
"""Test harness hook (generated): pause one driver at one protocol point."""
import json, os

def _install():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "pause.json")) as f:
        cfg = json.load(f)
    with open("/proc/self/cmdline", "rb") as f:
        argv = f.read().split(b"\\0")
    if b"advance" not in argv or cfg["agent"].encode() not in argv:
        return
    import lernie_ref.core.actor as actor_module

    depth = [0]

    def pause(passed):
        fd = os.open(os.path.join(here, "reached"), os.O_WRONLY)
        os.write(fd, f"{os.getpid()} {passed.name} {passed.detail}\\n".encode())
        os.close(fd)
        fd = os.open(os.path.join(here, "resume"), os.O_RDONLY)
        os.read(fd, 1)  # nobody writes: the driver waits here for its SIGKILL

    def run(actor):
        depth[0] += 1
        try:
            while True:
                try:
                    passed = next(actor)
                except StopIteration as stop:
                    return stop.value
                if depth[0] == 1 and passed.name == cfg["point"] and (
                        cfg["detail"] is None or passed.detail == cfg["detail"]):
                    pause(passed)
        finally:
            depth[0] -= 1

    actor_module.run = run

_install()
'''


def lock_held(ws: Workspace, agent: str) -> bool:
    """Whether someone holds ``agent``'s executor lock (a try-lock of a fresh description)."""
    fd = os.open(ws.inbox_dir(require_agent_id(agent)), os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def sigkill_at(ws: Workspace, agent: str, point: str, detail: str | None, hook: Path,
               monkeypatch: pytest.MonkeyPatch) -> None:
    """Launch ``agent``'s real driver, wait for it at ``point`` (whose detail is ``detail``,
    unless ``None``), check it holds the executor lock there, SIGKILL it and reap it.
    ``hook`` is a directory that does not exist yet; ``PYTHONPATH`` is set while the
    driver starts and removed again."""
    aid = require_agent_id(agent)  # a test's id enters here (R-ID-9)
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    (hook / "pause.json").write_text(json.dumps(
        {"agent": agent, "point": point, "detail": detail}))
    os.mkfifo(hook / "reached")
    os.mkfifo(hook / "resume")
    reached = os.open(hook / "reached", os.O_RDONLY | os.O_NONBLOCK)
    got = b""
    pid = 0
    try:
        with monkeypatch.context() as env:
            env.setenv("PYTHONPATH", str(hook))
            AdvanceLauncher([sys.executable, "-m", "lernie_ref"]).launch(ws.root, aid)

        def arrived() -> bool:
            nonlocal got
            with contextlib.suppress(BlockingIOError):
                got += os.read(reached, 200)
            return got.endswith(b"\n")

        log = ws.driver_log(aid)
        try:
            poll(arrived, f"the driver to reach {point}", timeout=60)
        except AssertionError:
            raise AssertionError(f"driver never paused; its log:\n{log.read_text()}") from None
        pid_text, name, *_ = got.decode().split(" ")
        pid = int(pid_text)
        assert name == point
        assert lock_held(ws, agent), "the paused driver must hold the executor lock"
    finally:
        os.close(reached)
        if pid:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
