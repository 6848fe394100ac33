"""The compiled model (setup.py, ``LERNIE_SPEC_COMPILE=1``), built into a directory.

    python -m benchmarks.compiled DIR

builds a wheel of this checkout with the model's hot modules compiled by mypyc and
unpacks it into ``DIR``. With ``DIR`` first on ``PYTHONPATH`` (before the installed
package), ``python -m lernie_spec.check`` runs the compiled model; the explorer row of
``python -m benchmarks`` and ``tests/model/test_compiled.py`` use it that way. The
build runs from a copy of the sources in a temporary directory, so the checkout gets
no build files, and it needs what setup.py says: mypy, setuptools>=77 and a C compiler
in the environment of the interpreter that runs it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "setup.py", "README.md", "bin", "lernie_ref", "spec", "stateful")
MODULES = ("model", "properties", "explore")


class NotBuildable(Exception):
    """This environment cannot build the compiled model (the message says what is missing)."""


def missing() -> str | None:
    """What the build would lack here, or None when it can run."""
    if importlib.util.find_spec("mypyc") is None:
        return "mypy (mypyc) is not installed"
    try:
        import setuptools
    except ImportError:
        return "setuptools is not installed"
    if int(setuptools.__version__.split(".")[0]) < 77:
        return f"setuptools {setuptools.__version__} is older than 77"
    cc = os.environ.get("CC", "cc").split()[0]
    if shutil.which(cc) is None and shutil.which("gcc") is None:
        return "no C compiler"
    return None


def build(dest: Path, edit: Callable[[Path], None] | None = None) -> Path:
    """Build the compiled wheel and unpack it into ``dest``; return ``dest``.

    ``edit``: called with the copied sources' root before the build (a test plants a
    mutant in the copy this way; the checkout is never touched)."""
    why = missing()
    if why is not None:
        raise NotBuildable(why)
    with tempfile.TemporaryDirectory(prefix="lernie-compiled-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        skip = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info", "build")
        for name in SOURCES:
            path = ROOT / name
            if path.is_dir():
                shutil.copytree(path, src / name, ignore=skip)
            else:
                shutil.copy2(path, src / name)
        if edit is not None:
            edit(src)
        wheels = Path(tmp) / "wheels"
        env = {**os.environ, "LERNIE_SPEC_COMPILE": "1"}
        done = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
             "-w", str(wheels), str(src)],
            env=env, capture_output=True, text=True,
        )
        if done.returncode != 0:
            raise NotBuildable(f"the compiled build failed: {done.stderr.strip()[-2000:]}")
        (wheel,) = wheels.glob("*.whl")
        dest.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(dest)
    for mod in MODULES:
        if not list((dest / "lernie_spec").glob(f"{mod}.*.so")):
            raise NotBuildable(f"the build made no extension for lernie_spec.{mod}")
    return dest


def environment(dest: Path) -> dict[str, str]:
    """The environment that runs the compiled model from ``dest``."""
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": str(dest) + (os.pathsep + path if path else "")}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m benchmarks.compiled DIR", file=sys.stderr)
        return 2
    try:
        out = build(Path(args[0]))
    except NotBuildable as exc:
        print(f"benchmarks.compiled: {exc}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
