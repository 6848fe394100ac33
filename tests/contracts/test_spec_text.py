"""SPEC.md stays readable and self-contained, and every id the tree cites is one of its ids.

- Prose lines are wrapped (tables and fenced code excepted): `python tools/wrap_spec.py`
  rewraps the file without changing a word.
- Each rule, invariant, difference and contract (``R-…``, ``I-…``, ``D-…``, ``C-…``) is its own
  paragraph, started by its id, and no id is defined twice.
- Nothing cites a document the repository does not hold (the banned markers below).
- Every id cited in the package, the model, the checkers, the tests, the docs, the benchmarks
  and the tools is defined in SPEC.md; the table of contents lists every section.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec" / "SPEC.md"
MAX_LINE = 120

# Documents that are not in the repository; spelled in two pieces so this file does not cite them.
BANNED = ("ARCH" + " §", "digest" + " §", "facts" + " §", "DES" + "IGN",
          "source" + "-facts", "spec" + "-digest", "anchors" + ".md")
CITING_TREES = ("lernie_ref", "spec", "stateful", "tests", "docs", "benchmarks", "tools")
TEXT_SUFFIXES = (".py", ".md", ".toml", ".txt", ".html", ".bash", ".cfg", ".json")

# Ids cited on purpose although SPEC does not define them.
NOT_IN_SPEC: dict[str, str] = {
    "I-99": "tests/docs shows the error `lernie-check --invariant` gives for an unknown id",
}

_DEF = re.compile(r"^- \*\*([RIDC]-(?:[A-Z]+-)?[0-9]+)\b")
_BOLD_ID = re.compile(r"\*\*([RIDC]-(?:[A-Z]+-)?[0-9]+)\b")
_CITED = re.compile(r"(?<![A-Za-z0-9_-])((?:R-[A-Z]+|I|D|C)-[0-9]+)(?![0-9])")


def long_lines(text: str, limit: int = MAX_LINE) -> list[int]:
    """Line numbers of prose lines longer than ``limit`` (tables and fenced code excepted)."""
    out: list[int] = []
    fenced = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith("|"):
            continue
        if len(line) > limit:
            out.append(n)
    return out


def banned_citations(text: str) -> list[str]:
    return [b for b in BANNED if b in text]


def paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def defined_ids(text: str) -> list[str]:
    """The ids SPEC defines: a paragraph that starts ``- **<id>``."""
    out: list[str] = []
    for p in paragraphs(text):
        m = _DEF.match(p)
        if m:
            out.append(m.group(1))
    return out


def misplaced_definitions(text: str) -> list[str]:
    """Bold ids that do not start their own paragraph (two rules in one, or one mid-text)."""
    bad: list[str] = []
    for p in paragraphs(text):
        if p.lstrip().startswith("|"):
            continue
        found = _BOLD_ID.findall(p)
        start = _DEF.match(p)
        for i, rule in enumerate(found):
            if not (i == 0 and start and start.group(1) == rule):
                bad.append(rule)
    return bad


def duplicates(ids: list[str]) -> list[str]:
    return sorted({i for i in ids if ids.count(i) > 1})


def cited_ids(text: str) -> set[str]:
    return set(_CITED.findall(text))


def citing_files() -> list[Path]:
    out: list[Path] = []
    for tree in CITING_TREES:
        for path in (ROOT / tree).rglob("*"):
            if (path.is_file() and path.suffix in TEXT_SUFFIXES and "egg-info" not in str(path)
                    and path != Path(__file__).resolve()):
                out.append(path)
    return out


def unknown_citations(files: list[Path], defined: set[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for rule in sorted(cited_ids(text) - defined):
            if rule not in NOT_IN_SPEC:
                out.setdefault(rule, []).append(path.name)
    return out


def toc_missing(text: str) -> list[str]:
    """Sections (``## ``) the table of contents at the top does not link."""
    first = text.index("\n## ")
    toc = " ".join(text[:first].split())
    return [h for h in re.findall(r"^## (.+)$", text, re.M) if f"[{h}](#" not in toc]


# ------------------------------------------------------------------------------ the checks


def test_spec_prose_lines_are_wrapped() -> None:
    bad = long_lines(SPEC.read_text(encoding="utf-8"))
    assert bad == [], f"SPEC.md lines over {MAX_LINE} columns: {bad}; run python tools/wrap_spec.py"


def test_spec_and_the_tree_cite_no_document_outside_the_repository() -> None:
    hits = {str(p.relative_to(ROOT)): banned_citations(p.read_text(encoding="utf-8",
                                                                   errors="replace"))
            for p in [SPEC, ROOT / "README.md", *citing_files()]}
    assert {p: b for p, b in hits.items() if b} == {}


def test_every_rule_is_its_own_paragraph_and_no_id_is_defined_twice() -> None:
    spec = SPEC.read_text(encoding="utf-8")
    ids = defined_ids(spec)
    assert len(ids) > 150
    assert duplicates(ids) == []
    assert misplaced_definitions(spec) == []


def test_every_id_cited_in_the_tree_is_defined_in_spec() -> None:
    defined = set(defined_ids(SPEC.read_text(encoding="utf-8")))
    files = citing_files()
    assert len(files) > 100
    assert unknown_citations(files, defined) == {}
    stale = [i for i in NOT_IN_SPEC if i in defined]
    assert stale == [], "defined in SPEC now: drop from NOT_IN_SPEC"


def test_the_table_of_contents_lists_every_section() -> None:
    assert toc_missing(SPEC.read_text(encoding="utf-8")) == []


def test_the_wrapper_changes_no_word_and_leaves_spec_as_it_is() -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import wrap_spec
    finally:
        sys.path.remove(str(ROOT / "tools"))
    spec = SPEC.read_text(encoding="utf-8")
    rule = "- **R-X-1 Long.** " + " ".join(["word"] * 60) + " `a code span` (L `x.rs:1-2`) - end"
    wrapped = wrap_spec.wrap("## 1. A\n\n" + rule + "\n- **R-X-2 Next.** two\n")
    assert wrapped.split() == ("## 1. A\n\n" + rule + "\n- **R-X-2 Next.** two\n").split()
    assert max(len(line) for line in wrapped.split("\n")) <= wrap_spec.WIDTH
    assert "\n\n- **R-X-2" in wrapped and "`a code span`" in wrapped and "(L `x.rs:1-2`)" in wrapped
    assert not any(line.startswith("  - ") for line in wrapped.split("\n"))
    assert wrap_spec.wrap(wrapped) == wrapped
    assert len(long_lines(spec, wrap_spec.WIDTH)) == len(long_lines(wrap_spec.wrap(spec),
                                                                    wrap_spec.WIDTH))


# ------------------------------------------------------------- each check shown able to fail


def test_the_checks_see_a_long_line_a_banned_citation_and_a_second_rule() -> None:
    assert long_lines("ok\n" + "x" * 121 + "\n| " + "y" * 300 + " |\n```\n" + "z" * 200
                      + "\n```\n") == [2]
    assert banned_citations("as the " + "DES" + "IGN says") == ["DES" + "IGN"]
    assert banned_citations("see R-DEP-6 and docs/upstream.md") == []
    two = "- **R-A-1 One.** text **R-A-2 Two.** more\n\n- **R-A-1 Again.** x\n\nsee **I-3** here"
    assert misplaced_definitions(two) == ["R-A-2", "I-3"]
    assert duplicates(defined_ids(two)) == ["R-A-1"]


def test_the_citation_check_sees_an_id_spec_does_not_define(tmp_path: Path) -> None:
    cited = tmp_path / "a.py"
    cited.write_text('"""R-DEP-6, R-DEP-99, I-5, D-77 and agent R-1, P-20260102-b2."""\n')
    found = unknown_citations([cited], {"R-DEP-6", "I-5"})
    assert set(found) == {"R-DEP-99", "D-77"}


def test_the_toc_check_sees_a_missing_section() -> None:
    text = "# T\n\n- [1. A](#1-a)\n\n## 1. A\n\n## 2. B\n"
    assert toc_missing(text) == ["2. B"]
