"""The operator's day through the real ``lernie`` command: start, watch, message, Ctrl-C,
kill, recover, stop. Real processes, real signals, real model commands and a real socket.

- R-CLI-8: ``prompt``, ``dispatch`` and ``message`` check what a driver will need before
  they write anything; a bad ``lernie.toml``, model, command or missing key is one line,
  exit 1, and the workspace is byte for byte what it was.
- R-LOG-2: ``--wait`` reports an agent that died (the driver log's line, exit 3) and a
  Ctrl-C (exit 130, no traceback, how to stop the agents); progress only on a terminal.
- R-STEP-9: an agent runs on the model it was started with, whoever drives it later.
- R-ID-6: every verb that takes an agent takes its name too.
- R-STATUS-5, R-SCAN-10: status and scan say why mail waits or a dead agent stays dead.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lernie_ref.core.sweep import revivals_record
from lernie_ref.inbox import AdvanceLauncher, RecordingLauncher, cli_prompt
from lernie_ref.operator.status import disk_advice, status
from lernie_ref.operator.wait import casualties, observe
from lernie_ref.operator.wait import wait_quiescent as wait_tree
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import poll
from tests.support.runners import run_cli
from tests.support.snapshots import tree_listing
from tests.support.waits import wait_quiescent

CLEAN = {"LERNIE_MODEL": "", "LERNIE_MODEL_COMMAND": "", "OPENAI_API_KEY": ""}
"""An environment choosing nothing (an empty variable counts as unset)."""


def _model(tmp_path: Path, name: str, body: str) -> Path:
    """An executable command model (``/bin/sh`` script)."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _command_env(model: Path, **extra: str) -> dict[str, str]:
    return {**CLEAN, "LERNIE_MODEL": "command", "LERNIE_MODEL_COMMAND": str(model), **extra}


def _refs(ws: Workspace) -> str:
    return ws.git.run(ws.repo_git, ["for-each-ref"]).stdout


def _model_entries(ws: Workspace, agent: str) -> list[str]:
    return sorted(n for n in os.listdir(ws.worktree(agent) / "messages") if n.endswith(".json"))


# ------------------------------------------------------------------ R-LOG-2: an honest --wait


def test_r_log_2_wait_reports_a_command_model_that_exits_3(ws: Workspace, tmp_path: Path) -> None:
    model = _model(tmp_path, "broken", 'echo "quota exceeded for this key" >&2\nexit 3\n')
    proc = run_cli(
        ["prompt", str(ws.root), "hello", "--wait", "--timeout", "120"], _command_env(model)
    )
    assert proc.returncode == 3, proc.stderr
    root = proc.stdout.strip()
    assert proc.stdout == root + "\n"  # the id, and no answer: the agent died
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"lernie prompt: {root} died: lernie advance: model command ")
    assert "exited with exit status: 3: quota exceeded for this key" in lines[0]
    assert str(ws.driver_log(root)) in lines[0]
    assert lines[-1].startswith(f"lernie prompt: 1 agent(s) of {root} died with work due")
    assert "Traceback" not in proc.stderr


def test_r_log_2_wait_reports_an_api_server_that_refuses_connections(ws: Workspace) -> None:
    pytest.importorskip("openai")
    with socket.socket() as bound:  # bound, never listening: every connection is refused
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        env = {
            **CLEAN,
            "LERNIE_MODEL": "openai",
            "OPENAI_API_KEY": "sk-test-not-a-real-key",
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "LERNIE_OPENAI_MAX_RETRIES": "0",
        }
        proc = run_cli(["prompt", str(ws.root), "hello", "--wait", "--timeout", "120"], env)
    assert proc.returncode == 3, proc.stderr
    root = proc.stdout.strip()
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"lernie prompt: {root} died: lernie advance: openai ")
    assert "Connection" in first
    assert "sk-test-not-a-real-key" not in proc.stderr


