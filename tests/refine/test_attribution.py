"""`lernie-check bugs` credits a bug only with a failure the bug causes.

A failing program of a patched run is replayed on the unpatched implementation; when it
fails there too (a divergence the implementation has anyway, or one in the machine),
the failure is "shared" and is not counted as catching the bug.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from lernie_stateful import refinement
from lernie_stateful.refine_cli import run
from lernie_stateful.seeded_bugs import BY_NAME, Bug

NO_BUG = Bug("no-bug", "patches nothing", "", contextlib.nullcontext)


def test_a_failure_the_bug_causes_is_not_shared() -> None:
    out = run(examples=20, seed=0, steps=20, bug=BY_NAME["writer-never-probes"], shrink=0,
              attribute=True)
    assert out.failed and not out.also_unpatched


def test_a_failure_the_unpatched_run_shares_is_not_the_bugs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A divergence planted in the machine itself fails every run, patched or not: the
    patch that changes nothing 'fails', and the replay shows the failure is shared."""
    monkeypatch.setattr(refinement.World, "stranded", lambda self: ["planted"])
    out = run(examples=5, seed=0, steps=5, bug=NO_BUG, shrink=0, attribute=True)
    assert out.failed and out.also_unpatched
    assert out.first_at == 1


def test_the_replay_runs_the_failing_program_and_no_further(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug's program fails after its third rule; the unpatched code fails every program
    only after its sixth. Replayed without the bug, the bug's program (three rules, then
    the teardown) passes: the later failure belongs to longer programs, and the bug is
    caught. (Hypothesis's reuse phase would run on past the stored rules.)"""
    patched = {"on": False}
    real = refinement.RefinementMachine.check_invariants

    def checking(self: refinement.RefinementMachine, *args: object) -> None:
        # Hypothesis checks invariants once before the first rule and after every rule
        seen = self.__dict__.get("_planted_checks", 0) + 1
        self.__dict__["_planted_checks"] = seen
        if patched["on"] and seen > 3:
            raise AssertionError("the planted bug, after the third rule")
        if seen > 6:
            raise AssertionError("a planted failure of every program, after the sixth rule")
        real(self, *args)  # type: ignore[arg-type]

    @contextlib.contextmanager
    def plant() -> Iterator[None]:
        patched["on"] = True
        try:
            yield
        finally:
            patched["on"] = False

    monkeypatch.setattr(refinement.RefinementMachine, "check_invariants", checking)
    out = run(examples=5, seed=0, steps=10, bug=Bug("planted", "", "", plant), shrink=0,
              attribute=True)
    assert out.failed and len(out.program) == 3
    assert not out.also_unpatched
