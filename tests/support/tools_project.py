"""docs/tools.md's worked example as the tests build it: its fenced blocks, and the small
project seeded into ``config/default`` (where roots fork from) with the tools it enables."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.support.runners import run_cli

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tools.md"


def block(name: str) -> str:
    """The fenced block of docs/tools.md that follows the marker comment ``name``."""
    text = DOCS.read_text(encoding="utf-8")
    found = re.search(rf"<!-- {name} -->\n```[a-z]*\n(.*?)```", text, re.S)
    assert found, f"docs/tools.md has no block {name}"
    return found.group(1)


def git(*args: str, cwd: Path) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def project(tmp_path: Path) -> Path:
    """A new workspace ``tmp_path/ws`` holding docs/tools.md's project, its tools enabled."""
    ws = tmp_path / "ws"
    assert run_cli(["new", str(ws)]).returncode == 0
    seed = tmp_path / "seed"
    git("clone", "-q", str(ws / "repo.git"), str(seed), cwd=tmp_path)
    (seed / "calc.py").write_text(block("calc.py"))
    (seed / "test_calc.py").write_text(block("test_calc.py"))
    (seed / ".gitignore").write_text("__pycache__/\n")
    git("add", "-A", cwd=seed)
    git("-c", "user.name=op", "-c", "user.email=op@example.invalid", "commit", "-qm",
        "calc: a small project", cwd=seed)
    git("push", "-q", "origin", "HEAD:config/default", cwd=seed)
    config = ws / "lernie.toml"
    config.write_text(re.sub(r"(?m)^tools = .*$", block("tools").strip(), config.read_text()))
    return ws
