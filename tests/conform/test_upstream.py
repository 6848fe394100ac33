"""The kit scores a real, independently written implementation: upstream lernie 0.0.11, the
Rust harness with its model adapter bz, driven through its command line and the kit's
scripted model server (docs/upstream.md).

The binary is test data beside the repository (``../shared/upstream/``); each module run
unpacks it into a temporary directory. Where it is absent the tests skip with one line.
Only verdicts that do not depend on timing are asserted: exact-interface texts, an outcome
whose kill is aimed at a moment upstream cannot escape, and the flood's accounting (whose
loss is a race: the kit must report it when it happens and agree with the disk)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from lernie_stateful.audit import audit
from lernie_stateful.conform.adapter import Adapter, AdapterError, load
from lernie_stateful.conform.flood import flood
from lernie_stateful.conform.outcome import agent_ids, check, load_programs
from lernie_stateful.conform.run import (
    Scorecard,
    conform,
    outcome_check,
    program_file,
    scenario_files,
)
from lernie_stateful.conform.session import prepared

from tests.support.runners import CHECK_CLI

REPO = Path(__file__).resolve().parents[2]
TARBALL = REPO.parent / "shared" / "upstream" / "lernie-0.0.11-linux-x86_64.tar.gz"
NAME = "upstream-lernie-0.0.11"
CHECK = [*CHECK_CLI, "conform"]


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The unpacked ``lernie-0.0.11`` directory (the archive beside the repository, or the
    one ``LERNIE_UPSTREAM_TARBALL`` names)."""
    tarball = Path(os.environ.get("LERNIE_UPSTREAM_TARBALL", TARBALL))
    if not tarball.is_file():
        pytest.skip("upstream lernie 0.0.11 is not beside the repository (../shared/upstream/)")
    where = tmp_path_factory.mktemp("upstream")
    subprocess.run(["tar", "-xzf", str(tarball), "-C", str(where)], check=True)
    return where / "lernie-0.0.11"


@pytest.fixture
def adapter(upstream: Path) -> Adapter:
    return load(NAME, environ={"LERNIE_UPSTREAM_DIR": str(upstream)})


def test_the_upstream_adapter_says_in_one_line_where_the_binary_must_be(tmp_path: Path) -> None:
    with pytest.raises(AdapterError, match=r"set LERNIE_UPSTREAM_DIR to the unpacked "
                                           r"lernie-0\.0\.11 directory"):
        load(NAME, environ={})
    with pytest.raises(AdapterError, match=r"LERNIE_UPSTREAM_DIR=.* is not the unpacked "
                                           r"lernie-0.0.11 directory .*\(no bin/lernie in it\)"):
        load(NAME, environ={"LERNIE_UPSTREAM_DIR": str(tmp_path)})
    env = {k: v for k, v in os.environ.items() if k != "LERNIE_UPSTREAM_DIR"}
    proc = subprocess.run([*CHECK, "--impl", NAME], capture_output=True, text=True, env=env,
                          check=False)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("lernie-check conform: adapter upstream-lernie-0.0.11: set "
                                  "LERNIE_UPSTREAM_DIR")


def test_nothing_of_upstream_is_in_the_reference() -> None:
    """The adapter lives in the kit; lernie_ref knows nothing of upstream's binary."""
    for path in (REPO / "lernie_ref").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for word in ("LERNIE_UPSTREAM_DIR", "BRAZEN_CONFIG", "brazen", "upstream-lernie"):
            assert word not in text, f"{path} names {word}"


STABLE = {
    # exact-interface verdicts that hold on every run: texts, exit codes, files
    "message-declines-an-id-with-a-slash": "passed",
    "message-declines-an-empty-id": "passed",
    "message-to-an-unknown-agent-creates-nothing": "passed",
    "stop-of-an-unknown-agent": "passed",
    "a-verb-outside-a-workspace-is-declined": "passed",
    "dispatch-from-an-unknown-parent-creates-nothing": "failed",  # `lernie dispatch worker:`
    "new-creates-the-layout": "failed",  # prints the workspace's path
    "new-refuses-an-existing-workspace": "failed",  # "destination … already exists …"
    "new-refuses-a-non-empty-directory": "failed",
    "log-of-an-unknown-agent": "n/a",  # no `log` verb
}