def test_r_log_2_wait_reports_a_model_call_that_timed_out(ws: Workspace, tmp_path: Path) -> None:
    model = _model(tmp_path, "hangs", "exec sleep 600\n")
    env = _command_env(model, LERNIE_MODEL_TIMEOUT="0.5")
    proc = run_cli(["prompt", str(ws.root), "hello", "--wait", "--timeout", "120"], env)
    assert proc.returncode == 3, proc.stderr
    assert "gave no answer within 0.5 s (model_timeout)" in proc.stderr.splitlines()[0]


def test_r_log_2_wait_still_answers_and_exits_0_when_all_is_well(ws: Workspace) -> None:
    proc = run_cli(["prompt", str(ws.root), "hello", "--wait"], CLEAN)
    assert proc.returncode == 0, proc.stderr
    root, answer = proc.stdout.splitlines()
    assert answer == "scripted reply to user: hello"
    assert [r.id for r in status(ws)] == [root]
    assert proc.stderr == ""  # no progress lines when stderr is not a terminal


def _as_a_terminals_foreground_job() -> None:
    """Ctrl-C's disposition as a shell gives a foreground command: the default. A suite
    started in the background of a non-interactive shell inherits SIGINT ignored, and an
    interpreter that starts with SIGINT ignored never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_r_log_2_ctrl_c_exits_130_quietly_and_the_agent_goes_on(ws: Workspace) -> None:
    env = {**os.environ, **CLEAN}
    env.pop("LERNIE_CONV_BRANCH", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lernie_ref", "prompt", str(ws.root), "@sleep 600", "--wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_as_a_terminals_foreground_job,
    )
    try:
        assert proc.stdout is not None
        root = proc.stdout.readline().strip()  # printed once the wait has begun
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert out == ""
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.splitlines() == [
        f"lernie prompt: interrupted; the agents of {root} go on without this command: "
        f"`lernie status {ws.root}` shows them, `lernie stop {ws.root} {root}` stops them"
    ]
    # the agent is still there to be stopped, by the command the line names
    poll(lambda: _live(ws, root), "the driver to hold its lock")
    stopped = run_cli(["stop", str(ws.root), root])
    assert stopped.returncode == 0, stopped.stderr
    wait_quiescent(ws)
    assert [r.last_epitaph for r in status(ws)] == ["stopped"]


def _live(ws: Workspace, agent: str) -> bool:
    return any(r.id == agent and r.live for r in status(ws))


def _read_until(fd: int, needle: bytes, limit: float = 60.0) -> bytes:
    seen = b""
    while needle not in seen:
        ready, _, _ = select.select([fd], [], [], limit)
        assert ready, f"no {needle!r} on the terminal; saw {seen!r}"
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    return seen


def test_r_log_2_progress_goes_to_stderr_on_a_terminal_only(ws: Workspace) -> None:
    master, slave = pty.openpty()
    env = {**os.environ, **CLEAN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lernie_ref", "prompt", str(ws.root), "@sleep 600", "--wait"],
        stdout=subprocess.PIPE,
        stderr=slave,
        text=True,
        env=env,
    )
    os.close(slave)
    try:
        assert proc.stdout is not None
        root = proc.stdout.readline().strip()
        seen = _read_until(master, b"tokens")
        assert f"waiting for {root}: running".encode() in seen and b"model calls" in seen
        poll(lambda: _live(ws, root), "the driver to hold its lock")
        assert run_cli(["stop", str(ws.root), root]).returncode == 0
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert proc.returncode == 0
    assert out == ""  # stopped: no final response, and no progress on stdout


# ------------------------------------------------------------------ R-CLI-8: fail fast


@pytest.fixture
def named(ws: Workspace) -> Iterator[str]:
    """A root named ``lead`` whose driver never ran (its mail waits)."""
    yield cli_prompt(ws, "first", "lead", RecordingLauncher())


BAD_FILES = {
    "unknown-key": 'modle = "command"\n',
    "syntax": 'model = "scripted\n',
    "type": 'step_budget = "ten"\n',
    "unknown-model": 'model = "gpt-5"\n',
    "no-command": 'model = "command"\n',
    "missing-command": 'model = "command"\nmodel_command = "/nonexistent/model --fast"\n',
    "relative-command": 'model = "command"\nmodel_command = "./model"\n',
    "missing-key": 'model = "openai"\n',
}


@pytest.mark.parametrize("verb", ["prompt", "dispatch", "message"])
@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_r_cli_8_a_bad_configuration_is_one_line_and_nothing_is_written(
    ws: Workspace, named: str, verb: str, case: str
) -> None:
    (ws.root / "lernie.toml").write_text(BAD_FILES[case])
    before = (tree_listing(ws.root), _refs(ws), sorted(os.listdir(ws.inbox_dir(named))))
    args = {
        "prompt": ["prompt", str(ws.root), "go"],
        "dispatch": ["dispatch", str(ws.root), named, "go"],
        "message": ["message", str(ws.root), named, "go"],
    }[verb]
    proc = run_cli(args, CLEAN)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(f"lernie {verb}: ")
    assert "Traceback" not in proc.stderr
    after = (tree_listing(ws.root), _refs(ws), sorted(os.listdir(ws.inbox_dir(named))))
    assert after == before


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"LERNIE_MODEL": "opneai"}, "LERNIE_MODEL: unknown model 'opneai'"),
        ({"LERNIE_MODEL": "anthropic"}, "`anthropic` needs an API key: set ANTHROPIC_API_KEY"),
        ({"LERNIE_MODEL": "command", "LERNIE_MODEL_COMMAND": "no-such-model-program"},
         "model command 'no-such-model-program' is not an executable on PATH"),
        ({"LERNIE_STEP_BUDGET": "0"}, "step_budget must be at least 1"),
    ],
)  # fmt: skip
def test_r_cli_8_a_bad_environment_is_refused_by_prompt_before_anything(
    ws: Workspace, env: dict[str, str], expected: str
) -> None:
    pytest.importorskip("anthropic")
    before = (tree_listing(ws.root), _refs(ws))
    proc = run_cli(["prompt", str(ws.root), "go"], {**CLEAN, "ANTHROPIC_API_KEY": "", **env})
    assert proc.returncode == 1
    assert proc.stderr.startswith("lernie prompt: ") and expected in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert (tree_listing(ws.root), _refs(ws)) == before


def test_r_cli_8_message_checks_the_recipients_recorded_model(
    ws: Workspace, tmp_path: Path
) -> None:
    """A root started on a command model that is gone since: the message is refused before
    anything is deposited, though this shell's own choice (scripted) would have passed."""
    model = _model(tmp_path, "model", 'echo \'[{"type":"text","text":"ok"}]\'\n')
    started = run_cli(
        ["prompt", str(ws.root), "hi", "--name", "lead", "--wait"], _command_env(model)
    )
    assert started.returncode == 0, started.stderr
    root = started.stdout.splitlines()[0]
    model.unlink()
    before = sorted(os.listdir(ws.inbox_dir(root)))
    proc = run_cli(["message", str(ws.root), "lead", "again"], CLEAN)
    assert proc.returncode == 1
    assert proc.stderr == f"lernie message: model command '{model}' does not exist\n"
    assert sorted(os.listdir(ws.inbox_dir(root))) == before


