"""`lernie-check audit`: a clean workspace made by real drivers passes; each hand-made
corruption fails, naming the files or commits involved (I-4, I-5, I-11, I-12, I-14)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from lernie_stateful.audit import Finding, audit

from tests.support.history import blob, commit, copy_ws, entries_at, git, history
from tests.support.runners import CHECK_CLI
from tests.support.scenarios import build_team


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    ws = tmp_path_factory.mktemp("team") / "ws"
    return ws, build_team(ws)


def violations(ws: Path) -> list[Finding]:
    return [f for f in audit(ws).findings if f.severity == "violation"]


def only(found: list[Finding], check: str) -> Finding:
    hits = [f for f in found if f.check == check]
    assert hits, f"no {check} violation in {[f.line() for f in found]}"
    return hits[0]


def test_audit_clean_multi_agent_workspace_from_real_drivers_passes(
        team: tuple[Path, dict[str, str]]) -> None:
    ws, _ = team
    report = audit(ws)
    assert report.findings == [], [f.line() for f in report.findings]
    assert report.agents == 3
    assert report.results >= 4  # a's and b's replies, a's answer to b, b's stop obituary
    assert report.pending == 1  # the parked `stopped` obituary (pin 2)
    cmd = [*CHECK_CLI, "audit", str(ws), "--strict", "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["ok"] is True


def test_audit_renumbered_entry_is_named_with_its_commit(
        team: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """I-4: an entry renamed after it landed (003 becomes 013)."""
    ws = copy_ws(team[0], tmp_path / "ws")
    lead = team[1]["lead"]
    repo = ws / "repo.git"
    old = "messages/003-tool.json"
    count = len(entries_at(repo, f"agents/{lead}"))
    bad = commit(repo, f"agents/{lead}", f"transcript 013: tool [{lead}]",
                 add={"messages/013-tool.json": blob(repo, f"agents/{lead}", old)}, remove=[old])
    found = only(violations(ws), "numbering")
    assert bad[:12] in found.where and old in found.where
    assert any("013-tool.json" in f.message and f"counter says {count + 1}" in f.message
               for f in violations(ws))


def test_audit_duplicated_delivery_names_both_copies(
        team: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """I-5: a child's result delivered a second time."""
    ws = copy_ws(team[0], tmp_path / "ws")
    lead, a = team[1]["lead"], team[1]["a"]
    repo = ws / "repo.git"
    names = entries_at(repo, f"agents/{lead}")
    first = next(n for n in names if n.endswith(f"-{a}.md"))
    nxt = f"{len(names) + 1:03d}"
    bad = commit(repo, f"agents/{lead}", f"transcript {nxt}: {a} [{lead}]",
                 add={f"messages/{nxt}-{a}.md": blob(repo, f"agents/{lead}", f"messages/{first}")})
    found = only(violations(ws), "delivery")
    assert "delivered twice" in found.message
    assert any(first in w for w in found.where) and any(bad[:12] in w for w in found.where)


