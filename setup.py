"""Build hook: an opt-in compiled model.

Everything about the project is declared in pyproject.toml. This file adds one thing:
with ``LERNIE_SPEC_COMPILE=1`` in the environment, the model's three hot modules
(``lernie_spec.model``, ``lernie_spec.properties``, ``lernie_spec.explore``) are compiled
to C extensions with mypyc, from the same source the interpreted build runs. The
explorer is then about two to three times faster per core (README, "Benchmarks").

The build needs mypy and setuptools>=77 in the building environment and a C compiler:

    pip install mypy 'setuptools>=77'
    LERNIE_SPEC_COMPILE=1 pip install --no-build-isolation .

Use it for a regular (non-editable) install only: an editable one would put the
extensions next to the sources they shadow.
"""

from __future__ import annotations

import os

from setuptools import setup

COMPILED = ("spec/lernie_spec/model.py", "spec/lernie_spec/properties.py",
            "spec/lernie_spec/explore.py")


def _ext_modules() -> list[object]:
    if os.environ.get("LERNIE_SPEC_COMPILE", "") not in ("1", "true", "yes"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as exc:  # pragma: no cover - a build without mypy
        raise SystemExit(
            "LERNIE_SPEC_COMPILE=1 needs mypy in the build environment: "
            "pip install mypy 'setuptools>=77', then pip install --no-build-isolation ."
        ) from exc
    return list(mypycify(list(COMPILED), opt_level="3"))


setup(ext_modules=_ext_modules())
