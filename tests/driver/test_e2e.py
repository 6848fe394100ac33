"""End to end through the real ``lernie`` CLI: detached drivers, real exec baton, real signals.

Every test waits for the drivers it started to finish (polling with a generous
timeout) before it asserts on the final state and before it returns.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from lernie_ref.inbox import RecordingLauncher, cli_prompt
from lernie_ref.operator.wait import final_response
from lernie_ref.substrate.lock import try_acquire
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import poll
from tests.support.processes import driver_pids
from tests.support.readers import entries, inbox_names, lock_is_free, names, subjects
from tests.support.runners import run_cli
from tests.support.waits import wait_quiescent


def _prompt(ws: Workspace, text: str, *extra: str, env: dict[str, str] | None = None) -> str:
    proc = run_cli(["prompt", str(ws.root), text, *extra], env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()[0]


def _all_inboxes_empty(ws: Workspace) -> bool:
    return all(inbox_names(ws, a) == [] for a in ws.agent_ids())


def test_r_probe_5_prompt_wait_prints_id_then_final_response(ws: Workspace) -> None:
    proc = run_cli(["prompt", str(ws.root), "what is two plus two\nthink", "--wait"])
    assert proc.returncode == 0, proc.stderr
    root, response = proc.stdout.split("\n", 1)
    assert response == "scripted reply to user: what is two plus two\n"
    assert names(ws, root) == ["001-user.md", "002-scripted.json"]
    wait_quiescent(ws)
    assert proc.stderr == ""


def test_r_step_7_dispatch_child_reply_wakes_parent_and_is_delivered(ws: Workspace) -> None:
    proc = run_cli(["prompt", str(ws.root), "@dispatch name=kid find out\nplan it", "--wait"])
    assert proc.returncode == 0, proc.stderr
    root = proc.stdout.splitlines()[0]
    wait_quiescent(ws)
    (kid,) = [a for a in ws.agent_ids() if a != root]
    assert names(ws, kid) == [f"001-{root}.md", "002-scripted.json"]
    delivered = [e for e in entries(ws, root) if e.origin == kid]
    assert len(delivered) == 1 and delivered[0].text.endswith(f"scripted reply to {root}: find out")
    assert entries(ws, root)[-1].role == "assistant"  # the parent answered after the reply
    assert _all_inboxes_empty(ws)


def test_r_lock_3_exec_baton_lock_never_free_between_tool_hops(ws: Workspace) -> None:
    """I-2: observed from outside, the lock is free only once the final answer is committed."""
    launcher = RecordingLauncher()
    root = cli_prompt(ws, "@tools 3\n@sleep 0.15\nbaton", "", launcher)
    inbox = ws.inbox_dir(root)
    lock = try_acquire(inbox)
    assert lock is not None
    env = lock.hand_off({k: v for k, v in os.environ.items() if k != "LERNIE_CONV_BRANCH"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "lernie_ref", "advance", str(ws.root), root],
        env=env,
        pass_fds=(lock.fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    os.close(lock.fd)  # our copy only; the lease lives on in the driver's descriptor
    busy = 0
    free_while_unfinished = []
    while proc.poll() is None:
        probe = try_acquire(inbox)
        if probe is None:
            busy += 1
        else:
            done = bool(entries(ws, root)) and entries(ws, root)[-1].name.endswith("-scripted.json")
            tools = sum(1 for e in entries(ws, root) if e.origin == "tool")
            probe.release()
            if not (done and tools == 3):
                free_while_unfinished.append(names(ws, root))
        time.sleep(0.005)
    _, err = proc.communicate()
    assert proc.returncode == 0, err
    assert free_while_unfinished == []
    assert busy > 0
    assert names(ws, root) == [
        "001-user.md",
        "002-scripted.json",
        "003-tool.json",
        "004-scripted.json",
        "005-tool.json",
        "006-scripted.json",
        "007-tool.json",
        "008-scripted.json",
    ]
    wait_quiescent(ws)


def test_i_13_two_agents_exchange_reaches_quiescence_with_real_drivers(ws: Workspace) -> None:
    root = _prompt(ws, "coordinate", "--wait")
    proc = run_cli(["dispatch", str(ws.root), root, "stand by", "--name", "b"])
    assert proc.returncode == 0, proc.stderr
    b = proc.stdout.strip()
    wait_quiescent(ws)
    proc = run_cli(
        ["dispatch", str(ws.root), root, "@message b @message a pong\nping", "--name", "a"]
    )
    assert proc.returncode == 0, proc.stderr
    a = proc.stdout.strip()
    wait_quiescent(ws)
    assert _all_inboxes_empty(ws)
    assert all(lock_is_free(ws, agent) for agent in ws.agent_ids())
    assert len(entries(ws, a)) <= 8 and len(entries(ws, b)) <= 8
    sent = [e for e in entries(ws, a) + entries(ws, b) if b'"name":"message"' in e.data]
    assert len(sent) == 2


def _wait_model_call(ws: Workspace, agent: str) -> int:
    """The pid of the agent's driver once its prompt delivery is committed (it is then in the
    model call, which forks nothing; git children carry the driver's command line briefly)."""

    def ready() -> bool:
        delivered = any(
            s.startswith("transcript 001: ") and s.endswith(f" [{agent}]")
            for s in subjects(ws, agent)
        )
        return delivered and len(driver_pids(ws, agent)) == 1

    poll(ready, what="driver in its model call")
    (pid,) = driver_pids(ws, agent)
    return pid


