"""The test-side driver of an actor: :class:`Stepper` runs one actor point by point.

Kept apart from :mod:`lernie_ref.core.actor` because it needs ``typing.Generic`` and the
production path does not (R-CLI-5). It imports the actor module; the actor module never
imports it (no cycle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from lernie_ref.core.actor import Actor, Passed

R = TypeVar("R")


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

    def run_to(self, name: str) -> Passed:
        """Step until the point ``name`` (one of ``Point.ALL``) has been passed; error if the
        actor ends first or ``name`` names no protocol point."""
        from lernie_ref.core.names import Point

        if name not in Point.ALL:
            raise ValueError(f"{name!r} is not a protocol point (Point.ALL)")
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
