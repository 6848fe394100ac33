"""SPEC.md's rule ids and the model's transitions match one to one."""

from __future__ import annotations

import re
from pathlib import Path

from lernie_spec import model
from lernie_spec.coverage import Coverage

SPEC = (Path(__file__).resolve().parents[2] / "spec" / "SPEC.md").read_text(encoding="utf-8")
RULE_IDS = set(re.findall(r"^- \*\*(R-[A-Z]+-\d+)\b", SPEC, flags=re.M))
INV_IDS = set(re.findall(r"^- \*\*(I-\d+)\b", SPEC, flags=re.M))


def test_every_rule_is_modelled_or_listed_as_not_modelled() -> None:
    missing = sorted(RULE_IDS - set(model.RULES) - set(model.NOT_MODELLED))
    assert missing == [], f"rule ids with no transition: {missing}"


def test_no_stale_rule_ids_in_the_model() -> None:
    stale = sorted((set(model.RULES) | set(model.NOT_MODELLED)) - RULE_IDS)
    assert stale == []
    assert set(model.RULES).isdisjoint(model.NOT_MODELLED)


def test_each_modelling_function_cites_its_rule_in_its_docstring() -> None:
    for rule, fn in model.RULES.items():
        assert rule in (fn.__doc__ or ""), (rule, getattr(fn, "__name__", fn))


def test_not_modelled_list_stays_short_and_justified() -> None:
    assert all(reason.strip() for reason in model.NOT_MODELLED.values())
    assert len(model.NOT_MODELLED) < len(RULE_IDS) // 2


def test_the_default_scope_exercises_every_kind_of_step(reference_run: Coverage) -> None:
    """Non-vacuity: exhausting the default scope under the reference takes
    every kind of step the model has, and every step names a rule of SPEC.md."""
    seen = {rule for rule, n in reference_run.rules.items() if n}
    texts = reference_run.texts
    # every step's own rule (and every rule it also applied) is a rule of SPEC.md
    assert seen - RULE_IDS == {"CRASH"}
    expected = {
        "R-PROBE-4", "R-STEP-1", "R-DEP-2", "R-DEP-6", "R-PROBE-1", "R-LAUNCH-1",
        "R-DRAIN-2", "R-STEP-2", "R-DRAIN-3", "R-DRAIN-4", "R-TR-3", "R-TERM-1",
        "R-STEP-7", "R-PROBE-6", "R-LOCK-3", "R-LOCK-2", "R-REL-1", "R-TERM-2",
        "R-STOP-1", "R-SCAN-1", "R-SCAN-2", "CRASH",
    }
    assert expected <= seen, sorted(expected - seen)
    # the situations the protocol's rules exist for do arise
    for text in ("re-read inbox: unseen mail, probe self", "probe P: BUSY", "sweep: died for C",
                 "commit delivered stray", "settle orphan tool_use",
                 "budget check: exhausted: budget-exhausted (obituary to P)",
                 "model: terminal response (reply to P)", "revive P", "revive C",
                 "commit terminal stray",
                 "model: terminal response renamed; CRASH before its commit"):
        assert any(text in t for t in texts), text
    # R-DRAIN-8 and R-SCAN-10 are taken: a lost reply leaves before a drain, a scan revives
    assert reference_run.rules["R-DRAIN-8"] and reference_run.rules["R-SCAN-10"]


def test_every_invariant_has_a_check() -> None:
    from lernie_spec.properties import INVARIANTS

    assert set(INVARIANTS) == INV_IDS
