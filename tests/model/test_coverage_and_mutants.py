"""The default worlds take every rule the model implements (`lernie-check --coverage`),
and the verifier kills every non-equivalent mutant of the model (`lernie-check mutants`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lernie_spec import model
from lernie_spec.coverage import CASES, Coverage, measure
from lernie_stateful import model_mutants


def test_every_implemented_rule_and_addressing_case_is_taken(reference_run: Coverage) -> None:
    cov = reference_run
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
    assert set(model_mutants.BLIND_SPOTS) <= {m.name for m in model_mutants.CATALOGUE}


def _mutants_table(names: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert model_mutants.main(names) == 0
    out = capsys.readouterr().out
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("mutants: ") and last.endswith(f"0 survived of {len(names)}")
    assert "SURVIVED" not in out
    return out


def test_every_blind_spot_mutant_is_killed(capsys: pytest.CaptureFixture[str]) -> None:
    """The CI-sized mutation score: each mutant the catalogue was written for
    (none of them equivalent) is caught by some invariant, with a trace."""
    out = _mutants_table(list(model_mutants.BLIND_SPOTS), capsys)
    n = len(model_mutants.BLIND_SPOTS)
    assert f"mutants: {n} killed, 0 equivalent, 0 survived of {n}" in out
    rows = {line.split()[0]: line for line in out.splitlines()[2:] if line.strip()}
    for name in model_mutants.BLIND_SPOTS:
        assert "caught by I-" in rows[name] and "-step trace" in rows[name], rows[name]


def test_a_survivor_fails_the_mutation_score() -> None:
    """The score can fail: an edit that changes nothing and claims no
    equivalence survives (one small world suffices to show it)."""
    noop = model_mutants.Mutant("no-change", "renames nothing", "NOBODY: Final = -2",
                                "NOBODY: Final = -2  # unchanged")
    out = model_mutants.run_one(noop, worlds=("faults",))
    assert out.verdict == "SURVIVED"
    assert "mutants: 0 killed, 0 equivalent, 1 survived of 1" in model_mutants.table([out])


@pytest.mark.slow
def test_lernie_check_mutants_kills_every_non_equivalent_mutant(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _mutants_table([m.name for m in model_mutants.CATALOGUE], capsys)
