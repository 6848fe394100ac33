"""The default worlds take every rule the model implements (`lernie-check --coverage`),
and the verifier kills every non-equivalent mutant of the model (`lernie-check mutants`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lernie_spec import model
from lernie_spec.coverage import CASES, measure
from lernie_stateful import model_mutants


def test_every_implemented_rule_and_addressing_case_is_taken() -> None:
    cov = measure()
    assert cov.missing_rules() == []
    assert cov.missing_cases() == []
    assert set(CASES) <= set(cov.cases)
    assert cov.rules["R-SCAN-9"] and cov.rules["R-STEP-5"] and cov.rules["CRASH"]


def test_the_coverage_check_fails_when_a_rule_is_never_taken() -> None:
    cov = measure(())  # no world at all: nothing is taken
    assert set(cov.missing_rules()) == set(model.RULES)


def test_every_mutant_edit_applies_to_the_model_exactly_once() -> None:
    src = Path(model.__file__).read_text(encoding="utf-8")
    assert len(model_mutants.CATALOGUE) >= 30
    for m in model_mutants.CATALOGUE:
        assert model_mutants.apply(m, src) != src, m.name
    assert len({m.name for m in model_mutants.CATALOGUE}) == len(model_mutants.CATALOGUE)


@pytest.mark.parametrize("name", ["tool-step-closes-debt-window", "crash-keeps-lock",
                                  "stop-mark-not-set", "lost-reply-not-resent"])
def test_a_mutant_is_killed_by_the_invariant_it_breaks(name: str) -> None:
    m = next(m for m in model_mutants.CATALOGUE if m.name == name)
    out = model_mutants.run_one(m)
    assert out.verdict == "killed" and out.length > 0


def test_lernie_check_mutants_kills_every_non_equivalent_mutant(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert model_mutants.main([]) == 0
    out = capsys.readouterr().out
    last = out.rstrip().splitlines()[-1]
    n = len(model_mutants.CATALOGUE)
    assert last.startswith("mutants: ") and last.endswith(f"0 survived of {n}")
    assert "SURVIVED" not in out