def test_upstream_exact_interface_verdicts(adapter: Adapter) -> None:
    files = [f for f in scenario_files() if f[0] in ("ids.toml", "workspace.toml")]
    card = conform(adapter, files)
    got = {r.id: r.status for r in card.results}
    assert {k: got.get(k) for k in STABLE} == STABLE
    why = {r.id: r.difference for r in card.results}
    assert "stdout '" in why["new-creates-the-layout"] and "/ws\\n'" in why[
        "new-creates-the-layout"]
    assert "lernie dispatch worker: no agent" in why[
        "dispatch-from-an-unknown-parent-creates-nothing"]


TOOL_VERDICTS = {
    # the tool programs (scenarios/tools.toml); all but the leftover process, which costs
    # its 30 s bound on upstream (the slow test runs it)
    "read-file-and-cd-read-relative-to-the-current-directory": "passed",
    "read-file-and-cd-never-leave-the-worktree": "failed",  # no containment (D-34)
    "apply-patch-adds-updates-moves-and-deletes": "passed",
    "a-patch-that-does-not-apply-changes-nothing": "passed",
    "apply-patch-never-writes-outside-the-worktree": "failed",  # D-34
    "apply-patch-never-writes-the-transcript": "failed",  # a forged entry (D-37)
    "bash-runs-in-the-current-directory-and-reports-output-and-exit": "passed",
    "bash-output-over-the-cap-is-cut-and-says-how-much": "passed",
    "a-stop-during-a-bash-call-ends-it-with-everything-it-started": "passed",  # exit 143
}
LEFTOVER = "a-bash-call-leaves-nothing-running"


def _tool_programs(*dropped: str) -> list[tuple[str, str]]:
    head, *chunks = dict(scenario_files())["tools.toml"].split("\n[[case]]\n")
    kept = [c for c in chunks if not any(c.startswith(f'id = "{d}"') for d in dropped)]
    return [("tools.toml", "\n[[case]]\n".join([head, *kept]))]


def test_upstream_tool_programs_verdicts(adapter: Adapter, tmp_path: Path) -> None:
    """The same tool programs as the reference's: upstream's tools read, cd, patch and run
    alike, and reach outside the worktree and into the transcript (D-34, D-37)."""
    card = conform(adapter, _tool_programs(LEFTOVER), keep=tmp_path)
    got = {r.id: r.status for r in card.results}
    assert got == TOOL_VERDICTS
    why = {r.id: r.difference for r in card.results}
    assert why["read-file-and-cd-never-leave-the-worktree"].startswith(
        "tool result 1 of 6 ('Exit code: 0\\nkit secret\\n') is a success, expected an error")
    assert why["apply-patch-never-writes-outside-the-worktree"] == (
        "escaped-up.txt exists, expected nothing there")
    assert why["apply-patch-never-writes-the-transcript"].endswith(
        "/messages/900-user.md exists, expected nothing there")
    # the patch's forged entry takes number 900 and rides in the tool entry's commit (901)
    ws = tmp_path / "apply-patch-never-writes-the-transcript" / "ws"
    lines = [v.line() for v in audit(ws, adapter.layout).violations()]
    assert any("(R-TR-2, I-4)" in line and "900-user.md takes number 900" in line
               for line in lines), lines


