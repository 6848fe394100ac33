"""R-STATUS-4: ``lernie status`` shows the tokens each agent's model entries reported."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from lernie_ref.substrate.workspace import Workspace
from tests.support.runners import run_cli
from tests.support.waits import wait_quiescent


def test_r_status_4_tokens_per_agent_and_total(ws: Workspace, tmp_path: Path) -> None:
    script = tmp_path / "model.py"
    script.write_text(
        "import json, sys\nsys.stdin.read()\n"
        "usage = {'input_tokens': 5, 'cache_read_input_tokens': 2, 'output_tokens': 3, 'x': 100}\n"
        "print(json.dumps({'content': [{'type': 'text', 'text': 'ok'}], 'usage': usage}))\n"
    )
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    env = {"LERNIE_MODEL": "command", "LERNIE_MODEL_COMMAND": command}
    plain = run_cli(["prompt", str(ws.root), "no usage", "--wait"])
    assert plain.returncode == 0
    assert "TOKENS" not in run_cli(["status", str(ws.root)]).stdout  # nothing reported yet
    first = run_cli(["prompt", str(ws.root), "one", "--wait"], env).stdout.splitlines()[0]
    run_cli(["message", str(ws.root), first, "two"], env)
    second = run_cli(["prompt", str(ws.root), "three", "--wait"], env).stdout.splitlines()[0]
    wait_quiescent(ws)
    lines = run_cli(["status", str(ws.root)]).stdout.splitlines()
    assert lines[0].split()[-1] == "TOKENS"
    rows = {line.split()[0]: line.split()[-1] for line in lines[1:-1]}
    assert rows[first] == "20" and rows[second] == "10"
    assert rows[plain.stdout.splitlines()[0]] == "0"
    assert lines[-1] == "tokens: 30 (input 21, output 9)"
    doc = json.loads(run_cli(["status", str(ws.root), "--json"]).stdout)
    by_id = {r["id"]: r for r in doc["agents"]}
    assert (by_id[first]["input_tokens"], by_id[first]["output_tokens"]) == (14, 6)
    assert by_id[first]["tokens"] == 20
    assert doc["tokens"] == {"input": 21, "output": 9, "total": 30}
