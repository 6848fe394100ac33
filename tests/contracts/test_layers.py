"""The layers hold: the pure core imports no I/O module and nothing of the package outside
``core/``; the vocabulary module imports nothing of the package at all; and dependencies
run one way between the three packages: the model (``lernie_spec``) imports neither the
implementation nor the checkers, the implementation imports of the model only its shared
spellings (``lernie_spec.vocab``) and nothing of the checkers (SPEC §19)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "lernie_ref" / "core"
SPEC_PKG = ROOT / "spec" / "lernie_spec"
REF_PKG = ROOT / "lernie_ref"
IO_MODULES = {"os", "subprocess", "fcntl", "signal"}


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_core_imports_no_io_module_and_nothing_outside_core() -> None:
    files = sorted(CORE.glob("*.py"))
    assert files
    for path in files:
        for name in imported(path):
            assert name.split(".")[0] not in IO_MODULES, f"{path.name} imports {name}"
            if name.startswith("lernie_ref"):
                assert name.startswith("lernie_ref.core"), f"{path.name} imports {name}"


def test_vocab_imports_nothing_of_the_package() -> None:
    """The vocabulary brings no implementation module with it (only the start-up idiom's
    constant, ``lernie_ref.core``), and the model's shared spellings import nothing."""
    assert {n for n in imported(CORE / "vocab.py") if n.startswith("lernie_")} <= {
        "lernie_ref.core.names",
        "lernie_ref.core",
        "lernie_spec",
    }
    assert {n for n in imported(CORE / "names.py") if n.startswith("lernie_")} <= {
        "lernie_ref.core"
    }
    assert not {n for n in imported(SPEC_PKG / "vocab.py") if n != "__future__"}


def upward_imports(package: Path, allowed: frozenset[str]) -> list[str]:
    """``file: module`` for every import (at any depth, function-local ones included) of a
    ``lernie_*`` package other than the file's own that is not in ``allowed``."""
    own = package.name
    out = []
    for path in sorted(package.rglob("*.py")):
        for name in sorted(imported(path)):
            top = name.split(".")[0]
            if top.startswith("lernie_") and top != own and name not in allowed:
                out.append(f"{path.relative_to(package).as_posix()}: {name}")
    return out


def test_the_model_imports_neither_the_implementation_nor_the_checkers() -> None:
    """SPEC §19: spec <- checkers -> reference; the refinement mapping lives with the
    checkers (``lernie_stateful.points``)."""
    assert upward_imports(SPEC_PKG, frozenset()) == []


def test_the_implementation_imports_only_the_models_spellings() -> None:
    assert upward_imports(REF_PKG, frozenset({"lernie_spec", "lernie_spec.vocab"})) == []


def test_the_direction_check_sees_a_planted_upward_import(tmp_path: Path) -> None:
    package = tmp_path / "lernie_spec"
    package.mkdir()
    (package / "model.py").write_text("def f() -> None:\n    from lernie_ref.core import ids\n")
    assert upward_imports(package, frozenset()) == ["model.py: lernie_ref.core"]


def test_the_check_sees_a_planted_io_import(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("from __future__ import annotations\nimport os.path\n")
    assert "os.path" in imported(planted)


def flock_importers(package: Path) -> list[str]:
    """Modules under ``package`` that import ``fcntl`` (the only way to call ``flock``)."""
    out = []
    for path in sorted(package.rglob("*.py")):
        if any(name.split(".")[0] == "fcntl" for name in imported(path)):
            out.append(path.relative_to(package.parent).as_posix())
    return out


def test_r_lock_3_only_the_lock_module_calls_flock() -> None:
    """The baton and every probe go through ``substrate/lock.py``'s API, never raw ``flock``.

    The verifier is exempt on purpose: the refinement machine asks the kernel who holds a
    lock with its own try-lock, an oracle independent of the lock module it judges."""
    assert flock_importers(ROOT / "lernie_ref") == ["lernie_ref/substrate/lock.py"]
    assert flock_importers(ROOT / "spec" / "lernie_spec") == []
    assert flock_importers(ROOT / "stateful" / "lernie_stateful") == [
        "lernie_stateful/refine_view.py"
    ]


def test_the_flock_check_sees_a_planted_raw_flock(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "cli").mkdir(parents=True)
    (package / "cli" / "advance.py").write_text("def f(fd: int) -> None:\n    import fcntl\n")
    assert flock_importers(package) == ["pkg/cli/advance.py"]
