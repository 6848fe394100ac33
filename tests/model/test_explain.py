"""Counterexamples explain themselves (`lernie_spec.explain`), and the text swimlane fits a
terminal (`--width`)."""

from __future__ import annotations

import json
import re

import pytest
from lernie_spec import check
from lernie_spec.explain import EXPLAINERS, explain
from lernie_spec.model import NAMES
from lernie_spec.properties import INVARIANTS
from lernie_spec.variants import SCOPES, VARIANTS

FALLBACK = ", and this step breaks it"


@pytest.fixture(scope="module")
def outcomes() -> list[check.Outcome]:
    return check.run_all([v for v in VARIANTS if v.expected], jobs=check.jobs_default())


def test_every_expected_violation_is_explained_with_its_values(
        outcomes: list[check.Outcome]) -> None:
    for o in outcomes:
        for inv in o.variant.expected:
            vio, world = o.found[inv]
            text = explain(vio, SCOPES[world].scope)
            where = f"in the {vio.loop}-step cycle" if vio.loop else f"at step {len(vio.trace)}"
            assert text.startswith(f"{inv} (") and f") breaks {where}: " in text, text
            assert inv in EXPLAINERS and FALLBACK not in text, (o.variant.name, text)
            # the values: at least one agent of the world named in the sentence
            names = {NAMES[a] for a in range(len(SCOPES[world].scope.parents))}
            assert any(re.search(rf"(?<![\w-]){n}(?![\w-])", text) for n in names), text


def test_the_lost_wakeup_names_the_mail_left_waiting(outcomes: list[check.Outcome]) -> None:
    o = next(o for o in outcomes if o.variant.name == "bl-9c8f-no-release-rule")
    vio, world = o.found["I-7"]
    assert explain(vio, SCOPES[world].scope).endswith(
        "but P's inbox still holds user-001 and nothing will wake it.")


def test_a_lost_deposit_is_named(outcomes: list[check.Outcome]) -> None:
    o = next(o for o in outcomes if o.variant.name == "overwriting-deposit")
    vio, world = o.found["I-5"]
    text = explain(vio, SCOPES[world].scope)
    assert "2 published and uncommitted, 1 found" in text and "lost: user's deposit to P" in text


def test_without_a_scope_the_invariant_speaks_in_its_docstring(
        outcomes: list[check.Outcome]) -> None:
    o = next(o for o in outcomes if o.variant.name == "bl-9c8f-no-release-rule")
    text = explain(o.found["I-7"][0])
    doc = " ".join((INVARIANTS["I-7"].holds.__doc__ or "").split())
    assert text.startswith("I-7 (no lost wakeup) breaks at step 6: " + doc[0].lower() + doc[1:20])
    assert text.endswith(FALLBACK + ".")


def test_swimlane_ends_with_the_explanation_and_fits_the_width(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main(["--variant", "lernie-0.0.11", "--trace", "--invariant", "I-12",
                       "--width", "100", "-q"]) == 0
    out = capsys.readouterr().out
    lines = out.rstrip().splitlines()
    assert max(len(line) for line in lines) <= 100
    assert "I-12 (a reply is owed once) breaks at step 44: " in " ".join(lines[-3:])
    assert check.main(["--variant", "lernie-0.0.11", "--trace", "--invariant", "I-12",
                       "--width", "0", "-q"]) == 0
    full = capsys.readouterr().out
    assert max(len(line) for line in full.splitlines()) > 100
    step_rows = [line for line in full.splitlines() if line[:3].strip().isdigit()]
    assert len(step_rows) == 44  # one line per step


def test_json_and_mermaid_carry_the_explanation(capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main(["--variant", "overwriting-deposit", "--trace", "--json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["explanation"].startswith("I-5 (no deposit lost or duplicated) breaks at step 4")
    assert check.main(["--variant", "overwriting-deposit", "--trace", "--format", "mermaid",
                       "-q"]) == 0
    assert "I-5 (no deposit lost or duplicated) breaks at step 4" in capsys.readouterr().out