def test_r_cli_8_an_unknown_model_option_is_a_usage_error(ws: Workspace) -> None:
    proc = run_cli(["prompt", str(ws.root), "go", "--model", "gpt"], CLEAN)
    assert proc.returncode == 2 and "invalid choice: 'gpt'" in proc.stderr
    assert tree_listing(ws.root) == ["agents", "inbox", "lernie.toml", "steps"]


# ------------------------------------------------------------------ R-STEP-9: one model per agent


def test_r_step_9_a_scan_from_another_shell_revives_on_the_agents_own_model(
    ws: Workspace, tmp_path: Path
) -> None:
    """Started on a command model from one shell; its first call fails (the driver dies
    with work due); a scan from a shell that chooses the scripted model revives it on the
    command model all the same, and says so."""
    flag = tmp_path / "fail-once"
    flag.write_text("x")
    model = _model(
        tmp_path,
        "model",
        f'if [ -e "{flag}" ]; then rm "{flag}"; echo "first call fails" >&2; exit 3; fi\n'
        'echo \'[{"type":"text","text":"answered by the command model"}]\'\n',
    )
    first = run_cli(["prompt", str(ws.root), "hello", "--wait"], _command_env(model))
    assert first.returncode == 3, first.stderr
    root = first.stdout.strip()
    assert json.loads((ws.steps_dir(root) / "model.json").read_text()) == {
        "model": "command",
        "model_command": str(model),
        "model_timeout": 600.0,
    }
    other_shell = {**CLEAN, "LERNIE_MODEL": "scripted"}
    scan = run_cli(["scan", str(ws.root)], other_shell)
    assert scan.returncode == 0, scan.stderr
    assert "drivers launched: 1" in scan.stdout
    assert "LERNIE_MODEL" in scan.stderr and "R-STEP-9" in scan.stderr
    wait_quiescent(ws)
    assert _model_entries(ws, root) == ["002-command.json"]
    log = ws.driver_log(root).read_text()
    assert f"warning: {root} runs on the model it was started with, command ({model})" in log
    # a message from that shell: a warning, and the command model answers again
    msg = run_cli(["message", str(ws.root), root, "more"], other_shell)
    assert msg.returncode == 0
    assert msg.stderr.startswith(f"lernie message: warning: {root} runs on the model it was")
    wait_quiescent(ws)
    assert _model_entries(ws, root) == ["002-command.json", "004-command.json"]


