"""docs/tools.md's worked example, run as written: an agent fixes a failing test in a small
repository with the scripted model; its transcript, its commits and the file it changed are
all in the workspace's history, and the audit finds nothing to report (R-TOOL-8)."""

from __future__ import annotations

import json
from pathlib import Path

from lernie_stateful.audit import audit

from tests.support.runners import run_cli
from tests.support.tools_project import block as _block
from tests.support.tools_project import git, project
from tests.support.waits import wait_quiescent


def test_r_tool_8_the_worked_example_fixes_a_failing_test_in_history(tmp_path: Path) -> None:
    ws = project(tmp_path)
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(_block("prompt"))

    proc = run_cli(["prompt", str(ws), "--file", str(prompt), "--wait"])
    assert proc.returncode == 0, proc.stderr
    root, answer = proc.stdout.split("\n", 1)
    wait_quiescent(ws)
    assert answer.startswith("scripted reply to user: The test in test_calc.py fails.")

    tree = ws / "agents" / root
    assert (tree / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    results = []
    for name in sorted(p.name for p in (tree / "messages").iterdir()):
        if name.endswith("-tool.json"):
            (block,) = json.loads((tree / "messages" / name).read_text())
            results.append((block["is_error"], block["content"][0]["text"]))
    assert [r[0] for r in results] == [True, False, False, False]
    assert results[0][1].startswith("Exit code: 1\n") and "AssertionError: -1 != 5" in results[0][1]
    assert results[1][1] == "def add(a, b):\n    return a - b\n"
    assert results[2][1] == "patch applied:\nupdated calc.py"
    assert results[3][1].startswith("Exit code: 0\n") and results[3][1].endswith("OK\n")
    # the fix is in the commit of the call that made it, and nothing is left uncommitted
    log = git("log", "--format=%s", "--name-only", f"agents/{root}", cwd=ws / "repo.git")
    assert f"transcript 007: tool [{root}]\n\ncalc.py\nmessages/007-tool.json\n" in log
    assert git("status", "--porcelain", cwd=tree) == ""
    assert git("show", f"agents/{root}:calc.py", cwd=ws / "repo.git") == (
        "def add(a, b):\n    return a + b\n")
    report = audit(ws)
    assert report.violations(True) == [], report.text(True)