def test_i_11_audit_result_sent_again_a_second_later_is_delivered_twice(
        team: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """I-11, I-5: one terminal event's result deposited twice, the second copy stamped a
    second later (so its bytes differ from the first's), is still one result delivered twice."""
    ws = copy_ws(team[0], tmp_path / "ws")
    lead, a = team[1]["lead"], team[1]["a"]
    repo = ws / "repo.git"
    names = entries_at(repo, f"agents/{lead}")
    first = next(n for n in names if n.endswith(f"-{a}.md"))
    data = blob(repo, f"agents/{lead}", f"messages/{first}")
    stamp = re.search(rb"deposited_at: (\S+)", data)
    assert stamp is not None and b"terminal_ref: " in data
    later = data.replace(stamp.group(0), b"deposited_at: 2099-01-01T00:00:01Z")
    nxt = f"{len(names) + 1:03d}"
    bad = commit(repo, f"agents/{lead}", f"transcript {nxt}: {a} [{lead}]",
                 add={f"messages/{nxt}-{a}.md": later})
    found = only(violations(ws), "delivery")
    assert "result" in found.message and "delivered twice" in found.message
    assert any(first in w for w in found.where) and any(bad[:12] in w for w in found.where)


def test_audit_reply_with_no_debt_is_named(
        team: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """I-12: a final response whose window asked nothing, deposited anyway."""
    ws = copy_ws(team[0], tmp_path / "ws")
    lead, a = team[1]["lead"], team[1]["a"]
    repo = ws / "repo.git"
    nxt = f"{len(entries_at(repo, f'agents/{a}')) + 1:03d}"
    ref = commit(repo, f"agents/{a}", f"transcript {nxt}: scripted [{a}]",
                 add={f"messages/{nxt}-scripted.json":
                      b'{"content":[{"type":"text","text":"nobody asked"}]}'})
    git(repo, "update-ref", f"refs/lernie/returned/{a}", ref)
    deposit = ws / "inbox" / lead / f"{a}-001.md"
    deposit.write_bytes(f"---\nfrom: {a}\ndeposited_at: 2026-07-11T00:00:00Z\n"
                        f"epitaph: final-response\nterminal_ref: {ref}\n---\nnobody asked".encode())
    found = only(violations(ws), "results")
    assert "answers no debt" in found.message
    assert f"inbox/{lead}/{a}-001.md" in found.where


def test_audit_torn_pending_deposit_is_named(
        team: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """R-DEP-6: a published deposit is never half-written."""
    ws = copy_ws(team[0], tmp_path / "ws")
    a = team[1]["a"]
    (ws / "inbox" / a / "user-001.md").write_bytes(b"---\nfrom: user\ndeposited_a")
    found = only(violations(ws), "format")
    assert "torn" in found.message and found.where == (f"inbox/{a}/user-001.md",)


def test_audit_missing_delivery_commit_is_named(
        team: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """R-TR-3: a delivery folded into the next commit has no commit of its own."""
    ws = copy_ws(team[0], tmp_path / "ws")
    lead = team[1]["lead"]
    repo = ws / "repo.git"
    commits = history(repo, f"agents/{lead}")
    at = max(i for i, (_, s) in enumerate(commits) if s.startswith("transcript ")
             and "scripted" not in s and "tool" not in s)
    delivery = commits[at][1].split()[1].rstrip(":")
    parent = commits[at - 1][0]
    rewritten = []
    for sha, subject in commits[at + 1:]:  # replay later commits' trees on the cut history
        parent = commit(repo, f"agents/{lead}", subject, parent=parent,
                        tree=git(repo, "rev-parse", f"{sha}^{{tree}}"))
        rewritten.append(parent)
    found = only(violations(ws), "numbering")
    assert rewritten[0][:12] in found.where
    assert any(w.startswith(f"messages/{delivery}-") for w in found.where)
    assert "without its own commit" in found.message


def test_audit_mark_moved_back_is_named(
        team: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """I-14: ``returned`` must be the newest result's terminal_ref."""
    ws = copy_ws(team[0], tmp_path / "ws")
    a = team[1]["a"]
    repo = ws / "repo.git"
    creation = history(repo, f"agents/{a}")
    first_reply = next(sha for sha, s in creation if s == f"transcript 004: scripted [{a}]")
    git(repo, "update-ref", f"refs/lernie/returned/{a}", first_reply)
    found = only(violations(ws), "marks")
    assert found.where == (f"refs/lernie/returned/{a}",) and first_reply[:12] in found.message


def test_audit_cli_exit_1_and_json_names_the_file(
        team: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    ws = copy_ws(team[0], tmp_path / "ws")
    a = team[1]["a"]
    (ws / "inbox" / a / "user-001.md").write_bytes(b"---\nfrom: somebody\ndeposited_at: x\n---\n")
    cmd = [*CHECK_CLI, "audit", str(ws)]
    text = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert text.returncode == 1 and f"inbox/{a}/user-001.md" in text.stdout
    assert text.stdout.rstrip().splitlines()[-1].startswith("FAILED: 1 violations")
    js = subprocess.run([*cmd, "--json"], capture_output=True, text=True, check=False)
    assert js.returncode == 1
    body = json.loads(js.stdout)
    assert body["ok"] is False and body["findings"][0]["where"] == [f"inbox/{a}/user-001.md"]


def test_audit_not_a_workspace_is_one_line_exit_1(tmp_path: Path) -> None:
    cmd = [*CHECK_CLI, "audit", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("lernie-check audit: ") and proc.stderr.count("\n") == 1


def test_audit_names_a_goal_less_child_and_a_name_worn_twice(tmp_path: Path) -> None:
    """R-PROBE-6, R-ID-6/8: a child whose goal was never deposited (a dispatch killed
    between its branch and its deposit, in the old order) and a name two agents wear
    (a child branched from its parent and killed before its own commit) are violations
    of the ``names`` check; the clean workspace above shows none."""
    from lernie_ref.inbox import RecordingLauncher, cli_prompt
    from lernie_ref.substrate.workspace import create_workspace

    made = create_workspace(tmp_path / "ws")
    lead = cli_prompt(made, "lead", "lead", RecordingLauncher())
    assert [f for f in violations(made.root) if f.check == "names"] == []
    goal_less = f"{lead}-20260101T000000Z-00000001"
    made.create_child_agent(lead, goal_less, "kid", "never sent")
    found = only(violations(made.root), "names")
    assert found.agent == goal_less and "never sent" in found.message
    twin = f"{lead}-20260101T000000Z-00000002"
    git(made.repo_git, "update-ref", f"refs/heads/agents/{twin}", f"agents/{lead}")
    worn = [f for f in violations(made.root) if f.check == "names" and f.agent is None]
    assert worn and "'lead' is worn by 2 agents" in worn[0].message