def test_r_term_1_sigterm_stops_child_obituary_parks_parent_not_revived(ws: Workspace) -> None:
    root = _prompt(ws, "boss", "--wait")
    wait_quiescent(ws)
    before = names(ws, root)
    proc = run_cli(["dispatch", str(ws.root), root, "@sleep 60\nslow work"])
    kid = proc.stdout.strip()
    pid = _wait_model_call(ws, kid)
    os.kill(pid, signal.SIGTERM)
    wait_quiescent(ws)
    assert names(ws, kid) == [f"001-{root}.md"]  # the call was discarded, nothing committed
    (obituary,) = inbox_names(ws, root)
    text = (ws.inbox_dir(root) / obituary).read_text()
    assert "\nepitaph: stopped\n" in text
    assert names(ws, root) == before  # pin 2: the parent was not woken
    assert lock_is_free(ws, kid) and lock_is_free(ws, root)


def test_prompt_wait_timeout_names_what_still_runs(ws: Workspace) -> None:
    proc = run_cli(["prompt", str(ws.root), "@sleep 60\nslow", "--wait", "--timeout", "1"])
    assert proc.returncode == 1
    root = proc.stdout.strip()
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("lernie prompt: timed out after 1s")
    # the driver is in its model call, or (on a slow machine) not yet started
    assert f"still running: {root}" in proc.stderr or (
        f"mail waiting for a driver: {root}" in proc.stderr
    )
    pid = _wait_model_call(ws, root)
    os.kill(pid, signal.SIGTERM)
    wait_quiescent(ws)
    assert names(ws, root) == ["001-user.md"]


def test_i_5_kill_9_mid_hop_next_touch_heals_nothing_lost_or_duplicated(ws: Workspace) -> None:
    root = _prompt(ws, "@sleep 60\nslow question")
    pid = _wait_model_call(ws, root)
    os.kill(pid, signal.SIGKILL)
    wait_quiescent(ws)
    # A killed process loses its command line before its descriptors close: wait for the
    # kernel to drop the dead holder's lock (it must, or this times out and fails).
    poll(lambda: lock_is_free(ws, root), what="the killed driver's lock to be released")
    proc = run_cli(["message", str(ws.root), root, "are you there?"])
    assert proc.returncode == 0 and proc.stdout == ""
    wait_quiescent(ws)
    log = ws.driver_log(root).read_text() if ws.driver_log(root).exists() else ""
    assert names(ws, root) == ["001-user.md", "002-user.md", "003-scripted.json"], log
    assert entries(ws, root)[0].text.endswith("slow question")
    assert entries(ws, root)[1].text.endswith("are you there?")
    assert final_response(ws, root) == "scripted reply to user: are you there?"
    assert _all_inboxes_empty(ws)