def test_r_step_9_a_child_runs_on_its_parents_model_unless_dispatched_with_model(
    ws: Workspace, tmp_path: Path
) -> None:
    model = _model(tmp_path, "model", 'echo \'[{"type":"text","text":"from command"}]\'\n')
    started = run_cli(["prompt", str(ws.root), "hi", "--wait"], _command_env(model))
    assert started.returncode == 0, started.stderr
    root = started.stdout.splitlines()[0]
    inherits = run_cli(
        ["dispatch", str(ws.root), root, "sub"], {**CLEAN, "LERNIE_MODEL": "scripted"}
    )
    assert inherits.returncode == 0
    assert "the child runs on its parent's model, command" in inherits.stderr
    chosen = run_cli(["dispatch", str(ws.root), root, "other", "--model", "scripted"], CLEAN)
    assert chosen.returncode == 0, chosen.stderr
    wait_quiescent(ws)
    child, other = inherits.stdout.strip(), chosen.stdout.strip()
    assert not (ws.steps_dir(child) / "model.json").exists()  # it inherits by its line
    assert (ws.steps_dir(other) / "model.json").read_bytes() == b'{"model": "scripted"}\n'
    assert _model_entries(ws, child) == ["002-command.json"]
    assert _model_entries(ws, other) == ["002-scripted.json"]


# ------------------------------------------------------------------ R-ID-6: names everywhere


def test_r_id_6_log_stop_advance_and_dispatch_take_a_name(ws: Workspace, named: str) -> None:
    by_id = run_cli(["log", str(ws.root), named])
    by_name = run_cli(["log", str(ws.root), "lead"])
    assert by_name.returncode == 0 and by_name.stdout == by_id.stdout
    stop = run_cli(["stop", str(ws.root), "lead"])
    assert stop.returncode == 0
    assert stop.stderr.startswith(
        f"lernie stop: nothing to stop — no executor holds the lock of {named}"
    )
    hop = run_cli(["advance", str(ws.root), "lead"], CLEAN)
    assert hop.returncode == 0, hop.stderr
    assert _model_entries(ws, named) == ["002-scripted.json"]
    child = run_cli(["dispatch", str(ws.root), "lead", "sub"], CLEAN)
    assert child.returncode == 0 and child.stdout.startswith(named + "-")
    wait_quiescent(ws)


@pytest.mark.parametrize("verb", ["log", "stop", "advance", "message", "dispatch"])
def test_r_id_6_an_unknown_name_is_declined_alike_by_every_verb(
    ws: Workspace, named: str, verb: str
) -> None:
    before = tree_listing(ws.root)
    extra = ["x"] if verb in ("message", "dispatch") else []
    proc = run_cli([verb, str(ws.root), "leed", *extra], CLEAN)
    assert proc.returncode == 1
    line = proc.stderr.strip()
    assert line.startswith(f'lernie {verb}: no agent "leed" in this workspace — ')
    assert "`lernie status <ws>` lists every agent with its name" in line
    assert "ARCH" not in line
    assert tree_listing(ws.root) == before


