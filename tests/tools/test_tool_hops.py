"""R-TOOL-7, R-TOOL-8, R-LOCK-3 with real tools: every tool hop hands the lease to its
successor across ``execve``; a tool's changes land in its result's commit; a stop or a
SIGKILL in the middle of a `bash` call leaves nothing running and the call settled."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from lernie_stateful.audit import audit

from lernie_ref.actors.readings import mark_value
from lernie_ref.core.entry import text_of
from lernie_ref.core.tooldefs import ALL_TOOLS
from lernie_ref.inbox import RecordingLauncher, cli_prompt
from lernie_ref.substrate.config import Config
from lernie_ref.substrate.lock import try_acquire
from lernie_ref.substrate.shell import marked_pids
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Inline, poll
from tests.support.processes import gone, sigkill_driver
from tests.support.readers import changed_in, entries, lock_is_free, names
from tests.support.runners import run_cli
from tests.support.waits import wait_quiescent


def enable_tools(ws: Workspace, tools: tuple[str, ...] = ALL_TOOLS, timeout: float = 600) -> None:
    """Rewrite the workspace's ``tools`` line (bash on) as an operator would."""
    path = ws.root / "lernie.toml"
    listed = ", ".join(f'"{t}"' for t in tools)
    text = re.sub(r"(?m)^tools = .*$", f"tools = [{listed}]", path.read_text())
    text = re.sub(r"(?m)^tool_timeout = .*$", f"tool_timeout = {timeout}", text)
    path.write_text(text)


def tool_results(ws: Workspace, agent: str) -> list[tuple[bool, str]]:
    out = []
    for entry in entries(ws, agent):
        if entry.origin == "tool":
            (block,) = json.loads(entry.data)
            out.append((bool(block["is_error"]), block["content"][0]["text"]))
    return out


PROGRAM = """do the work
@apply_patch
*** Begin Patch
*** Add File: pkg/notes.txt
+first
*** End Patch
@cd pkg
@bash echo second >> notes.txt; ls
@read_file notes.txt
"""


def test_r_tool_8_each_tools_changes_land_in_its_result_commit(ws: Workspace) -> None:
    inline = Inline(ws, config=Config(tools=ALL_TOOLS))
    root = cli_prompt(ws, PROGRAM, "", inline.launcher)
    assert inline.settle()
    assert [r[1] for r in tool_results(ws, root)] == [
        "patch applied:\nadded pkg/notes.txt", "pkg", "Exit code: 0\nnotes.txt\n",
        "first\nsecond\n",
    ]
    assert changed_in(ws, root, f"transcript 003: tool [{root}]") == [
        "messages/003-tool.json", "pkg/notes.txt"]
    assert changed_in(ws, root, f"transcript 005: tool [{root}]") == ["messages/005-tool.json"]
    assert changed_in(ws, root, f"transcript 007: tool [{root}]") == [
        "messages/007-tool.json", "pkg/notes.txt"]
    status = ws.git.run(ws.worktree(root), ["status", "--porcelain"]).stdout
    assert status == ""  # the worktree holds nothing uncommitted
    report = audit(ws.root)
    assert report.violations(True) == [], report.text(True)


