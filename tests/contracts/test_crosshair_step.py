"""The CI step itself: ``tools/crosshair_check.py`` finds the contracts, runs them, counts them.

A small run on two quick targets, so a change that breaks the step's discovery or
its reading of CrossHair's report fails here and not only in CI.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "crosshair_check.py"


@pytest.mark.crosshair
def test_crosshair_step_reports_confirmed_and_sampled_conditions(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--per-condition-timeout", "1", "--json", str(report),
         "tests.support.bounded.parked_by_epitaph", "lernie_ref.core.ids.depth"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert re.search(r"2 functions, \d+ preconditions, 4 postconditions", summary), summary
    assert "confirmed over all paths: 1;" in summary  # the finite R-REL-2 harness
    assert "counterexamples: 0;" in summary
    assert report.exists()


def load_step() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crosshair_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_contract_cites_its_rule() -> None:
    """SPEC §20 C-1: each contracted function names the rules its contract states."""
    step = load_step()
    found = 0
    for module, (path, kind) in step.MODULES.items():
        if not path.exists():
            continue
        source = path.read_text(encoding="utf-8")
        tree = {n.name: n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}
        for target in step.contract_targets(module, path, kind):
            doc = ast.get_docstring(tree[target.qualname.rsplit(".", 1)[1]]) or ""
            assert re.search(r"R-[A-Z]+-\d+", doc), f"{target.qualname} cites no rule id"
            found += 1
    assert found >= 40
