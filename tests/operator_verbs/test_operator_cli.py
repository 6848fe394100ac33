"""The operator verbs at the CLI edge: hostile input, products on stdout, ``lernie status``.

Hostile input (R-CLI-2): one stderr line ``lernie <verb>: …``, exit 1, nothing
written anywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lernie_ref.core.vocab import Point
from lernie_ref.inbox import RecordingLauncher, cli_dispatch, cli_prompt, deposit
from lernie_ref.operator.status import HEADERS, status
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Inline, drive
from tests.support.processes import spawn_holder
from tests.support.runners import one_line, run_cli
from tests.support.snapshots import tree_listing
from tests.support.waits import wait_quiescent


@pytest.mark.parametrize("verb", ["scan", "status"])
def test_r_cli_2_not_a_workspace(tmp_path: Path, verb: str) -> None:
    target = tmp_path / "plain"
    target.mkdir()
    proc = run_cli([verb, str(target)])
    assert one_line(proc, verb) == (
        f"lernie {verb}: {target} is not a workspace (no repo.git) — create one with "
        "`lernie new` (R-WS-2)"
    )
    assert list(target.iterdir()) == []


def test_r_stop_1_not_a_workspace(tmp_path: Path) -> None:
    target = tmp_path / "plain"
    target.mkdir()
    proc = run_cli(["stop", str(target), "a-b"])
    assert "is not a workspace (no repo.git)" in one_line(proc, "stop")
    assert list(target.iterdir()) == []


@pytest.mark.parametrize("bad", ["a/b", "..", ".", "", "a\\b"])
def test_r_stop_1_bad_ids_are_declined_before_anything(ws: Workspace, bad: str) -> None:
    before = tree_listing(ws.root)
    proc = run_cli(["stop", str(ws.root), bad])
    line = one_line(proc, "stop")
    assert line.startswith("lernie stop: agent id ") and "is not a single path component" in line
    assert tree_listing(ws.root) == before


def test_r_stop_1_unknown_agent(ws: Workspace) -> None:
    before = tree_listing(ws.root)
    proc = run_cli(["stop", str(ws.root), "20260101T000000Z-00000000"])
    assert one_line(proc, "stop") == (
        'lernie stop: no agent "20260101T000000Z-00000000" in this workspace — a stop names '
        "an existing agent, by id or unique name (R-ID-6); no agent has that id or wears that "
        "name: `lernie status <ws>` lists every agent with its name, `lernie prompt` / "
        "`lernie dispatch` start one"
    )
    assert tree_listing(ws.root) == before


def test_r_cli_2_usage_errors_exit_2(ws: Workspace) -> None:
    assert run_cli(["stop", str(ws.root)]).returncode == 2
    assert run_cli(["scan"]).returncode == 2
    assert run_cli(["status", str(ws.root), "--bogus"]).returncode == 2


def test_r_scan_3_json_report(ws: Workspace) -> None:
    root = cli_prompt(ws, "hello", "", RecordingLauncher())
    Inline(ws).crash_at(root, Point.HOP_WARRANT)
    proc = run_cli(["scan", str(ws.root), "--json"])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "silent_deaths": [root],
        "swept": [],
        "resent": [],
        "launched": [root],
        "busy": [],
        "debris": [],
        "driven": [],
        "revived": [root],
        "given_up": [],
        "abandoned": [],
    }
    wait_quiescent(ws)
    assert proc.stdout.count("\n") == 1


# --------------------------------------------------------------------- status


def test_r_status_1_table_and_json(ws: Workspace) -> None:
    rec = RecordingLauncher()
    root = cli_prompt(ws, "lead", "boss", rec)
    drive(ws, root)
    child = cli_dispatch(ws, root, "work", "worker", rec)
    drive(ws, child, stop=True)  # stopped: its obituary is parked in the root's inbox
    dead = cli_dispatch(ws, root, "more work", "", rec)
    Inline(ws).crash_at(dead, Point.HOP_WARRANT)
    before = tree_listing(ws.root)

    proc = run_cli(["status", str(ws.root)])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == [
        "ID",
        "NAME",
        "PARENT",
        "EXECUTOR",
        "PENDING",
        "LAST",
        "EPITAPH",
        "ENTRIES",
    ]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows[root] == [root, "boss", "-", "-", "1", "undelivered", "final-response", "2"]
    assert rows[child] == [child, "worker", root, "-", "0", "stopped", "1"]
    assert rows[dead] == [dead, "-", root, "dead", "0", "-", "1"]

    doc = json.loads(run_cli(["status", str(ws.root), "--json"]).stdout)
    by_id = {r["id"]: r for r in doc["agents"]}
    assert by_id[root] == {
        "id": root,
        "name": "boss",
        "parent": None,
        "live": False,
        "pending": 1,
        "undelivered": 1,
        "last_epitaph": "final-response",
        "transcript_length": 2,
        "died_mid_work": False,
        "input_tokens": 0,
        "output_tokens": 0,
        "tokens": 0,
    }
    assert by_id[dead]["died_mid_work"] is True
    assert tree_listing(ws.root) == before  # status writes nothing


def test_r_status_2_pending_under_a_live_executor_is_not_undelivered(ws: Workspace) -> None:
    root = cli_prompt(ws, "lead", "", RecordingLauncher())
    holder = spawn_holder(ws.inbox_dir(root))
    try:
        deposit(ws.root, root, "user", "more")
        (row,) = status(ws)
        assert row.live is True and row.pending == 2 and row.undelivered == 0
        table = run_cli(["status", str(ws.root)]).stdout.splitlines()
        assert table[1].split()[3:5] == ["live", "2"]
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    (row,) = status(ws)
    assert row.live is False and row.undelivered == 2


def test_r_status_1_empty_workspace_prints_the_header(ws: Workspace) -> None:
    proc = run_cli(["status", str(ws.root)])
    assert proc.returncode == 0
    assert proc.stdout.split() == " ".join(HEADERS).split()
    assert json.loads(run_cli(["status", str(ws.root), "--json"]).stdout) == {
        "agents": [],
        "tokens": {"input": 0, "output": 0, "total": 0},
    }


def test_r_scan_1_a_ref_that_is_not_an_agent_id_is_ignored(ws: Workspace) -> None:
    root = cli_prompt(ws, "lead", "", RecordingLauncher())
    drive(ws, root)
    tip = ws.branch_tip(root)
    ws.git.run(ws.repo_git, ["update-ref", "refs/heads/agents/x/y", tip])
    before = tree_listing(ws.root)
    for verb in ("scan", "status"):
        proc = run_cli([verb, str(ws.root)])
        assert proc.returncode == 0, proc.stderr
    assert "x/y" not in run_cli(["status", str(ws.root)]).stdout
    assert tree_listing(ws.root) == before


def test_r_scan_7_an_unreadable_transcript_aborts_loudly_and_status_carries_on(
    ws: Workspace,
) -> None:
    root = cli_prompt(ws, "lead", "", RecordingLauncher())
    drive(ws, root)
    (ws.worktree(root) / "messages" / "003-scripted.json").write_bytes(b"{not json")
    before = tree_listing(ws.root)
    line = one_line(run_cli(["scan", str(ws.root)]), "scan")
    assert line.startswith(f"lernie scan: read transcript of {root}: ")
    assert tree_listing(ws.root) == before
    proc = run_cli(["status", str(ws.root), "--json"])
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["agents"]
    assert row["transcript_length"] == 3 and row["died_mid_work"] is False


def test_r_scan_9_a_resent_reply_is_named_on_stderr(ws: Workspace) -> None:
    rec = RecordingLauncher()
    root = cli_prompt(ws, "lead", "", rec)
    drive(ws, root)
    child = cli_dispatch(ws, root, "work", "", rec)
    Inline(ws).crash_at(child, Point.HOP_ASSISTANT_COMMITTED)
    proc = run_cli(["scan", str(ws.root), "--json"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (
        f"lernie scan: {child}: its final response never reached {root}; "
        "deposited it on its behalf (R-SCAN-9)\n"
    )
    assert json.loads(proc.stdout)["resent"] == [{"agent": child, "to": root}]
    wait_quiescent(ws)