def test_r_lock_3_exec_baton_across_real_tool_hops(ws: Workspace) -> None:
    """I-2 with real tools: observed from outside, the lock is free only once the final
    answer is committed; every tool ran in its own hop, each an exec'd successor."""
    enable_tools(ws)
    root = cli_prompt(ws, PROGRAM, "", RecordingLauncher())
    inbox = ws.inbox_dir(root)
    lock = try_acquire(inbox)
    assert lock is not None
    env = lock.hand_off({k: v for k, v in os.environ.items() if k != "LERNIE_CONV_BRANCH"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "lernie_ref", "advance", str(ws.root), root],
        env=env, pass_fds=(lock.fd,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    os.close(lock.fd)
    busy = 0
    free_while_unfinished = []
    while proc.poll() is None:
        probe = try_acquire(inbox)
        if probe is None:
            busy += 1
        else:
            listed = names(ws, root)
            probe.release()
            if listed[-1:] != ["010-scripted.json"]:
                free_while_unfinished.append(listed)
        time.sleep(0.005)
    _, err = proc.communicate()
    assert proc.returncode == 0, err
    assert free_while_unfinished == []
    assert busy > 0
    assert [name.split("-", 1)[1] for name in names(ws, root)] == [
        "user.md", *["scripted.json", "tool.json"] * 4, "scripted.json"]
    assert (ws.worktree(root) / "pkg" / "notes.txt").read_text() == "first\nsecond\n"
    wait_quiescent(ws)


HANG = (
    "@bash sleep 300 & a=$!; setsid sleep 301 & b=$!; "
    "echo $a $b $$ > {p}.tmp; mv {p}.tmp {p}; wait"
)


def test_r_tool_4_lernie_stop_kills_a_hanging_bash_tree(ws: Workspace, tmp_path: Path) -> None:
    enable_tools(ws)
    pids = tmp_path / "pids"
    proc = run_cli(["prompt", str(ws.root), "hang\n" + HANG.format(p=pids)])
    assert proc.returncode == 0, proc.stderr
    root = proc.stdout.strip()
    poll(pids.exists, "the command to start its processes")
    stop = run_cli(["stop", str(ws.root), root])
    assert stop.returncode == 0, stop.stderr
    for pid in map(int, pids.read_text().split()):
        poll(lambda pid=pid: gone(pid), f"process {pid} to be killed")  # type: ignore[misc]
    wait_quiescent(ws)
    assert marked_pids(ws.root, root) == []
    results = tool_results(ws, root)
    assert results == [(True, "interrupted: the agent was stopped (SIGTERM) while this call "
                              "ran; every process it started was killed\n")]
    assert mark_value(ws, "stopped", root) is not None
    assert lock_is_free(ws, root)


def test_r_tool_7_sigkill_mid_tool_then_scan_kills_the_leftovers_and_settles_died(
    ws: Workspace, tmp_path: Path
) -> None:
    enable_tools(ws)
    pids = tmp_path / "pids"
    proc = run_cli(["prompt", str(ws.root), "hang\n" + HANG.format(p=pids)])
    assert proc.returncode == 0, proc.stderr
    root = proc.stdout.strip()
    poll(pids.exists, "the command to start its processes")
    sigkill_driver(ws, root)
    started = [int(p) for p in pids.read_text().split()]
    assert not any(gone(pid) for pid in started)  # the tool's tree outlived its executor
    scan = run_cli(["scan", str(ws.root), "--json"])
    assert scan.returncode == 0, scan.stderr
    assert json.loads(scan.stdout)["revived"] == [root]
    assert "leftover tool process(es)" in scan.stderr
    for pid in started:
        poll(lambda pid=pid: gone(pid), f"process {pid} to be killed")  # type: ignore[misc]
    wait_quiescent(ws)
    assert marked_pids(ws.root, root) == []
    (died,) = tool_results(ws, root)
    assert died[0] and died[1].startswith("died: ")
    assert text_of(entries(ws, root)[-1].blocks()) == "scripted reply to user: hang"
    report = audit(ws.root)
    assert report.violations() == [], report.text()


def test_r_tool_1_a_named_child_gets_its_own_tools(ws: Workspace) -> None:
    config = Config(agent_tools={"kid": ALL_TOOLS})  # the others keep the default, no bash
    inline = Inline(ws, config=config)
    root = cli_prompt(ws, "@bash echo root\n@dispatch name=kid @bash echo kid\nplan", "",
                      inline.launcher)
    assert inline.settle()
    (kid,) = [a for a in ws.agent_ids() if a != root]
    assert tool_results(ws, kid) == [(False, "Exit code: 0\nkid\n")]
    refused, dispatched = tool_results(ws, root)
    assert refused == (True, "lernie tool bash: tool `bash` is not enabled for this agent "
                             "(lernie.toml `tools`); the tools are `message`, `dispatch`, "
                             "`read_file`, `cd` and `apply_patch`")
    assert not dispatched[0]


def test_r_tool_7_the_next_hop_kills_the_leftovers_before_settling_died(
    ws: Workspace, tmp_path: Path
) -> None:
    """No scan: mail to the dead agent launches a driver, whose settlement (R-STEP-2)
    kills the dead call's processes first and says so in the driver log."""
    enable_tools(ws)
    pids = tmp_path / "pids"
    proc = run_cli(["prompt", str(ws.root), "hang\n" + HANG.format(p=pids)])
    assert proc.returncode == 0, proc.stderr
    root = proc.stdout.strip()
    poll(pids.exists, "the command to start its processes")
    sigkill_driver(ws, root)
    started = [int(p) for p in pids.read_text().split()]
    mail = run_cli(["message", str(ws.root), root, "are you there"])
    assert mail.returncode == 0, mail.stderr
    for pid in started:
        poll(lambda pid=pid: gone(pid), f"process {pid} to be killed")  # type: ignore[misc]
    wait_quiescent(ws)
    log = ws.driver_log(root).read_text()
    assert f"leftover tool process(es) of [{root}] whose executor died mid-call" in log
    died = tool_results(ws, root)[0]
    assert died[0] and died[1].startswith("died: ")
    assert marked_pids(ws.root, root) == []
