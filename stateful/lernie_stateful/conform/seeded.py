"""Seeded-bug builds: the reference with one catalogued bug, driven as another program.

A build is a directory holding a ``sitecustomize.py`` that applies one bug of
:mod:`lernie_stateful.seeded_bugs` when the interpreter starts, and an adapter
file that puts that directory on ``PYTHONPATH`` for every command it runs. The
detached drivers the CLI launches inherit the environment, so the whole tree of
processes runs the bug; nothing in ``lernie_ref`` knows about it, and the kit
sees only argv, exit codes, output and files, as with any other implementation.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path

from lernie_stateful.conform.adapter import AdapterError

SITE = '''\
# A seeded-bug build: applies one catalogued bug at interpreter start.
from lernie_stateful.conform.seeded import apply_for_life

apply_for_life({name})
'''

_HELD: list[object] = []


def _module_globals() -> dict[str, dict[str, object]]:
    return {name: dict(vars(module)) for name, module in list(sys.modules.items())
            if name == "lernie_ref" or name.startswith("lernie_ref.")}


def apply_for_life(bug: str) -> None:
    """Apply ``bug`` for the rest of this interpreter, as if it were written in the source.

    The catalogue patches a function at one module's name. When that module is where the
    function is defined, a module that imported it by name (``from m import f``) would
    still call the original; a bug in the source reaches every importer, so the build
    re-points those names too. A patch of a name a module imported from elsewhere stays
    local to that module, as the catalogue means it.
    """
    from lernie_stateful.seeded_bugs import BY_NAME

    before = _module_globals()
    patch = BY_NAME[bug].apply()
    patch.__enter__()
    _HELD.append(patch)  # a collected patch would undo itself
    after = _module_globals()
    for module, names in before.items():
        for name, old in names.items():
            new = after.get(module, {}).get(name, old)
            if new is old or getattr(old, "__module__", None) != module:
                continue
            for other, values in after.items():
                for key, value in values.items():
                    if value is old and other != module:
                        setattr(sys.modules[other], key, new)


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