# ------------------------------------------------------------------ R-STATUS-5, R-SCAN-10: hints


def test_r_status_5_undelivered_mail_with_no_driver_says_run_scan(
    ws: Workspace, named: str
) -> None:
    proc = run_cli(["status", str(ws.root)])
    assert proc.returncode == 0
    assert "1 undelivered" in proc.stdout
    assert proc.stderr == (
        f"lernie status: {named} has 1 undelivered message(s) and no driver; "
        f"`lernie scan {ws.root}` launches one (R-SCAN-2)\n"
    )


def test_r_status_5_a_driver_that_died_of_a_full_disk_is_named(ws: Workspace, named: str) -> None:
    ws.steps_dir(named).mkdir(parents=True, exist_ok=True)
    ws.driver_log(named).write_text(
        "lernie advance: i/o writing conversation artifact: x: No space left on device "
        "(os error 28)\n"
    )
    proc = run_cli(["status", str(ws.root)])
    assert "its driver log ends: lernie advance: i/o writing" in proc.stderr
    assert "(the disk is full: free space first)" in proc.stderr
    assert disk_advice(ws, 0) is not None and "is full (0 bytes free)" in str(disk_advice(ws, 0))
    assert disk_advice(ws, 1 << 30) is None


def test_r_scan_10_the_crash_loop_guard_is_explained_by_scan_and_status(
    ws: Workspace, tmp_path: Path
) -> None:
    model = _model(tmp_path, "broken", 'echo "bad request" >&2\nexit 3\n')
    first = run_cli(["prompt", str(ws.root), "hello", "--wait"], _command_env(model))
    assert first.returncode == 3
    root = first.stdout.strip()
    # three revivals at this tip already (what three failed scans leave), read from disk
    tip = ws.branch_tip(root)
    (ws.steps_dir(root) / "revivals").write_text(revivals_record(tip, 3))
    scan = run_cli(["scan", str(ws.root)], CLEAN)
    assert "drivers launched: 0" in scan.stdout
    assert scan.stderr.startswith(f"lernie scan: {root} not relaunched: it died 3 times")
    assert (
        "crash-loop guard gave up; its driver log ends: lernie advance: model command"
        in scan.stderr
    )
    assert f"`lernie advance {ws.root} {root}` by hand (R-SCAN-10)" in scan.stderr
    status_proc = run_cli(["status", str(ws.root)])
    assert "the crash-loop guard stopped reviving it" in status_proc.stderr
    assert "exited with exit status: 3: bad request" in status_proc.stderr


def test_r_log_2_mail_whose_driver_failed_does_not_keep_the_wait_busy(ws: Workspace) -> None:
    """A driver that fails before it delivers anything (here: the configuration broke after
    the mail was deposited) leaves the mail pending; the wait sees the failure written after
    that mail and reports it instead of waiting out its timeout."""
    root = cli_prompt(ws, "hello", "", RecordingLauncher())  # mail, no driver yet
    (ws.root / "lernie.toml").write_text("step_budget = 0\n")
    AdvanceLauncher().launch(ws.root, root)
    state = wait_tree(ws, root, 120.0, AdvanceLauncher())
    assert state.failed == [root] and state.pending == [] and state.running == []
    [dead] = casualties(ws, root, state)
    assert dead.agent == root
    assert (
        dead.cause.startswith("lernie advance: ") and "step_budget must be at least 1" in dead.cause
    )
    assert sorted(os.listdir(ws.inbox_dir(root))) == ["user-001.md"]  # nothing lost
    # new mail after the failure is not read as failed: its driver has not spoken yet
    from lernie_ref.inbox import deposit

    deposit(ws.root, root, "user", "again")
    assert observe(ws, root, None, RecordingLauncher()).pending == [root]
