"""R-TOOL-8 across the crash windows of a tool call, with real processes: a production
driver is paused at a protocol point of a file-changing `apply_patch` call and killed
there with SIGKILL (``tests.support.pause``); then `lernie scan` (or mail, the next
driver) recovers the agent, and git shows where the call's work landed.

- Killed between the result's rename and its commit: the next holder's stray recovery
  commits the result with the work under the result's own subject (R-DRAIN-2), as if no
  crash had happened.
- Killed after the tool ran, before its result was written, or in the middle of a `bash`
  call that has done half its work: the call is settled `died` (R-STEP-2) and the work
  it left is committed with that result (R-TOOL-7, R-TOOL-8).

The audit reports the recovery upstream makes (the result committed alone under the
recovery subject, its work left behind): the seeded bug `stray-result-without-its-work`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from lernie_stateful.audit import audit
from lernie_stateful.seeded_bugs import BY_NAME

from lernie_ref.core.vocab import Point
from lernie_ref.inbox import RecordingLauncher, cli_prompt
from lernie_ref.substrate.shell import marked_pids
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Inline, poll
from tests.support.pause import sigkill_at
from tests.support.processes import sigkill_driver
from tests.support.readers import changed_in, entries, names, subjects
from tests.support.runners import run_cli
from tests.support.waits import wait_quiescent

PROGRAM = """write the notes
@apply_patch
*** Begin Patch
*** Add File: pkg/notes.txt
+first
*** End Patch
"""
"""One tool step (an exec'd successor hop), then a final response: entries
``001-user.md``, ``002-scripted.json`` (the call), ``003-tool.json`` (its result),
``004-scripted.json``."""


def killed_at(ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str,
              detail: str | None, touch: str) -> str:
    """Prompt a root with ``PROGRAM``, kill its driver at ``point``, then touch it
    (``scan`` or ``mail``) and wait for every driver to finish; the root's id."""
    root = cli_prompt(ws, PROGRAM, "", RecordingLauncher())  # nothing launched yet
    sigkill_at(ws, root, point, detail, tmp_path / "hook", monkeypatch)
    assert (ws.worktree(root) / "pkg" / "notes.txt").is_file()  # the call ran
    if touch == "scan":
        proc = run_cli(["scan", str(ws.root), "--json"])
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["revived"] == [root]
    else:
        proc = run_cli(["message", str(ws.root), root, "are you there"])
        assert proc.returncode == 0, proc.stderr
    wait_quiescent(ws)
    return root


def settled_history(ws: Workspace, root: str) -> None:
    """What every crash window must leave once recovered: the call's file committed in the
    result's own commit (R-TOOL-8), nothing uncommitted, no stray recovery commit, and an
    audit with no violation."""
    assert changed_in(ws, root, f"transcript 003: tool [{root}]") == [
        "messages/003-tool.json", "pkg/notes.txt"]
    assert f"transcript: recover delivered stray [{root}]" not in subjects(ws, root)
    status = ws.git.run(ws.worktree(root), ["status", "--porcelain"]).stdout
    assert status == ""  # the call's work is not left for a later commit to carry
    assert names(ws, root)[:3] == ["001-user.md", "002-scripted.json", "003-tool.json"]
    report = audit(ws.root)
    assert report.violations() == [], report.text()


@pytest.mark.parametrize("touch", ["scan", "mail"])
def test_r_drain_2_a_result_killed_before_its_commit_lands_with_its_work_under_its_subject(
        ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, touch: str) -> None:
    root = killed_at(ws, tmp_path, monkeypatch, Point.TRANSCRIPT_RENAMED, "003-tool.json",
                     touch)
    settled_history(ws, root)
    (block,) = json.loads(entries(ws, root)[2].data)
    assert block["is_error"] is False
    assert block["content"][0]["text"] == "patch applied:\nadded pkg/notes.txt"
    assert (ws.worktree(root) / "pkg" / "notes.txt").read_text() == "first\n"


def test_r_tool_8_a_call_killed_before_its_result_is_settled_died_with_its_work(
        ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = killed_at(ws, tmp_path, monkeypatch, Point.HOP_TOOL_RAN, None, "scan")
    settled_history(ws, root)
    (block,) = json.loads(entries(ws, root)[2].data)
    assert block["is_error"] is True
    assert block["content"][0]["text"].startswith("died: ")


def test_r_drain_2_the_audit_reports_a_result_recovered_without_its_work(
        ws: Workspace) -> None:
    inline = Inline(ws)
    root = cli_prompt(ws, PROGRAM, "", inline.launcher)
    inline.launcher.launches.clear()
    inline.crash_at(root, Point.TRANSCRIPT_RENAMED, detail="003-tool.json")
    with BY_NAME["stray-result-without-its-work"].apply():
        Inline(ws).hop(root)  # a hop built with the bug's parts (R-STEP-10)
    assert f"transcript: recover delivered stray [{root}]" in subjects(ws, root)
    status = ws.git.run(ws.worktree(root), ["status", "--porcelain"]).stdout
    assert status == "?? pkg/"  # the work, left for a later commit to carry
    (found,) = audit(ws.root).violations()
    assert found.rules == "R-DRAIN-2, R-TOOL-8"
    assert found.where[1:] == ("messages/003-tool.json",)


HALF = "half\n@bash echo half > half.txt; : > {ready}; sleep 300\n"
"""A `bash` call that writes a file, says so outside the worktree, then hangs."""


def test_r_tool_8_a_bash_call_killed_in_its_middle_leaves_its_half_to_its_died_result(
        ws: Workspace, tmp_path: Path) -> None:
    config = ws.root / "lernie.toml"
    tools = 'tools = ["message", "dispatch", "read_file", "cd", "apply_patch", "bash"]'
    config.write_text(re.sub(r"(?m)^tools = .*$", tools, config.read_text()))
    ready = tmp_path / "ready"
    proc = run_cli(["prompt", str(ws.root), HALF.format(ready=ready)])
    assert proc.returncode == 0, proc.stderr
    root = proc.stdout.strip()
    poll(ready.exists, "the command to write its half")
    sigkill_driver(ws, root)
    scan = run_cli(["scan", str(ws.root), "--json"])
    assert scan.returncode == 0, scan.stderr
    assert json.loads(scan.stdout)["revived"] == [root]
    wait_quiescent(ws)
    assert marked_pids(ws.root, root) == []  # the hanging command was killed (R-TOOL-7)
    assert changed_in(ws, root, f"transcript 003: tool [{root}]") == [
        "half.txt", "messages/003-tool.json"]
    (block,) = json.loads(entries(ws, root)[2].data)
    assert block["is_error"] is True
    assert block["content"][0]["text"].startswith("died: ")
    status = ws.git.run(ws.worktree(root), ["status", "--porcelain"]).stdout
    assert status == ""
    report = audit(ws.root)
    assert report.violations() == [], report.text()
