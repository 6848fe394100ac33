"""`lernie-check code-mutants`: the catalogue applies to the package as it is, and the
CI-sized subset is killed, each mutant by the checker the catalogue names, with the same
checkers passing on the unedited copy (so the kill is the edit's). The full run is `slow`;
its result is the table in docs/refinement.md."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from lernie_stateful.code_mutants import (
    BY_NAME,
    MUTANTS,
    CatalogueError,
    Check,
    Mutant,
    apply,
    baseline,
    check_catalogue,
    copy_package,
    judge,
    main,
    project_root,
    run_mutant,
)

ROOT = project_root()
CI = [m for m in MUTANTS if m.ci]


def test_every_edit_applies_once_and_changes_the_code(tmp_path: Path) -> None:
    assert check_catalogue(ROOT) == []
    assert len(BY_NAME) == len(MUTANTS)
    copy = copy_package(ROOT, tmp_path)
    for m in MUTANTS:
        before = ast.dump(ast.parse((copy / m.file).read_text()))
        apply(m, copy)
        after = (copy / m.file).read_text()
        assert ast.dump(ast.parse(after)) != before, m.name  # still Python, and different
        (copy / m.file).write_text((ROOT / m.file).read_text())
    with pytest.raises(CatalogueError):
        apply(MUTANTS[0]._replace(old="no such text anywhere"), copy)
    assert not (ROOT / "lernie_ref").samefile(copy / "lernie_ref")


def test_every_mutant_has_checkers_or_a_written_argument() -> None:
    for m in MUTANTS:
        assert m.checks or len(m.equivalent) > 40, m.name
        assert m.rule.startswith(("R-", "I-")), m.name
        for check in m.checks:
            for node in check.args if check.kind in ("pytest", "crash-points") else ():
                assert (ROOT / node.partition("::")[0]).exists(), (m.name, node)


def test_the_required_mutants_are_catalogued() -> None:
    """The issue's list: the stop cascade, the deposit number, delivery, the lock's release,
    the probe's launch, and one edit per newer code path."""
    rules = {m.rule for m in MUTANTS}
    assert {"stop-children-only", "deposit-number-from-count", "delivery-unlinks-then-writes",
            "lock-released-by-close", "launch-under-probe-lock"} <= set(BY_NAME)
    assert {"R-WS-7", "R-WS-8", "R-SCAN-10", "R-SCAN-11", "R-DRAIN-8", "R-WS-5",
            "R-STEP-8", "R-CLI-6"} <= rules


def test_the_ci_subset_is_killed_and_its_checkers_pass_without_the_edit() -> None:
    """CI-sized: a refinement kill (the copy is what the machine runs) and the kills of
    mutants no checker saw before their test was written."""
    assert {m.name for m in CI} >= {"probe-launches-nobody", "stop-children-only"}
    assert baseline([c for m in CI for c in m.checks[:1]], ROOT) == []
    for m in CI:
        r = run_mutant(m._replace(checks=m.checks[:1]), ROOT)
        assert r.verdict == "killed", (m.name, r.detail)
        assert r.by == m.checks[0].label


def test_cli_lists_and_refuses_unknown_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0
    listed = capsys.readouterr().out
    assert all(m.name in listed for m in MUTANTS)
    with pytest.raises(SystemExit) as exit_:
        main(["--only", "no-such-mutant"])
    assert exit_.value.code == 2
    assert "invalid choice: 'no-such-mutant'" in capsys.readouterr().err


@pytest.mark.slow
def test_the_full_catalogue_is_killed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--baseline"]) == 0, capsys.readouterr().out


def test_a_kill_by_a_checker_that_fails_without_the_edit_is_an_error() -> None:
    """--baseline: a checker that fails on the unedited copy kills every mutant and proves
    nothing; the mutant's verdict is then an error, and a sound killer's stays a kill."""
    harmless = Mutant("docstring-only", "lernie_ref/core/ids.py", '"""Agent ids: the id guard',
                      '"""Agent ids (edited): the id guard',
                      "R-ID-1", "a docstring edit", (Check("refine", ("--no-such-option",)),))
    assert check_catalogue(ROOT, [harmless]) == []
    clean: dict[Check, str | None] = {}
    r = judge(harmless, ROOT, clean)
    assert r.verdict == "error" and "fails on the unedited copy too" in r.detail
    assert clean[harmless.checks[0]] is not None
