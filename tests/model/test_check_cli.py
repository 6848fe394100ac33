"""`lernie-check`: exit codes, the table, traces in three formats."""

from __future__ import annotations

import json

import pytest
from lernie_spec import check, variants
from lernie_spec.model import Profile


def test_default_run_prints_the_table_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main([]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert any(line.startswith("profile/variant") for line in lines)
    ref = next(line for line in lines if line.startswith("reference "))
    assert " holds " in ref and ref.rstrip().endswith("yes")
    for name in variants.BY_NAME:
        assert any(line.startswith(name + " ") for line in lines), name
    assert "violates I-5" in next(line for line in lines if line.startswith("litany-0.0.12"))
    assert out.rstrip().endswith("all as expected")
    assert "/work" not in out and "/tmp" not in out


def test_exit_1_when_an_expected_violation_is_not_found(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bogus = variants.Variant("reference-expecting-I-1", Profile(), frozenset({"I-1"}),
                             "the reference cannot fail I-1")
    monkeypatch.setitem(variants.BY_NAME, bogus.name, bogus)
    # one small world is enough: the reference never violates I-1 anywhere
    assert check.main(["--variant", bogus.name, "--scope", "faults"]) == 1
    assert "NOT as expected" in capsys.readouterr().out


def test_unknown_variant_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main(["--variant", "no-such-thing"]) == 2
    assert "unknown variant" in capsys.readouterr().err


def test_trace_swimlane_names_rules_columns_inbox_and_locks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert check.main(["--variant", "bl-9c8f-no-release-rule", "--trace"]) == 0
    out = capsys.readouterr().out
    assert "violates I-7" in out and "6 steps" in out
    header = next(line for line in out.splitlines() if line.startswith("# "))
    for col in ("rule", "W:P", "D:P", "inbox", "locks"):
        assert col in header
    assert "R-PROBE-1" in out and "BUSY" in out and "R-LOCK-2" in out


def test_trace_of_a_lasso_marks_the_cycle(capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main(["--variant", "bl-82d8-no-reply-debt", "--trace",
                       "--invariant", "I-13"]) == 0
    assert "cycle starts" in capsys.readouterr().out


def test_trace_as_mermaid(capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main(["--variant", "overwriting-deposit", "--trace",
                       "--format", "mermaid"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sequenceDiagram")
    assert "participant" in out and "R-DEP-6" in out


def test_trace_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main(["--variant", "overwriting-deposit", "--trace", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["invariant"] == "I-5" and doc["length"] == 4
    assert [s["rule"] for s in doc["steps"]][-1] == "R-DEP-6"


def test_json_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main(["--json", "--variant", "reference",
                       "--variant", "bl-5846-no-exit-self-launch", "--scope", "races"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True
    assert [s["name"] for s in doc["scopes"]] == ["races"]
    by = {r["variant"]: r for r in doc["results"]}
    assert by["reference"]["violated"] == []
    assert by["bl-5846-no-exit-self-launch"]["violated"] == ["I-7"]


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "bl-7318-release-by-close" in out
    assert "scope siblings" in out and "scope races" in out
