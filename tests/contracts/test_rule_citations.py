"""Traceability from SPEC.md to the code and the tests.

Every rule (R-…) and invariant (I-…) id defined in spec/SPEC.md is cited literally, one
id at a time (``R-DEP-6``, never ``R-DEP-1/2/6/7``), somewhere in ``lernie_ref/``, or is
listed below with the reason it is not; and every test SPEC §18 names exists.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec" / "SPEC.md"

NOT_CITED_IN_LERNIE_REF: dict[str, str] = {
    "I-13": "a property of whole runs (reply debt plus release rule); checked by tests and "
    "the model, no single function implements it",
}


def defined_ids(spec: str) -> list[str]:
    return re.findall(r"^- \*\*([RI]-(?:[A-Z]+-)?[0-9]+)\b", spec, re.M)


def cited(rule: str, text: str) -> bool:
    return re.search(re.escape(rule) + r"(?![0-9])", text) is not None


def package_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "lernie_ref").rglob("*.py"))


def uncited(ids: list[str], text: str, excused: dict[str, str]) -> list[str]:
    return [i for i in ids if not cited(i, text) and i not in excused]


def test_every_rule_is_cited_in_lernie_ref_or_listed() -> None:
    ids = defined_ids(SPEC.read_text(encoding="utf-8"))
    assert len(ids) > 100
    text = package_text()
    assert uncited(ids, text, NOT_CITED_IN_LERNIE_REF) == []
    stale = [i for i in NOT_CITED_IN_LERNIE_REF if cited(i, text) or i not in ids]
    assert stale == [], "listed as not cited, but cited (or not a rule): drop from the table"


def test_the_citation_check_sees_a_missing_and_a_compressed_id() -> None:
    ids = ["R-DEP-1", "R-DEP-6", "R-DEP-10"]
    assert uncited(ids, "R-DEP-10 and R-DEP-1/2/6", {}) == ["R-DEP-6"]
    assert uncited(ids, "R-DEP-1 R-DEP-6 R-DEP-10", {}) == []
    assert uncited(["R-DEP-1"], "only R-DEP-10", {}) == ["R-DEP-1"]


def collect_test_names(tests_dir: Path) -> set[str]:
    out: set[str] = set()
    for path in tests_dir.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out.add(node.name)
    return out


def missing_tests(section: str, names: set[str], root: Path) -> list[str]:
    wanted = set(re.findall(r"`(test_[a-z0-9_*]+)`", section))
    paths = set(re.findall(r"`(tests/[^`]+\.py)`", section))
    gone = [w for w in sorted(wanted) if not fnmatch.filter(names, w)]
    return gone + [p for p in sorted(paths) if not (root / p).is_file()]


def test_every_test_named_in_spec_section_18_exists() -> None:
    spec = SPEC.read_text(encoding="utf-8")
    section = spec[spec.index("## 18.") : spec.index("## 19.")]
    names = collect_test_names(ROOT / "tests")
    assert "test_every_test_named_in_spec_section_18_exists" in names
    assert len(re.findall(r"`test_", section)) > 30
    assert missing_tests(section, names, ROOT) == []


def test_the_section_18_check_sees_a_renamed_test() -> None:
    section = "| I-1 | `test_r_lock_1_gone`, `test_r_scan_2_*`, `tests/nowhere.py` |"
    names = {"test_r_scan_2_flush"}
    assert missing_tests(section, names, ROOT) == ["test_r_lock_1_gone", "tests/nowhere.py"]
