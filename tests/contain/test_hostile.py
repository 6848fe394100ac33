"""Hostile input: each case one clear line, exit 1 (usage 2), nothing written outside the
workspace, nothing lost (R-ID-3, R-ID-7, R-ID-8, R-LOCK-4, R-STEP-5, R-STEP-6, R-DEP-6, R-WS-7)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.runners import one_line, run_cli_bytes
from tests.support.scenarios import World, make_world
from tests.support.snapshots import snapshot_with_mtimes
from tests.support.waits import wait_quiescent

HOSTILE_IDS = ["..", "a/b", "/etc", "../outside", "a\nb", "a\x01b", ".x", "x" * 300, "x" * 10_000]


def _quiet_world(tmp_path: Path) -> tuple[World, dict[str, object]]:
    world = make_world(tmp_path)
    return world, snapshot_with_mtimes(tmp_path)


@pytest.mark.parametrize("bad", HOSTILE_IDS, ids=range(len(HOSTILE_IDS)))
def test_r_id_3_hostile_ids_are_one_line_and_write_nothing(tmp_path: Path, bad: str) -> None:
    world, before = _quiet_world(tmp_path)
    ws = str(world.ws.root)
    one_line(run_cli_bytes("message", ws, bad, "hi"), "message")
    one_line(run_cli_bytes("advance", ws, bad), "advance")
    one_line(run_cli_bytes("log", ws, bad), "log")
    one_line(run_cli_bytes("dispatch", ws, bad, "goal"), "dispatch")
    assert snapshot_with_mtimes(tmp_path) == before


def test_r_cli_2_a_leading_dash_is_a_usage_error(tmp_path: Path) -> None:
    world, before = _quiet_world(tmp_path)
    proc = run_cli_bytes("message", str(world.ws.root), "-x", "hi")
    assert proc.returncode == 2 and proc.stdout == b""
    assert snapshot_with_mtimes(tmp_path) == before


HOSTILE_NAMES = ["..", "a/b", "/abs", "a\nb", "a\x01b", "a\x7fb", "-x", ".x", "a b", "n" * 65,
                 "n" * 300, "n" * 10_000]  # fmt: skip


@pytest.mark.parametrize("bad", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_r_id_8_hostile_names_are_refused_before_anything_is_created(
    tmp_path: Path, bad: str
) -> None:
    world, before = _quiet_world(tmp_path)
    ws = str(world.ws.root)
    line = one_line(run_cli_bytes("prompt", ws, "hi", f"--name={bad}"), "prompt")
    one_line(run_cli_bytes("dispatch", ws, world.root, "goal", f"--name={bad}"), "dispatch")
    assert "agent name" in line and "\n" not in line
    assert snapshot_with_mtimes(tmp_path) == before


def test_r_id_8_a_name_of_the_maximum_length_is_accepted(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    proc = run_cli_bytes("prompt", str(world.ws.root), "hi", "--name", "n" * 64)
    assert proc.returncode == 0, proc.stderr
    wait_quiescent(world.ws)


@pytest.mark.parametrize("sender", ["../x", "a/b", "a\nb", ".x", "s" * 300])
def test_r_id_7_hostile_senders_leave_no_message_and_no_temp(tmp_path: Path, sender: str) -> None:
    world, before = _quiet_world(tmp_path)
    proc = run_cli_bytes(
        "message", str(world.ws.root), world.root, "hi", env={"LERNIE_CONV_BRANCH": sender}
    )
    one_line(proc, "message")
    assert snapshot_with_mtimes(tmp_path)["contents"] == before["contents"]  # type: ignore[index]


def _pending_message(world: World) -> None:
    from lernie_ref.substrate.lock import try_acquire

    lock = try_acquire(world.ws.inbox_dir(world.root))
    assert lock is not None
    try:
        assert run_cli_bytes("message", str(world.ws.root), world.root, "keep me").returncode == 0
    finally:
        lock.release()


def _still_pending(world: World) -> bool:
    box = world.ws.inbox_dir(world.root)
    return any(name.startswith("user-") and name.endswith(".md") for name in os.listdir(box))


def test_r_drain_7_a_directory_or_a_fifo_under_a_deposit_name_stops_the_drain_cleanly(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    box = world.ws.inbox_dir(world.root)
    (box / "user-007.md").mkdir()
    assert "not a regular file" in one_line(
        run_cli_bytes("advance", str(world.ws.root), world.root), "advance"
    )
    os.rmdir(box / "user-007.md")
    os.mkfifo(box / "user-007.md")  # reading it would block for ever
    assert "not a regular file" in one_line(
        run_cli_bytes("advance", str(world.ws.root), world.root), "advance"
    )
    assert (box / "user-007.md").exists()


def test_r_tr_3_a_directory_where_staging_json_belongs_fails_the_hop_and_loses_nothing(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    staging = world.ws.steps_dir(world.root) / "staging.json"
    staging.mkdir()
    _pending_message(world)
    one_line(run_cli_bytes("advance", str(world.ws.root), world.root), "advance")
    staging.rmdir()
    assert run_cli_bytes("advance", str(world.ws.root), world.root).returncode == 0
    wait_quiescent(world.ws)
    assert "keep me" in run_cli_bytes("log", str(world.ws.root), world.root).stdout.decode()


@pytest.mark.parametrize(
    "raw", ["garbage", "", "99999", "2147483648", "wrong-file"], ids=lambda r: r or "empty"
)
def test_r_lock_4_a_bad_lernie_lock_fd_declines_the_hop(tmp_path: Path, raw: str) -> None:
    world = make_world(tmp_path)
    _pending_message(world)
    fds: tuple[int, ...] = ()
    if raw == "wrong-file":
        fd = os.open(tmp_path / "outside", os.O_RDONLY)
        fds, raw = (fd,), str(fd)
    proc = run_cli_bytes(
        "advance", str(world.ws.root), world.root, env={"LERNIE_LOCK_FD": raw}, pass_fds=fds
    )
    assert "adopt LERNIE_LOCK_FD lease" in one_line(proc, "advance")
    assert _still_pending(world)


CONFIGS = {
    "wrong type": b'step_budget = "many"\n',
    "unknown key": b'model = "scripted"\nshell = "rm -rf /"\n',
    "missing command": b'model = "command"\nmodel_command = "/nonexistent/model"\n',
    "not toml": b"model = \n[[[\n",
    "binary": b"\xff\xfe\x00garbage",
}


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_r_step_6_a_hostile_lernie_toml_fails_the_hop_with_one_line(
    tmp_path: Path, case: str
) -> None:
    world = make_world(tmp_path)
    _pending_message(world)  # before: `lernie message` refuses a bad configuration (R-CLI-8)
    (world.ws.root / "lernie.toml").write_bytes(CONFIGS[case])
    one_line(run_cli_bytes("advance", str(world.ws.root), world.root), "advance")
    assert _still_pending(world) or case == "missing command"
    assert snapshot_with_mtimes(world.outside)["contents"] == {}  # type: ignore[index]


def test_r_step_6_a_directory_as_lernie_toml_is_one_line(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    _pending_message(world)  # before: `lernie message` refuses a bad configuration (R-CLI-8)
    os.unlink(world.ws.root / "lernie.toml")
    (world.ws.root / "lernie.toml").mkdir()
    proc = run_cli_bytes("advance", str(world.ws.root), world.root)
    assert "lernie.toml" in one_line(proc, "advance")
    assert _still_pending(world)


def _model_saying(tmp_path: Path, reply: bytes) -> dict[str, str]:
    out = tmp_path / "reply.json"
    out.write_bytes(reply)
    script = tmp_path / "model.py"
    script.write_text(  # the hostile reply once, to the first prompt; then a plain answer
        "#!/usr/bin/env python3\nimport json, sys\n"
        "request = json.load(sys.stdin)\n"
        "if len(request['messages']) == 3 and '-' not in request['agent'][17:]:\n"
        f"    sys.stdout.buffer.write(open({str(out)!r}, 'rb').read())\n"
        "else:\n"
        "    print(json.dumps({'content': [{'type': 'text', 'text': 'done'}]}))\n"
    )
    script.chmod(0o755)
    return {"LERNIE_MODEL": "command", "LERNIE_MODEL_COMMAND": str(script)}


def _tool_reply(name: str, tool_input: object) -> bytes:
    block = {"type": "tool_use", "id": "t1", "name": name, "input": tool_input}
    return json.dumps({"content": [block]}).encode()


@pytest.mark.parametrize(
    "name,tool_input",
    [
        ("message", {"agent": "/etc/passwd", "content": "x"}),
        ("message", {"agent": "../../outside", "content": "x"}),
        ("dispatch", {"goal": "g", "name": "../../outside"}),
        ("message", {"agent": "x", "content": "y", "path": "/etc/shadow"}),
    ],
)
def test_r_step_7_a_tool_use_naming_a_path_is_an_error_result(
    tmp_path: Path, name: str, tool_input: object
) -> None:
    world = make_world(tmp_path)
    env = _model_saying(tmp_path, _tool_reply(name, tool_input))
    _pending_message(world)
    before = snapshot_with_mtimes(world.outside)
    run_cli_bytes("advance", str(world.ws.root), world.root, env=env)
    wait_quiescent(world.ws)
    tool = sorted((world.ws.worktree(world.root) / "messages").glob("*-tool.json"))[0]
    assert json.loads(tool.read_bytes())[0]["is_error"] is True
    assert snapshot_with_mtimes(world.outside) == before


def test_r_step_6_a_deeply_nested_tool_input_fails_the_hop_with_one_line(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    nested = (
        b'{"content":[{"type":"tool_use","id":"t1","name":"message","input":'
        + (b'{"a":' * 100_000)
        + b"1"
        + b"}" * 100_000
        + b"}]}"
    )
    env = _model_saying(tmp_path, nested)
    _pending_message(world)
    line = one_line(run_cli_bytes("advance", str(world.ws.root), world.root, env=env), "advance")
    assert "nested deeper than 128" in line


def test_r_step_7_a_huge_tool_input_is_delivered_whole(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    content = "z" * (8 * 1024 * 1024)
    env = _model_saying(tmp_path, _tool_reply("message", {"agent": "kid", "content": content}))
    _pending_message(world)
    run_cli_bytes("advance", str(world.ws.root), world.root, env=env)
    wait_quiescent(world.ws)
    delivered = [p.read_text() for p in (world.ws.worktree(world.child) / "messages").glob("*.md")]
    assert any(text.endswith("\n---\n" + content) for text in delivered)


# ------------------------------------------------------------------ a full disk


def _small_disk(tmp_path: Path) -> Path:
    mount = tmp_path / "disk"
    mount.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here: " + proc.stderr.decode().strip())
    return mount


def _fill(mount: Path, leave: int) -> Path:
    filler = mount / "filler"
    free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
    with open(filler, "ab") as handle:
        handle.write(b"\0" * max(free - leave, 0))
    return filler


def test_r_dep_6_a_full_disk_during_deposit_delivery_and_commit_loses_nothing(
    tmp_path: Path,
) -> None:
    mount = _small_disk(tmp_path)
    try:
        world = make_world(mount)
        ws = str(world.ws.root)
        box = world.ws.inbox_dir(world.root)
        names = set(os.listdir(box))
        filler = _fill(mount, 64 * 1024)
        # deposit: content larger than what is left → refused, no temp, no half message
        big = b"b" * (512 * 1024)
        assert "No space left" in one_line(
            run_cli_bytes("message", ws, world.root, "-", stdin=big), "message"
        )
        assert set(os.listdir(box)) == names
        os.unlink(filler)
        # delivery and commit with no space: the hop fails, the message is never lost
        _pending_message(world)
        filler = _fill(mount, 0)
        proc = run_cli_bytes("advance", ws, world.root)
        assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
        os.unlink(filler)
        assert run_cli_bytes("advance", ws, world.root).returncode == 0
        wait_quiescent(world.ws)
        log = run_cli_bytes("log", ws, world.root).stdout.decode()
        assert log.count(" user\n    keep me\n") == 1
        assert not [n for n in os.listdir(box) if n.endswith(".tmp")]
    finally:
        wait_quiescent(mount)
        subprocess.run(["umount", "-l", str(mount)], check=False)