def test_upstream_scan_revives_nobody_as_the_measured_profile_predicts(adapter: Adapter,
                                                                       tmp_path: Path) -> None:
    """I-20 (lernie-0.0.11-measured): P's driver is killed the moment its message leaves the
    inbox; upstream's scan reports it and relaunches nobody, an outcome the model never
    reaches. The kill is aimed, so the verdict does not depend on timing."""
    programs = load_programs(program_file("lernie-0.0.11").read_text(encoding="utf-8"))
    p = next(q for q in programs if q.id.startswith("i20-a-root-killed-as-its-mail"))
    ws = tmp_path / "ws"
    with prepared(adapter, tmp_path) as live:
        v = check(p, live, ws)
    assert not v.passed and not v.inconclusive, v.text
    assert "P answers: implementation 1, model 2" in v.diff
    assert "P work due: implementation True, model False" in v.diff


def _found_on_disk(ws: Path, aid: str) -> int:
    """User messages in the agent's branch history and its inbox, counted with git and a
    directory listing (not with the kit's readers)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    log = subprocess.run(["git", "-C", str(ws / "repo.git"), "log", "--format=%s",
                          f"agents/{aid}"], capture_output=True, text=True, env=env,
                         check=True).stdout
    landed = sum(1 for s in log.splitlines() if s.startswith("transcript ")
                 and s.split(": ", 1)[1].startswith("user ["))
    pending = len([f for f in os.listdir(ws / "inbox" / aid) if f.startswith("user-")])
    return landed + pending


def test_the_flood_on_upstream_is_accounted_as_the_disk_shows(adapter: Adapter,
                                                                tmp_path: Path) -> None:
    """Upstream's deposit is not create-only (D-1), so a same-sender flood may lose messages;
    whether it does is a race. Whatever happens, the kit's account agrees with the disk:
    a clean verdict means every accepted message is there, a loss is reported with its
    count."""
    ws = tmp_path / "ws"
    with prepared(adapter, tmp_path) as live:
        result = flood(live, ws, writers=4, per_writer=10)
    aid = agent_ids(ws, live)["P"]
    on_disk = _found_on_disk(ws, aid) - 1  # the prompt
    assert result.found == on_disk
    if result.passed:
        assert result.accepted == 40 and on_disk == 40
    else:
        text = result.one_line()
        assert result.faults or result.failures
        lost = [f for f in result.faults if "(lost)" in f]
        if lost:
            n = int(lost[0].split(": ", 1)[1].split(" of ", 1)[0])
            assert n >= 1 and result.accepted - n <= on_disk
        assert text.startswith("40 messages from 4 concurrent writers")


@pytest.mark.slow
def test_upstream_leaves_a_bash_calls_processes_running(adapter: Adapter) -> None:
    """D-37: a background job of a bash call, and one that left its group with setsid, both
    outlive the call on upstream; the kit's quiescence bound fails the program and names
    them."""
    card = conform(adapter, _tool_programs(*TOOL_VERDICTS))
    [result] = card.results
    assert (result.id, result.status) == (LEFTOVER, "failed")
    assert result.difference.startswith("no quiescence after 30s (still busy: ")
    assert "<ws>/leftover-job`" in result.difference
    assert "<ws>/leftover-session`" in result.difference


@pytest.mark.slow
def test_upstream_full_scorecard_and_predictions(adapter: Adapter) -> None:
    """The whole kit on upstream: the scenarios, the outcome programs, the flood and the
    profile's predictions; the confirmed predictions fail, the fixed historic bugs pass."""
    card = conform(adapter)
    outcome_check(adapter, card, 4, 0)
    assert card.applicable > 20 and card.passed < card.applicable
    pred = Scorecard("predictions")
    outcome_check(adapter, pred, 0, 0, program_file("lernie-0.0.11"))
    status = {r.id.split(":", 1)[1]: r.status for r in pred.results}
    assert status["i12-a-sibling-reply-is-not-answered-again"] == "failed"
    assert status["i12-i13-a-child-and-its-parent-answer-each-other"] == "failed"
    assert status["i20-a-child-killed-in-a-call-is-revived-by-a-scan"] == "failed"
    assert status["bl-a96a-a-question-to-a-child-is-answered-in-place"] == "passed"
    assert status["bl-4a6c-a-child-result-revives-its-parent"] == "passed"