# ----------------------------------------------------------------- error paths


def test_r_step_5_advance_guards_one_line_exit_1_no_inbox_created(ws: Workspace) -> None:
    cases = [
        (["advance", str(ws.root), "a/b"], "is not a single path component"),
        (["advance", str(ws.root.parent / "nowhere"), "x-y"], "is not a workspace"),
        (["advance", str(ws.root), "20260101T000000Z-deadbeef"], "a hop drives an existing agent"),
    ]
    for args, needle in cases:
        proc = run_cli(args)
        assert proc.returncode == 1
        assert proc.stdout == ""
        assert proc.stderr.startswith("lernie advance: ") and proc.stderr.count("\n") == 1
        assert needle in proc.stderr
    assert not (ws.inbox_root / "20260101T000000Z-deadbeef").exists()


def test_r_lock_4_bad_baton_is_declined_and_never_reacquired(ws: Workspace) -> None:
    root = cli_prompt(ws, "x", "", RecordingLauncher())
    for raw in ("", "nope", "99999"):
        proc = run_cli(["advance", str(ws.root), root], {"LERNIE_LOCK_FD": raw})
        assert proc.returncode == 1
        assert proc.stderr.startswith(f"lernie advance: adopt LERNIE_LOCK_FD lease for {root}: ")
        assert proc.stderr.count("\n") == 1
        assert inbox_names(ws, root) == ["user-001.md"]
        assert lock_is_free(ws, root)


def test_r_step_1_busy_lock_exits_0_silently(ws: Workspace) -> None:
    root = cli_prompt(ws, "x", "", RecordingLauncher())
    lock = try_acquire(ws.inbox_dir(root))
    assert lock is not None
    try:
        proc = run_cli(["advance", str(ws.root), root])
    finally:
        lock.release()
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert inbox_names(ws, root) == ["user-001.md"]


def test_r_step_5_failing_command_model_one_line_in_driver_log(
    ws: Workspace, tmp_path: Path
) -> None:
    script = tmp_path / "bad_model.py"
    script.write_text(
        "import sys\nsys.stdin.read()\nsys.stderr.write('quota\\nexceeded\\n')\nsys.exit(3)\n"
    )
    env = {
        "LERNIE_MODEL": "command",
        "LERNIE_MODEL_COMMAND": f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}",
    }
    root = _prompt(ws, "hi", env=env)
    wait_quiescent(ws)
    log = ws.driver_log(root).read_text()
    assert log.count("\n") == 1
    assert log.startswith("lernie advance: model command [")
    assert log.rstrip().endswith("exited with exit status: 3: exceeded")
    assert names(ws, root) == ["001-user.md"]
    assert lock_is_free(ws, root)
    script.write_text("import sys\nsys.stdin.read()\nprint('not json')\n")
    proc = run_cli(["advance", str(ws.root), root], env)
    assert proc.returncode == 1
    assert proc.stderr.startswith("lernie advance: model command wrote invalid JSON")
    assert proc.stderr.count("\n") == 1
    assert names(ws, root) == ["001-user.md"] and lock_is_free(ws, root)


