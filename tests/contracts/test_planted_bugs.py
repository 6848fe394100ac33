"""Plant one bug per contract in a scratch copy of the package: CrossHair must report each.

Every case copies ``lernie_ref/`` and the harness module ``tests/support/bounded.py``
into its own directory under ``tmp_path``, replaces one exact snippet of the real
source (the test fails loudly if the snippet is gone, so it cannot silently test
nothing), and runs ``python -m crosshair check --analysis_kind=PEP316`` on the
contract that states the rule. The bugs are the one-character kind examples miss:
a debt window off by one, ``..`` accepted as an id, a parent that drops one token,
a sender split at the first hyphen, ``-0`` read as a number. A control run on the
unplanted copy shows the same contracts pass when nothing is planted.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUDGET = float(os.environ.get("LERNIE_PLANTED_BUDGET", "4"))
"""CPU seconds per condition; a planted bug is usually reported within the first second."""
SLOW_SEARCH = 30.0
"""CPU seconds for a plant whose counterexample CrossHair finds late (``Plant.budget``): a
harness of one condition stops at its first counterexample, so the budget costs only the
time to find it, and a search that needs 2 to 4 CPU-seconds on a quiet machine is not cut
short on a busy one (a budget of 4 once missed it there)."""


@dataclass(frozen=True)
class Plant:
    name: str
    rule: str
    file: str
    old: str
    new: str
    target: str
    budget: float = BUDGET


PLANTS = (
    Plant("dotdot-id-accepted", "R-ID-3", "lernie_ref/core/ids.py",
          'if agent_id in ("", ".", ".."):', 'if agent_id in ("", "."):',
          "lernie_ref.core.ids.is_agent_id"),
    Plant("parent-drops-one-token", "R-ID-1", "lernie_ref/core/ids.py",
          'return "-".join(tokens[:-2])', 'return "-".join(tokens[:-1])',
          "lernie_ref.core.ids.parent_of"),
    Plant("depth-counts-hyphens", "R-ID-2", "lernie_ref/core/ids.py",
          'return agent_id.count("-") // 2', 'return (agent_id.count("-") + 1) // 2',
          "lernie_ref.core.ids.depth"),
    Plant("u32-accepts-minus-zero", "R-DEP-3", "lernie_ref/core/frontmatter.py",
          'digits = s[1:] if s.startswith("+") else s',
          'digits = s[1:] if s.startswith(("+", "-")) else s',
          "lernie_ref.core.frontmatter.parse_u32"),
    Plant("lines-are-splitlines", "R-DEP-9", "lernie_ref/core/frontmatter.py",
          '*ended, last = s.split("\\n")', "*ended, last = s.splitlines() + ['']",
          "tests.support.bounded.lines_small"),
    Plant("trim-is-python-strip", "R-DEP-9", "lernie_ref/core/frontmatter.py",
          "while start < end and s[start] in _RUST_WS:",
          "while start < end and (s[start] in _RUST_WS or s[start].isspace()):",
          "tests.support.bounded.trim_edges"),
    Plant("sender-split-at-first-hyphen", "R-DEP-9", "lernie_ref/core/frontmatter.py",
          'sender, dash, tail = stem.rpartition("-")', 'sender, dash, tail = stem.partition("-")',
          "lernie_ref.core.frontmatter.deposit_name"),
    Plant("temp-file-read-as-deposit", "R-DEP-9", "lernie_ref/core/frontmatter.py",
          'if not sender or sender.startswith("."):', "if not sender:",
          "tests.support.bounded.sender_small"),
    Plant("next-number-reuses-the-largest", "R-DEP-2", "lernie_ref/core/frontmatter.py",
          "return best + 1", "return max(best, 1)",
          "tests.support.bounded.next_number", SLOW_SEARCH),
    Plant("ref-scan-runs-past-the-fence", "R-DEP-9", "lernie_ref/core/frontmatter.py",
          "        if line == FENCE:\n            return None\n",
          "        if line == FENCE:\n            continue\n",
          "tests.support.bounded.ref_first_wins"),
    Plant("first-epitaph-wins", "R-DEP-9", "lernie_ref/core/frontmatter.py",
          "        if value is not None:\n            epitaph = value\n",
          "        if value is not None and not epitaph:\n            epitaph = value\n",
          "tests.support.bounded.epitaph_last_wins"),
    Plant("plain-deposit-gains-a-newline", "R-DEP-4", "lernie_ref/core/frontmatter.py",
          'deposited_at: {iso}\\n---\\n{content}")', 'deposited_at: {iso}\\n---\\n{content}\\n")',
          "tests.support.bounded.plain_roundtrip"),
    Plant("grandchild-result-is-own", "R-DEP-10", "lernie_ref/core/frontmatter.py",
          "if parent_of(sender) != agent_id:", 'if not sender.startswith(agent_id + "-"):',
          "tests.support.bounded.debt_window"),
    Plant("budget-exhausted-warrants", "R-REL-2", "lernie_ref/core/vocab.py",
          "PARKED_EPITAPHS = frozenset({Epitaph.STOPPED.value, Epitaph.BUDGET_EXHAUSTED.value})",
          "PARKED_EPITAPHS = frozenset({Epitaph.STOPPED.value})",
          "tests.support.bounded.parked_by_epitaph"),
    Plant("seen-deposit-relaunches", "R-REL-1", "lernie_ref/actors/release.py",
          "(item.name, item.mtime_ns) not in seen and", "(item.name, item.mtime_ns) and",
          "tests.support.bounded.release_slots"),
    Plant("entry-split-at-last-hyphen", "R-TR-1", "lernie_ref/core/frontmatter.py",
          'head, dash, origin = stem.partition("-")', 'head, dash, origin = stem.rpartition("-")',
          "tests.support.bounded.entry_name_first_hyphen"),
    Plant("debt-window-off-by-one", "R-DEBT-2", "lernie_ref/core/debt.py",
          "if entry.seq <= previous:", "if entry.seq <= previous + 1:",
          "tests.support.bounded.debt_window"),
    Plant("self-note-asks-for-a-reply", "R-DEBT-3", "lernie_ref/core/debt.py",
          "    if entry.origin == agent_id:\n        return False\n", "",
          "tests.support.bounded.debt_window"),
    Plant("prompter-counts-results", "R-ADDR-2", "lernie_ref/core/debt.py",
          "if terminal_ref_of(entry.strict_text()) is None:", "if entry.strict_text():",
          "tests.support.bounded.prompter_slots"),
    Plant("tool-side-is-nothing-due", "R-STEP-3", "lernie_ref/core/warrant.py",
          'if history and history[-1][0] in ("user", "tool"):',
          'if history and history[-1][0] == "user":',
          "tests.support.bounded.warrant_slots"),
)  # fmt: skip

CONTROL_TARGETS = (
    ("lernie_ref.core.ids.is_agent_id", "lernie_ref.core.frontmatter.parse_u32"),
    ("tests.support.bounded.debt_window", "tests.support.bounded.warrant_slots"),
)

_ERROR = re.compile(r"^\S.*:\d+: error: (?P<msg>.*)$", re.MULTILINE)


def scratch_copy(where: Path) -> Path:
    """The package and the harness, as importable top-level code under ``where``."""
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "lernie_ref", where / "lernie_ref", ignore=skip)
    (where / "tests" / "support").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "support" / "bounded.py", where / "tests" / "support")
    (where / "tests" / "support" / "__init__.py").write_text("")
    return where


def plant(where: Path, bug: Plant) -> None:
    path = where / bug.file
    text = path.read_text(encoding="utf-8")
    assert text.count(bug.old) == 1, f"{bug.name}: the snippet to plant is not in {bug.file} once"
    path.write_text(text.replace(bug.old, bug.new), encoding="utf-8")


def crosshair(where: Path, *targets: str,
              budget: float = BUDGET) -> subprocess.CompletedProcess[str]:
    """PEP 316 contracts of ``lernie_ref``, or the ``asserts``-style harnesses of
    ``tests.support.bounded``, with ``budget`` CPU seconds per condition and path."""
    kind = "asserts" if targets[0].startswith("tests.support.") else "PEP316"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(where)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [
        sys.executable, "-m", "crosshair", "check", f"--analysis_kind={kind}",
        f"--per_condition_timeout={budget}", f"--per_path_timeout={budget}",
        f"--extra_plugin={ROOT / 'tools' / 'crosshair_plugin.py'}", *targets,
    ]  # fmt: skip
    return subprocess.run(command, cwd=where, env=env, capture_output=True, text=True, timeout=600)


def run_planted(base: Path, bug: Plant) -> tuple[Plant, subprocess.CompletedProcess[str]]:
    where = scratch_copy(base / bug.name)
    plant(where, bug)
    return bug, crosshair(where, bug.target, budget=max(BUDGET, bug.budget))


@pytest.mark.crosshair
def test_crosshair_reports_every_planted_bug(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        clean = scratch_copy(tmp_path / "control")
        controls = [pool.submit(crosshair, clean, *targets) for targets in CONTROL_TARGETS]
        outcomes = list(pool.map(lambda bug: run_planted(tmp_path, bug), PLANTS))
    missed = []
    for bug, proc in outcomes:
        found = _ERROR.search(proc.stdout)
        if proc.returncode != 1 or not found:
            missed.append(f"{bug.name} ({bug.rule}, {bug.target}): rc={proc.returncode}\n"
                          f"{proc.stdout[-800:]}{proc.stderr[-800:]}")
    assert not missed, "CrossHair did not report:\n" + "\n".join(missed)
    for control in controls:
        ok = control.result()
        assert ok.returncode == 0 and not _ERROR.search(ok.stdout), ok.stdout + ok.stderr


def test_every_planted_snippet_is_in_the_real_source() -> None:
    """Cheap guard run everywhere: a refactor that removes a snippet must update this table."""
    for bug in PLANTS:
        text = (ROOT / bug.file).read_text(encoding="utf-8")
        assert text.count(bug.old) == 1, f"{bug.name}: snippet not found once in {bug.file}"
    assert len({bug.name for bug in PLANTS}) == len(PLANTS)
