"""A program the refinement machine found, replayed rule by rule without Hypothesis: the
draws each rule made, and the checks the machine's teardown runs after the last rule."""

from __future__ import annotations

from collections import deque
from typing import Any

from hypothesis import strategies as hst
from lernie_stateful.refinement import RefinementMachine


class Drawn:
    """A ``data`` whose draws are the values a found program drew, in order."""

    def __init__(self, *values: Any) -> None:
        self.values = deque(values)

    def draw(self, strategy: hst.SearchStrategy[Any], label: str | None = None) -> Any:
        return self.values.popleft()


def teardown_checks(m: RefinementMachine) -> None:
    """The teardown's checks (its search targets need a running Hypothesis test): everyone
    run to the end, a scan and everyone again after a crash, nothing stranded, no tool
    process left."""
    m.world.run_all()
    if m.world.graveyard:
        m.world.scan()
        m.world.run_all()
    assert m.world.stranded() == []
    m.world.oracle.none_left(None, "after the run")


def discard(m: RefinementMachine) -> None:
    """What the teardown leaves behind, gone: the world's processes and its directory."""
    m.world.close()
    m._tmp.cleanup()
