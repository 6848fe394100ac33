"""Seeded-bug builds: the reference with one catalogued bug, driven as another program.

A build is a directory holding a ``sitecustomize.py`` that installs one bug of
:mod:`lernie_stateful.seeded_bugs` (a parts object, through
``lernie_ref.testing.parts_installed``) when the interpreter starts, and an adapter
file that puts that directory on ``PYTHONPATH`` for every command it runs. The
detached drivers the CLI launches inherit the environment, so the whole tree of
processes runs the bug; nothing in ``lernie_ref`` knows about it, and the kit
sees only argv, exit codes, output and files, as with any other implementation.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from lernie_stateful.conform.adapter import AdapterError

SITE = '''\
# A seeded-bug build: applies one catalogued bug at interpreter start.
from lernie_stateful.conform.seeded import apply_for_life

apply_for_life({name})
'''

_HELD: list[object] = []


def apply_for_life(bug: str) -> None:
    """Apply ``bug`` for the rest of this interpreter: its parts object is installed as
    the process default of its kind (R-STEP-10) before any actor is built, so every hop,
    scan, writer and status of the process, and of the drivers it launches, runs it."""
    from lernie_stateful.seeded_bugs import BY_NAME

    installed = BY_NAME[bug].apply()
    installed.__enter__()
    _HELD.append(installed)  # a collected context would undo itself


def bug_names() -> list[str]:
    from lernie_stateful.seeded_bugs import BUGS

    return [b.name for b in BUGS]


def build(bug: str, directory: Path) -> Path:
    """Write the build of ``bug`` under ``directory``; return its adapter file."""
    if bug not in bug_names():
        raise AdapterError(f"no seeded bug {bug!r} (known: {', '.join(bug_names())})")
    site = directory / f"site-{bug}"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITE.format(name=json.dumps(bug)), encoding="utf-8")
    text = resources.files("lernie_stateful.conform").joinpath(
        "adapters", "lernie.toml").read_text(encoding="utf-8")
    old_name = 'name = "lernie (reference)"'
    if old_name not in text:  # pragma: no cover - the installed file names itself so
        raise AdapterError("the reference adapter does not start with its name line")
    text = text.replace(old_name, f"name = {json.dumps(f'lernie with seeded bug {bug}')}")
    text += ("\n# Set as given (no prefix): the directory whose sitecustomize applies the bug.\n"
             f"[env]\nPYTHONPATH = {json.dumps(str(site))}\n")
    adapter = directory / f"seeded-{bug}.toml"
    adapter.write_text(text, encoding="utf-8")
    return adapter
