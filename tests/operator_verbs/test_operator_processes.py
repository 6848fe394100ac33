"""Operator verbs end to end: real ``lernie`` processes, detached drivers, real signals.

Every test waits for states (a lock held, a commit landed, no driver left) with a
generous timeout and never asserts on timing. Drivers run the scripted model:
``@sleep S`` makes each model call of that prompt last S seconds (polling the
stop flag), ``@tools N`` makes N tool steps.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
from pathlib import Path

from lernie_ref.inbox import RecordingLauncher, cli_prompt
from lernie_ref.operator.stop import discover, is_gone, lock_holder_pids, stop
from lernie_ref.reply_debt import read_entries
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import drive, poll
from tests.support.readers import mark, results_from, subjects
from tests.support.runners import run_cli
from tests.support.waits import wait_quiescent

QUIET = (
    "silent deaths: 0; died deposits swept: 0; drivers launched: 0; inboxes with no agent branch: 0"
)


def cli_ok(*args: str, env: dict[str, str] | None = None) -> str:
    proc = run_cli(list(args), env)
    assert proc.returncode == 0, proc.stderr
    out: str = proc.stdout
    return out


def quiet_root(ws: Workspace) -> str:
    """A root that has answered its operator in-process: never launched, no driver log."""
    root = cli_prompt(ws, "lead the work", "", RecordingLauncher())
    drive(ws, root)
    return root


def in_model_call(ws: Workspace, agent: str) -> bool:
    """The agent's driver holds the lock and has committed its delivery: it is past the
    drain, in (or entering) its model call."""
    if not lock_holder_pids(ws.inbox_dir(agent)):
        return False
    entries = read_entries(ws.worktree(agent))
    return (
        bool(entries)
        and entries[0].delivered
        and subjects(ws, agent)[0].startswith(f"transcript {entries[0].seq:03d}:")
    )


def children_of(ws: Workspace, parent: str) -> list[str]:
    return [a for a in ws.agent_ids() if a.startswith(parent + "-") and a.count("-") == 3]


def launched(ws: Workspace, agent: str) -> bool:
    """Any production launch of ``agent`` leaves its driver log behind (R-LAUNCH-2)."""
    return ws.driver_log(agent).exists()


# --------------------------------------------------------------------- scan


def test_r_scan_5_sigkill_mid_hop_then_scan_deposits_one_died_and_the_parent_delivers_it(
    ws: Workspace,
) -> None:
    root = cli_ok("prompt", str(ws.root), "lead\n@dispatch name=w @sleep 300").strip()
    poll(lambda: len(children_of(ws, root)) == 1, "the dispatch")
    (child,) = children_of(ws, root)
    poll(lambda: in_model_call(ws, child), "the child's model call")
    (holder,) = discover({child: ws.inbox_dir(child)})
    os.kill(holder.pid, signal.SIGKILL)
    poll(lambda: is_gone(holder.pid), "the killed driver to vanish")
    wait_quiescent(ws)
    tip = ws.branch_tip(child)

    line = cli_ok("scan", str(ws.root)).strip()
    # The obituary wakes the parent (the flush) and the child is revived (R-SCAN-10).
    assert line == (
        f"silent deaths: 1 ({child}); died deposits swept: 1; drivers launched: 2; "
        "inboxes with no agent branch: 0"
    )
    assert mark(ws, "returned", child) == tip
    # The revived child takes up its goal again (its model sleeps): stop it there.
    poll(lambda: bool(lock_holder_pids(ws.inbox_dir(child))), "the revived child")
    cli_ok("stop", str(ws.root), child)
    wait_quiescent(ws)
    # The launched parent drained the obituary into its transcript: exactly one. The stop's
    # obituary is there too, or parked in the parent's inbox (pin 2): one of each in all.
    delivered = [e for e in read_entries(ws.worktree(root)) if e.origin == child]
    died = [e for e in delivered if "epitaph: died\n" in e.path.read_text()]
    assert len(died) == 1 and f"terminal_ref: {tip}\n" in died[0].path.read_text()
    stopped = [e for e in delivered if "epitaph: stopped\n" in e.path.read_text()]
    parked = [ep for ep, _ in results_from(ws, root, child)]
    assert len(delivered) + len(parked) == 2 and len(stopped) + parked.count("stopped") == 1

    assert cli_ok("scan", str(ws.root)).startswith("silent deaths: 0; died deposits swept: 0;")
    status = cli_ok("status", str(ws.root), "--json")
    rows = {r["id"]: r for r in json.loads(status)["agents"]}
    assert rows[child]["last_epitaph"] == "stopped" and rows[child]["died_mid_work"] is False


# --------------------------------------------------------------------- stop


def test_r_stop_6_during_a_model_call_parks_stopped_and_a_message_revives(ws: Workspace) -> None:
    root = quiet_root(ws)
    child = cli_ok("dispatch", str(ws.root), root, "@sleep 300").strip()
    poll(lambda: in_model_call(ws, child), "the child's model call")
    before = read_entries(ws.worktree(child))

    proc = run_cli(["stop", str(ws.root), child])
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    wait_quiescent(ws)
    tip = ws.branch_tip(child)
    assert results_from(ws, root, child) == [("stopped", tip)]  # parked
    assert read_entries(ws.worktree(child)) == before  # nothing committed after the call
    assert not launched(ws, root)  # pin 2: nobody woken
    assert cli_ok("scan", str(ws.root)).startswith("silent deaths: 0;")  # already reported

    cli_ok("message", str(ws.root), child, "carry on")
    wait_quiescent(ws)
    newest = read_entries(ws.worktree(child))[0]
    assert not newest.delivered
    assert "scripted reply to user: carry on" in newest.path.read_text()


GIT_WRAPPER = """#!/bin/sh
case "$*" in
  *"-m transcript "*": tool ["*)
    if [ -n "$SLOW_TOOL_MARK" ] && [ ! -e "$SLOW_TOOL_MARK" ]; then
      : > "$SLOW_TOOL_MARK"
      i=0
      while [ ! -e "$SLOW_TOOL_MARK.go" ] && [ $i -lt 6000 ]; do sleep 0.05; i=$((i+1)); done
    fi;;
