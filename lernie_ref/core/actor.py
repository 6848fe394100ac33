"""Actors with explicit protocol points, one atomic step between two points (SPEC §19).

A protocol actor — a writer verb, a driver hop, a terminal tail, a scan — is a
generator that yields a :class:`Passed` right after each step another process
could observe (a rename, a commit, a flock or unlock, an inbox read, a launch)
and finally returns its result. Production drives an actor straight through
with :func:`run`; a test scheduler (:class:`lernie_ref.core.stepper.Stepper`) holds
several actors and interleaves them at their points over the real filesystem. There is
one code path: the scheduler only decides *when* the next step runs, never *what* it does.
"""

from __future__ import annotations

from lernie_ref.core import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Generator
    from typing import TypeAlias, TypeVar

    R = TypeVar("R")
    Actor: TypeAlias = Generator["Passed", None, R]


class Passed(tuple[str, str, str]):
    """A protocol point just passed: ``name`` is a :class:`~lernie_ref.core.names.Point`
    (``"<actor>.<step>"``, e.g. ``deposit.published``), with the agent it concerns.

    A named triple ``(name, agent, detail)``, written by hand so that importing it costs
    no ``typing``/``collections``.
    """

    __slots__ = ()

    def __new__(cls, name: str, agent: str = "", detail: str = "") -> Passed:
        return tuple.__new__(cls, (name, agent, detail))

    @property
    def name(self) -> str:
        return self[0]

    @property
    def agent(self) -> str:
        return self[1]

    @property
    def detail(self) -> str:
        return self[2]

    def __repr__(self) -> str:
        return f"Passed(name={self[0]!r}, agent={self[1]!r}, detail={self[2]!r})"


def run(actor: Actor[R]) -> R:
    """Run an actor straight through (production) and return its result."""
    while True:
        try:
            next(actor)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


def __getattr__(name: str) -> object:
    """``Actor`` is made on first use. The test scheduler, ``Stepper``, lives in
    :mod:`lernie_ref.core.stepper`, which imports this module (never the reverse): it needs
    ``typing``, which the message path does not load (R-CLI-5)."""
    if name == "Actor":
        # Only the checker reads the alias's parameters; at run time it names the generator
        # type, with no ``typing`` (modules import it beside ``Passed``, R-CLI-5).
        from collections.abc import Generator

        globals()["Actor"] = Generator
        return Generator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
