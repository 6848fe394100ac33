"""Actors with explicit protocol points (DESIGN: "actors with explicit atomic points").

A protocol actor — a writer verb, a driver hop, a terminal tail, a scan — is a
generator that yields a :class:`Passed` right after each step another process
could observe (a rename, a commit, a flock or unlock, an inbox read, a launch)
and finally returns its result. Production drives an actor straight through
with :func:`run`; a test scheduler holds several actors and interleaves them at
their points over the real filesystem with :class:`Stepper`. There is one code
path: the scheduler only decides *when* the next step runs, never *what* it does.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Generic, NamedTuple, TypeVar

from lernie_ref.core.vocab import Point

R = TypeVar("R")


class Passed(NamedTuple):
    """A protocol point just passed: ``name`` is a :class:`~lernie_ref.core.vocab.Point`
    (``"<actor>.<step>"``, e.g. ``deposit.published``), with the agent it concerns."""

    name: Point
    agent: str = ""
    detail: str = ""


Actor = Generator[Passed, None, R]


def run(actor: Actor[R]) -> R:
    """Run an actor straight through (production) and return its result."""
    while True:
        try:
            next(actor)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


class Stepper(Generic[R]):
    """Drive one actor point by point (tests and the refinement scheduler).

    ``points`` records every point passed, in order.
    """

    def __init__(self, actor: Actor[R]) -> None:
        self._actor = actor
        self.points: list[Passed] = []
        self.done = False
        self._result: R | None = None

    def step(self) -> Passed | None:
        """Run to the next point; ``None`` once the actor has returned."""
        if self.done:
            return None
        try:
            point = next(self._actor)
        except StopIteration as stop:
            self.done = True
            self._result = stop.value
            return None
        self.points.append(point)
        return point

    def run_to(self, name: Point) -> Passed:
        """Step until the point ``name`` has been passed; error if the actor ends first."""
        while True:
            point = self.step()
            if point is None:
                raise AssertionError(f"actor ended before reaching point {name!r}")
            if point.name == name:
                return point

    def finish(self) -> R:
        while not self.done:
            self.step()
        return self._result  # type: ignore[return-value]

    @property
    def result(self) -> R:
        if not self.done:
            raise AssertionError("actor has not finished")
        return self._result  # type: ignore[return-value]
