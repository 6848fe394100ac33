"""Parts objects and their process defaults (R-STEP-10).

A parts object is a typed, frozen bundle of the rule-bearing collaborators one actor
calls through (the hop's ``HopParts``, the writer's ``WriterParts``, the sweep's
``SweepParts``, the work tools' ``ToolParts``, the reply-debt reading ``DebtReading``).
It travels with that actor's dependencies, built with production's collaborators by
default, so a checker can run the real code with one collaborator replaced.

The process default of each kind is production's unless a test build installed another
through :func:`lernie_ref.testing.parts_installed`, the only caller of :func:`install`;
an actor reads it once, when its dependencies are built, never per call, and nothing
reads a flag or the environment to choose it.

The writer's, the sweep's and the debt reading's are on the paths R-CLI-5 keeps lean, so
they are frozen records (:mod:`lernie_ref.core.record`), not dataclasses.
"""

from __future__ import annotations

from lernie_ref.core import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypeVar

    P = TypeVar("P")

_INSTALLED: dict[type, list[object]] = {}


def installed(kind: type[P], production: P) -> P:
    """The process default of ``kind``: the last one installed, else ``production``."""
    stack = _INSTALLED.get(kind)
    if stack:
        top = stack[-1]
        if isinstance(top, kind):
            return top
    return production


def install(parts: object) -> None:
    """Make ``parts`` the process default of its kind (for test builds only)."""
    _INSTALLED.setdefault(type(parts), []).append(parts)


def uninstall(parts: object) -> None:
    """Undo :func:`install` of ``parts``."""
    _INSTALLED[type(parts)].remove(parts)
