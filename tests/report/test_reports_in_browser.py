"""The HTML reports (`--html FILE`) as a person sees them, in headless Chromium.

Each kind of report is made by the real command (the lost wakeup bl-9c8f and a lasso
of the model; a seeded-bug build of the reference through the conformance kit; an audit
of a corrupted workspace; the seeded bugs' table), loaded in the browser, and checked
for what is on the screen: the lanes, the highlighted step in its colour, the
explanation, the loop, the failing program's timeline and difference, the offending
commit and file; no console message and nothing fetched from elsewhere. Each
screenshot is kept under build/test-artefacts/ (or $LERNIE_TEST_ARTEFACTS).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lernie_stateful.conform.outcome import regression_programs

from tests.support.browser import ARTEFACTS, Loaded, chromium, count_colour, open_report
from tests.support.runners import run_check

pytestmark = pytest.mark.skipif(chromium() is None,
                                reason="no chromium on PATH (apt-get install chromium)")

BAD_RED = (198, 40, 40)  # the violating step's outline (#c62828)
LOOP_PURPLE = (106, 27, 154)  # a lasso's cycle (#6a1b9a)


def _self_contained(html: str) -> None:
    """No script, style, font or image from elsewhere: the one URL is the SVG namespace."""
    urls = set(re.findall(r"(?:https?:)?//[\w.-]+[^\s\"'<>)]*", html))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert "<link" not in html and "@import" not in html and "url(" not in html
    assert not re.search(r"<script[^>]+src=", html)


def _load(report: Path, name: str, height: int = 1000) -> Loaded:
    _self_contained(report.read_text(encoding="utf-8"))
    seen = open_report(report, ARTEFACTS / f"{name}.png", height=height)
    assert seen.console == [], seen.console
    return seen


def test_the_lost_wakeup_bl_9c8f_as_a_swimlane(tmp_path: Path) -> None:
    out = tmp_path / "lost-wakeup.html"
    proc = run_check("--variant", "bl-9c8f-no-release-rule", "--trace", "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    seen = _load(out, "check-lost-wakeup-bl-9c8f")
    dom = seen.dom
    lanes = re.findall(r'class="lane[^"]*" data-lane="([^"]+)"', dom)
    assert lanes == ["W:P", "D:P", "inbox", "locks"]
    assert re.findall(r'class="step violating" data-step="(\d+)"', dom) == ["6"]
    assert "I-7 (no lost wakeup) breaks at step 6" in dom
    assert "P's inbox still holds user-001 and nothing will wake it" in dom
    assert "R-LOCK-2" in dom and "probe P: BUSY (exits)" in dom
    # the highlight is drawn: the violating box's red outline and the explanation's bar
    assert count_colour(seen.screenshot, BAD_RED) > 300


def test_a_lasso_shows_its_cycle(tmp_path: Path) -> None:
    out = tmp_path / "lasso.html"
    proc = run_check("--variant", "bl-82d8-no-reply-debt", "--trace", "--invariant", "I-13",
                "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    seen = _load(out, "check-lasso-bl-82d8", height=2800)
    assert 'class="loop"' in seen.dom and "cycle: back to step 42" in seen.dom
    assert "I-13 (exchange termination) breaks in the 24-step cycle" in seen.dom
    assert "keep replying to each other forever" in seen.dom
    assert count_colour(seen.screenshot, LOOP_PURPLE) > 300
    # no step of a lasso is "the" violating one: the cycle is
    assert 'class="step violating"' not in seen.dom


def test_a_conformance_failure_of_a_seeded_bug_build(tmp_path: Path) -> None:
    [program] = [p for p in regression_programs()
                 if p.id == "mail-during-a-stopped-call-is-delivered"]
    programs = tmp_path / "one.toml"
    programs.write_text(program.as_toml(), encoding="utf-8")
    out = tmp_path / "conform.html"
    proc = run_check("conform", "--impl", "lernie", "--seeded-bug", "no-release-rule",
                "-k", "mail-that-lands-during", "--outcome", "--programs", str(programs),
                "--html", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    seen = _load(out, "conform-seeded-no-release-rule", height=1400)
    dom = seen.dom
    assert "Conformance of lernie with seeded bug no-release-rule" in dom
    assert "0/2 (0%)" in dom
    assert "failed: outcome:mail-during-a-stopped-call-is-delivered" in dom
    # the program's timeline: one input box per operator input, in its agent's lane
    assert len(re.findall(r'class="input" data-input="\d+"', dom)) == len(program.inputs)
    assert "the nearest model outcome" in dom
    assert "P pending: extra user:plain" in dom and "P delivered: missing user:plain" in dom
    assert "failed: mail-that-lands-during-a-stopped-call-is-delivered-after-the-release" in dom
    assert count_colour(seen.screenshot, BAD_RED) > 100


def test_an_audit_names_the_offending_commit_and_file(tmp_path: Path) -> None:
    from tests.support.history import blob, commit, copy_ws, entries_at
    from tests.support.scenarios import build_team

    team = tmp_path / "team" / "ws"
    ids = build_team(team)
    ws = copy_ws(team, tmp_path / "ws")
    lead, repo = ids["lead"], ws / "repo.git"
    old = "messages/003-tool.json"
    bad = commit(repo, f"agents/{lead}", f"transcript 013: tool [{lead}]",
                 add={"messages/013-tool.json": blob(repo, f"agents/{lead}", old)},
                 remove=[old])
    assert entries_at(repo, f"agents/{lead}")
    out = tmp_path / "audit.html"
    proc = run_check("audit", str(ws), "--html", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    seen = _load(out, "audit-renumbered-entry")
    text = seen.dom
    assert f"agent {lead}" in text
    commits = re.search(r'class="commits">offending commits: (.*?)</div>', text)
    assert commits and bad[:12] in commits.group(1)
    assert f"transcript 013: tool [{lead}]" in commits.group(1)  # the commit's subject
    files = re.search(r'class="files">offending files: (.*?)</p>', text)
    assert files and old in files.group(1)
    assert "FAILED" in text
    assert count_colour(seen.screenshot, BAD_RED) > 50


def test_the_seeded_bugs_table(tmp_path: Path) -> None:
    out = tmp_path / "bugs.html"
    # CI's budget for `lernie-check bugs` (.ci/run): every bug is caught within it
    proc = run_check("bugs", "--only", "no-release-rule", "--examples", "40", "--scope", "long",
                "--shrink", "0", "--seeds", "8", "--until-caught", "--html", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = _load(out, "bugs-no-release-rule")
    assert "seeded bugs" in seen.dom and "1 caught of 1" in seen.dom
    row = re.search(r"<b>no-release-rule</b>.*?</tr>", seen.dom, re.S)
    assert row and "<td>yes</td>" in row.group(0)


def test_the_browser_check_sees_a_console_error_and_a_remote_script(tmp_path: Path) -> None:
    """The checks above can fail: a page that logs an error, and one that loads a script
    from elsewhere, are both caught."""
    page = tmp_path / "planted.html"
    page.write_text("<!DOCTYPE html><html><body><p>planted</p>"
                    "<script>console.error('planted failure');</script></body></html>",
                    encoding="utf-8")
    seen = open_report(page, tmp_path / "planted.png")
    assert any("planted failure" in line for line in seen.console)
    with pytest.raises(AssertionError):
        _self_contained('<script src="https://cdn.example/x.js"></script>')