def test_r_step_6_command_model_speaks_json_both_ways(ws: Workspace, tmp_path: Path) -> None:
    script = tmp_path / "echo_model.py"
    script.write_text(
        "import json, sys\n"
        "req = json.load(sys.stdin)\n"
        "last = req['messages'][-1]['content'][-1]['text'].split('---\\n')[-1]\n"
        "out = {'content': [{'type': 'text', 'text': req['agent'] + ' heard ' + last}],\n"
        "       'usage': {'output_tokens': 3, 'input_tokens': 5}}\n"
        "open(sys.argv[1], 'w').write(json.dumps(req))\n"
        "print(json.dumps(out))\n"
    )
    seen = tmp_path / "request.json"
    (ws.root / "lernie.toml").write_text(
        'model = "command"\n'
        f"model_command = {json.dumps(shlex.join([sys.executable, str(script), str(seen)]))}\n"
    )
    root = _prompt(ws, "ping", "--wait")
    assert names(ws, root) == ["001-user.md", "002-command.json"]
    assert entries(ws, root)[1].data == (
        b'{"content":[{"type":"text","text":"' + root.encode() + b' heard ping"}],'
        b'"usage":{"input_tokens":5,"output_tokens":3}}'
    )
    request = json.loads(seen.read_text())
    assert request["agent"] == root
    assert request["messages"][0]["role"] == "user"
    assert [t["name"] for t in request["tools"]] == [
        "message", "dispatch", "read_file", "cd", "apply_patch"
    ]
    # the environment wins over the file
    proc = run_cli(["prompt", str(ws.root), "again", "--wait"], {"LERNIE_MODEL": "scripted"})
    other = proc.stdout.splitlines()[0]
    assert names(ws, other) == ["001-user.md", "002-scripted.json"]
    wait_quiescent(ws)


def test_r_log_1_log_prints_the_transcript(ws: Workspace) -> None:
    root = _prompt(ws, "@tools 1\nlog me", "--wait")
    wait_quiescent(ws)
    proc = run_cli(["log", str(ws.root), root])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "001 user",
        "    @tools 1",
        "    log me",
        "002 scripted",
        "    → noop({}) [scripted-2-1]",
        "003 tool result error for scripted-2-1",
        '    lernie tool noop: unknown tool "noop": the tools are `message`, `dispatch`, '
        "`read_file`, `cd` and `apply_patch`",
        "004 scripted",
        "    scripted reply to user: log me",
    ]
    bad = run_cli(["log", str(ws.root), "no-such-agent"])
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1


def test_r_step_3_unpaired_via_cli_one_line_exit_1_lease_released(ws: Workspace) -> None:
    from lernie_ref.core.entry import render_model_entry

    root = cli_prompt(ws, "x", "", RecordingLauncher())
    assert run_cli(["advance", str(ws.root), root]).returncode == 0
    wait_quiescent(ws)
    wt = ws.worktree(root)
    orphan: dict[str, object] = {"type": "tool_use", "id": "lost", "name": "dispatch", "input": {}}
    (wt / "messages" / "003-scripted.json").write_bytes(render_model_entry([orphan], None))
    (wt / "messages" / "004-user.md").write_bytes(b"mail after the orphan")
    ws.git.run(wt, ["add", "-A"])
    ws.git.run(wt, ["commit", "-q", "-m", "hand-made orphan"])
    proc = run_cli(["advance", str(ws.root), root])
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith(f"lernie advance: branch {root} tip is an assistant entry")
    assert proc.stderr.count("\n") == 1
    assert lock_is_free(ws, root)
    assert names(ws, root)[-1] == "004-user.md"  # nothing committed, nothing replayed


def _pending_sigterm() -> None:
    """In the child before exec: a SIGTERM that is blocked and pending, as the baton leaves it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    os.kill(os.getpid(), signal.SIGTERM)


def test_d_15_sigterm_pending_across_execve_becomes_a_stop_not_a_kill(ws: Workspace) -> None:
    launcher = RecordingLauncher()
    root = cli_prompt(ws, "boss", "", launcher)
    assert run_cli(["advance", str(ws.root), root]).returncode == 0
    wait_quiescent(ws)
    from lernie_ref.inbox import cli_dispatch

    kid = cli_dispatch(ws, root, "@tools 1\nwork", "", launcher)
    env = {k: v for k, v in os.environ.items() if k not in ("LERNIE_CONV_BRANCH", "LERNIE_LOCK_FD")}
    proc = subprocess.run(
        [sys.executable, "-m", "lernie_ref", "advance", str(ws.root), kid],
        env=env,
        preexec_fn=_pending_sigterm,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    wait_quiescent(ws)
    assert names(ws, kid) == [f"001-{root}.md"]  # stopped at the first check point
    (obituary,) = inbox_names(ws, root)
    assert "\nepitaph: stopped\n" in (ws.inbox_dir(root) / obituary).read_text()
