"""The checkers have no import cycles: the ``checkers-acyclic`` contract of ``.importlinter``
(import-linter's ``acyclic_siblings``, which counts function-local and type-checking imports
too) holds on the tree, and fails on a copy with one planted cycle."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = "importlinter:contract:checkers-acyclic"
LINT = Path(sys.executable).with_name("lint-imports")


def lint(where: Path, package: Path) -> subprocess.CompletedProcess[str]:
    """Run the contract alone on ``package`` (a copy of ``lernie_stateful``) from ``where``."""
    source = configparser.ConfigParser()
    source.read(ROOT / ".importlinter", encoding="utf-8")
    config = configparser.ConfigParser()
    config["importlinter"] = {"root_package": "lernie_stateful",
                              "include_external_packages": "False"}
    config[CONTRACT] = dict(source[CONTRACT])
    with open(where / "contract.ini", "w", encoding="utf-8") as handle:
        config.write(handle)
    env = {**os.environ, "PYTHONPATH": str(package.parent)}
    return subprocess.run([str(LINT), "--no-cache", "--no-logo", "contract.ini"], cwd=where,
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def copy_of_the_checkers(tmp_path: Path) -> Path:
    package = tmp_path / "src" / "lernie_stateful"
    shutil.copytree(ROOT / "stateful" / "lernie_stateful", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return package


def test_the_checkers_have_no_import_cycle(tmp_path: Path) -> None:
    package = copy_of_the_checkers(tmp_path)
    proc = lint(tmp_path, package)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "KEPT" in proc.stdout


PLANTS = [
    # (file, code appended, the dependency the contract proposes to remove)
    ("audit/layout.py", "def planted() -> None:\n    from lernie_stateful.conform import run\n",
     ".audit -> .conform"),
    ("conform/quiescence.py",
     "def planted() -> None:\n    from lernie_stateful.conform.run import conform\n",
     ".quiescence -> .run"),
    ("conform/run.py", "if TYPE_CHECKING:\n    from lernie_stateful.conform_cli import main\n",
     ".conform -> .conform_cli"),
]


@pytest.mark.parametrize(("where", "code", "named"), PLANTS, ids=[p[0] for p in PLANTS])
def test_the_contract_sees_a_planted_cycle(tmp_path: Path, where: str, code: str,
                                           named: str) -> None:
    """The kit imports the audit, and the scenario runner the kit's wait: an import back,
    hidden in a function or behind ``TYPE_CHECKING``, closes a cycle the contract names."""
    package = copy_of_the_checkers(tmp_path)
    with open(package / where, "a", encoding="utf-8") as handle:
        handle.write("\n\nfrom typing import TYPE_CHECKING\n\n" + code)
    proc = lint(tmp_path, package)
    assert proc.returncode != 0
    assert "BROKEN" in proc.stdout
    assert named in proc.stdout, proc.stdout
