"""Issue 26's "done when", through the hosted path: with ``model = anthropic`` or ``openai``
and the tools enabled, an agent fixes a failing test in a small repository, and the whole run
(transcript, commits, the file it changed) is in the workspace's history (R-TOOL-8).

No network here: ``lernie-check serve-model`` stands in for the provider on 127.0.0.1, as
docs/tools.md shows, and plays the prompt's directives over the provider's real API. The
``lernie`` CLI, its production adapter, the provider's SDK and every HTTP round trip are the
real ones; the test judges the workspace from git and the files, and the requests the server
recorded."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from lernie_stateful.audit import audit

from tests.support.runners import run_cli
from tests.support.tools_project import block as _block
from tests.support.tools_project import git, project
from tests.support.waits import wait_quiescent

BASE_URL = {"anthropic": ("ANTHROPIC_BASE_URL", ""), "openai": ("OPENAI_BASE_URL", "/v1")}
KEY = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}





@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_r_tool_8_a_hosted_model_fixes_a_failing_test_and_the_run_is_in_history(
        api: str, tmp_path: Path) -> None:
    ws = project(tmp_path)
    prompt = tmp_path / "loopback.txt"
    prompt.write_text(_block("loopback-prompt"))
    record = tmp_path / "requests.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LERNIE_")}
    server = subprocess.Popen(
        [sys.executable, "-m", "lernie_stateful.cli", "serve-model", "--api", api, "--record",
         str(record), "--idle", "300"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url), url
        var, suffix = BASE_URL[api]
        proc = run_cli(["prompt", str(ws), "--file", str(prompt), "--wait", "--timeout", "300"],
                       {"LERNIE_MODEL": api, var: url + suffix, KEY[api]: "loopback"},
                       timeout=360)
        assert proc.returncode == 0, proc.stderr
        root, answer = proc.stdout.split("\n", 1)
        wait_quiescent(ws)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert answer == "kit reply: The test in test_calc.py fails. Read it, fix calc.py and " \
                     "show the test passing.\n"

    # the files: fixed on disk and at the tip of the agent's branch, nothing uncommitted
    tree = ws / "agents" / root
    fixed = "def add(a, b):\n    return a + b\n"
    assert (tree / "calc.py").read_text() == fixed
    assert git("show", f"agents/{root}:calc.py", cwd=ws / "repo.git") == fixed
    assert git("status", "--porcelain", cwd=tree) == ""

    # the transcript: what each tool returned, as the model saw it
    results = []
    for path in sorted((tree / "messages").glob("*-tool.json")):
        (block,) = json.loads(path.read_text())
        results.append((block["is_error"], block["content"][0]["text"]))
    assert results[0] == (False, _block("test_calc.py"))
    assert results[1] == (False, "patch applied:\nupdated calc.py")
    assert results[2][0] is False and results[2][1].startswith("Exit code: 0\n")
    assert results[2][1].endswith("OK\n") and len(results) == 3

    # the commits: one per entry, the fix in the patch's own commit, the run's last commit
    # the model's final answer
    log = git("log", "--reverse", "--format=%s", "--name-only", f"agents/{root}",
              cwd=ws / "repo.git")
    subjects = [line for line in log.splitlines() if line.startswith(("step ", "transcript"))]
    assert [s.split(": ", 1)[0] for s in subjects] == [
        "step 001", *(f"transcript {n:03d}" for n in range(1, 9))]
    origins = [s.split(": ", 1)[1].split(" [")[0] for s in subjects[1:]]
    model = origins[1]
    assert origins == ["user", model, "tool", model, "tool", model, "tool", model]
    assert model != "scripted"
    assert f"transcript 005: tool [{root}]\n\ncalc.py\nmessages/005-tool.json\n" in log
    assert audit(ws).violations(True) == []

    # the model really was the server, over this provider's API, with the tools declared
    served = [json.loads(line) for line in record.read_text().splitlines()]
    assert [r["api"] for r in served] == [api] * 4
    assert all(r["status"] == 200 for r in served)
    assert all({"read_file", "apply_patch", "bash"} <= set(r["tools"]) for r in served)
    assert [r["reply"].get("name", r["reply"]["type"]) for r in served] == [
        "read_file", "apply_patch", "bash", "text"]
