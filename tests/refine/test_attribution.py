"""`lernie-check bugs` credits a bug only with a failure the bug causes.

A failing program of a patched run is replayed on the unpatched implementation; when it
fails there too (a divergence the implementation has anyway, or one in the machine),
the failure is "shared" and is not counted as catching the bug.
"""

from __future__ import annotations

import contextlib

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
