"""The compiled model (setup.py, LERNIE_SPEC_COMPILE=1) is the model: same verdicts, same traces.

The compiled build runs the same source as the interpreted one, but mypyc checks
annotations at run time and changes how objects pickle, so it is run here end to end:
`lernie-check --json` (every variant's verdict, state counts and trace lengths over the
default worlds, spread over worker processes) and `lernie-check --trace --json` (every
variant's shortest counterexample, step by step) must print the same as the interpreted
model, and the compiled run must really have loaded the extensions.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lernie_stateful.model_mutants import CATALOGUE, apply

from benchmarks import compiled


@pytest.fixture(scope="module")
def compiled_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    why = compiled.missing()
    if why is not None:
        pytest.skip(f"the compiled model cannot be built here: {why}")
    return compiled.build(tmp_path_factory.mktemp("compiled"))


def _check(args: list[str], env: dict[str, str] | None, cwd: Path, code: int = 0) -> str:
    done = subprocess.run([sys.executable, "-m", "lernie_spec.check", *args], env=env,
                          cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == code, done.stderr
    return done.stdout


def _without_seconds(text: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(text)
    for key in ("wall_seconds", "cpu_seconds", "jobs"):
        out.pop(key)
    for r in out["results"]:
        r.pop("seconds")
        r.pop("cpu_seconds")
    return out


def test_the_compiled_run_loads_the_extensions(compiled_dir: Path, tmp_path: Path) -> None:
    probe = ("import lernie_spec.model as m, lernie_spec.properties as p, "
             "lernie_spec.explore as e; print(m.__file__, p.__file__, e.__file__)")
    done = subprocess.run([sys.executable, "-c", probe], env=compiled.environment(compiled_dir),
                          cwd=tmp_path, capture_output=True, text=True, check=True)
    files = done.stdout.split()
    assert len(files) == 3
    assert all(f.endswith(".so") and f.startswith(str(compiled_dir)) for f in files), files


def test_i_all_compiled_verdicts_and_counts_match_the_interpreted_model(
        compiled_dir: Path, tmp_path: Path) -> None:
    interpreted = _without_seconds(_check(["--json"], None, tmp_path))
    fast = _without_seconds(_check(["--json"], compiled.environment(compiled_dir), tmp_path))
    assert interpreted["ok"] is True
    assert fast == interpreted


def test_i_all_compiled_traces_match_the_interpreted_model(
        compiled_dir: Path, tmp_path: Path) -> None:
    interpreted = _check(["--trace", "--json"], None, tmp_path)
    fast = _check(["--trace", "--json"], compiled.environment(compiled_dir), tmp_path)
    assert '"steps"' in interpreted  # some variant has a counterexample to compare
    assert fast == interpreted


_FREED = """
import gc
from lernie_spec.explore import explore
from lernie_spec.variants import BY_NAME, SCOPES
gc.collect()
gc.disable()
before = len(gc.get_objects())
result = explore(BY_NAME["reference"].profile, SCOPES["races"].scope)
print(result.states, len(gc.get_objects()) - before)
"""


@pytest.mark.parametrize("build", ["interpreted", "compiled"])
def test_a_search_frees_its_states_when_it_returns(
        build: str, compiled_dir: Path, tmp_path: Path) -> None:
    # with the collector off, whatever the search kept alive is still counted after it
    # returns: a reference cycle around the table of states would keep every state
    # (a compiled function's closures made one; only a full collection then frees it)
    env = compiled.environment(compiled_dir) if build == "compiled" else None
    done = subprocess.run([sys.executable, "-c", _FREED], env=env, cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    states, kept = map(int, done.stdout.split())
    assert states > 2000
    assert kept < states // 4, (states, kept)


@pytest.mark.slow
def test_a_compiled_mutant_is_told_apart(tmp_path: Path) -> None:
    why = compiled.missing()
    if why is not None:
        pytest.skip(f"the compiled model cannot be built here: {why}")
    (mutant,) = [m for m in CATALOGUE if m.name == "always-in-debt"]

    def plant(src: Path) -> None:
        model = src / "spec" / "lernie_spec" / "model.py"
        model.write_text(apply(mutant, model.read_text(encoding="utf-8")), encoding="utf-8")

    built = compiled.build(tmp_path / "mutant", edit=plant)
    args = ["--json", "--variant", "reference"]
    interpreted = _without_seconds(_check(args, None, tmp_path))
    # the reference no longer holds (exit 1)
    mutated = _check(args, compiled.environment(built), tmp_path, code=1)
    assert _without_seconds(mutated) != interpreted