esac
exec {real} "$@"
"""


def test_r_stop_4_during_a_long_tool_step_settles_and_parks_stopped(
    ws: Workspace, tmp_path: Path
) -> None:
    """The first tool result's commit is held open (a slow ``git`` on PATH) until the stop
    has signalled: the executor finishes the commit, sees the flag after the tool window
    and ends as ``stopped``. Only the executor is signalled, so its ``git`` survives."""
    real_git = shutil.which("git")
    assert real_git is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(GIT_WRAPPER.format(real=real_git))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    marker = tmp_path / "tool-commit"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SLOW_TOOL_MARK": str(marker)}

    root = quiet_root(ws)
    child = cli_ok("dispatch", str(ws.root), root, "@tools 2", env=env).strip()
    poll(marker.exists, "the tool step's commit")

    def release_git(_: float) -> None:
        (tmp_path / "tool-commit.go").touch()  # the SIGTERM has been sent by now

    report = stop(ws.root, child, sleep=release_git)
    assert [h.agent for h in report.signalled] == [child] and report.killed == []
    wait_quiescent(ws)
    names = [e.path.name for e in reversed(read_entries(ws.worktree(child)))]
    assert names == [f"001-{root}.md", "002-scripted.json", "003-tool.json"]
    assert results_from(ws, root, child) == [("stopped", ws.branch_tip(child))]
    assert not launched(ws, root)


def test_r_stop_3_stop_of_a_parent_stops_its_running_children(ws: Workspace) -> None:
    root = cli_ok("prompt", str(ws.root), "lead\n@dispatch name=w @sleep 300").strip()
    poll(lambda: len(children_of(ws, root)) == 1, "the dispatch")
    (child,) = children_of(ws, root)
    poll(lambda: in_model_call(ws, child), "the child's model call")
    poll(lambda: not lock_holder_pids(ws.inbox_dir(root)), "the root to come to rest")
    cli_ok("message", str(ws.root), root, "@sleep 300")
    poll(
        lambda: (
            in_model_call(ws, root)
            and "@sleep 300" in read_entries(ws.worktree(root))[0].path.read_text()
        ),
        "the root's model call",
    )
    root_before = read_entries(ws.worktree(root))

    proc = run_cli(["stop", str(ws.root), root])
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    wait_quiescent(ws)
    assert not lock_holder_pids(ws.inbox_dir(root))
    assert not lock_holder_pids(ws.inbox_dir(child))
    assert results_from(ws, root, child) == [("stopped", ws.branch_tip(child))]  # parked
    assert read_entries(ws.worktree(root)) == root_before
    assert not any(not e.delivered for e in read_entries(ws.worktree(child)))


def test_r_stop_1_nothing_to_stop_exits_zero_with_a_note(ws: Workspace) -> None:
    root = quiet_root(ws)
    proc = run_cli(["stop", str(ws.root), root])
    assert proc.returncode == 0 and proc.stdout == ""
    assert proc.stderr.startswith("lernie stop: nothing to stop")
    assert proc.stderr.count("\n") == 1
