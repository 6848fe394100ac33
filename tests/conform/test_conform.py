"""`lernie-check conform`: the reference scores 100% through its CLI as a subprocess; an
implementation that differs fails in the rule area it breaks; a bad adapter is one clear
error (SPEC §15 texts and exit codes, §2-4 bytes and names, §14 reports)."""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path

import pytest
from lernie_stateful.conform.adapter import REQUIRED_VERBS, AdapterError, load
from lernie_stateful.conform.run import cases_of, conform, scenario_files

from tests.support.runners import CHECK_CLI

CHECK = [*CHECK_CLI, "conform"]

# A stand-in for another implementation: the reference CLI behind a wrapper that changes
# one observable thing. The kit sees only argv, exit codes, output and files.
WRAPPER = '''
import subprocess, sys
from pathlib import Path
mode, args = sys.argv[1], sys.argv[2:]
p = subprocess.run([sys.executable, "-m", "lernie_ref", *args], capture_output=True)
out, err, code = p.stdout, p.stderr, p.returncode
if mode == "exit-2-on-errors" and code == 1:
    code = 2
if mode == "scan-report-words" and args[0] == "scan":
    out = out.replace(b"inboxes with no agent branch", b"inboxes without an agent")
if mode == "torn-deposit-after-scan" and args[0] == "scan":
    box = Path(args[1]) / "inbox" / "someone"
    box.mkdir(parents=True, exist_ok=True)
    (box / "user-001.md").write_bytes(b"---\\nfrom: us")
sys.stdout.buffer.write(out)
sys.stderr.buffer.write(err)
sys.exit(code)
'''


def reference_toml() -> str:
    return resources.files("lernie_stateful.conform").joinpath(
        "adapters", "lernie.toml").read_text(encoding="utf-8")


def wrapped(tmp_path: Path, mode: str) -> Path:
    script = tmp_path / "other_impl.py"
    script.write_text(WRAPPER)
    text = reference_toml().replace(
        'command = ["{python}", "-m", "lernie_ref"]',
        f'command = ["{{python}}", "{script}", "{mode}"]').replace(
        'name = "lernie (reference)"', f'name = "wrapped ({mode})"')
    path = tmp_path / f"{mode}.toml"
    path.write_text(text)
    return path


def test_every_scenario_cites_rule_ids_and_has_a_unique_id() -> None:
    cases = cases_of(scenario_files())
    ids = [str(c["id"]) for _, c in cases]
    assert len(ids) == len(set(ids)) and len(ids) >= 15
    spec = (Path(__file__).parents[2] / "spec" / "SPEC.md").read_text()
    for _, case in cases:
        rules = case["rules"]
        assert isinstance(rules, list) and rules, case["id"]
        for rule in rules:
            assert f"**{rule} " in spec or f"**{rule}." in spec, (case["id"], rule)


def test_reference_cli_scores_100_percent_as_a_subprocess() -> None:
    proc = subprocess.run([*CHECK, "--impl", "lernie", "--json"], capture_output=True,
                          text=True, timeout=600, check=False)
    card = json.loads(proc.stdout)
    failed = [r for r in card["results"] if r["status"] != "passed"]
    assert proc.returncode == 0 and failed == [], failed
    assert card["percent"] == 100.0 and card["passed"] == card["cases"]
    assert {"R-CLI", "R-DEP", "R-ID", "R-SCAN", "R-STOP", "R-TOOL", "R-TR", "R-WS",
            "I"} <= set(card["areas"])


def test_scorecard_text_and_markdown_name_the_areas() -> None:
    card = conform(load("lernie"), only="scan-of-a-quiet")
    assert [r.status for r in card.results] == ["passed"]
    text = card.text()
    assert "R-SCAN" in text and text.rstrip().endswith("score: 1/1 applicable cases (100%)")
    md = card.markdown().splitlines()
    assert md[2] == "| Area | Passed | Failed | N/A | First failure |"
    assert "| R-SCAN | 1 | 0 | 0 | — |" in md


def test_an_implementation_with_other_exit_codes_fails_r_cli(tmp_path: Path) -> None:
    proc = subprocess.run([*CHECK, "--impl", str(wrapped(tmp_path, "exit-2-on-errors")),
                           "-k", "unknown"], capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()[2:] if line}
    assert rows["R-CLI"][1:3] == ["0", "2"]  # stop and log of an unknown agent
    assert rows["R-ID"][1:3] == ["0", "2"]  # message and dispatch to an unknown agent
    assert "exited 2, expected 1" in proc.stdout


def test_an_implementation_with_another_scan_report_fails_r_scan_only(tmp_path: Path) -> None:
    card = conform(load(str(wrapped(tmp_path, "scan-report-words"))), only="scan")
    areas = card.areas()
    assert areas["R-SCAN"]["failed"] == 3 and areas["R-SCAN"]["passed"] == 1  # the JSON passes
    first = str(areas["R-SCAN"]["first_failure"])
    assert first.startswith("scan-of-a-quiet-workspace: `scan <ws>` stdout")
    assert "inboxes without" in first


def test_the_audit_runs_on_what_each_case_leaves(tmp_path: Path) -> None:
    card = conform(load(str(wrapped(tmp_path, "torn-deposit-after-scan"))),
                   only="scan-of-a-quiet")
    [result] = card.results
    assert result.status == "failed"
    assert result.difference.startswith("audit: VIOLATION format")
    assert "inbox/someone/user-001.md" in result.difference


def test_the_kit_model_drives_the_reference_through_its_command_model(tmp_path: Path) -> None:
    """docs/models.md JSON both ways: the kit's model stands in for a scripted model."""
    text = reference_toml().replace('MODEL = "scripted"',
                                    'MODEL = "command"\nMODEL_COMMAND = "{kit_model}"')
    path = tmp_path / "kit.toml"
    path.write_text(text)
    card = conform(load(str(path)), only="dispatch-forks", keep=tmp_path / "keep")
    assert [r.status for r in card.results] == ["passed"], card.results
    [reply] = (tmp_path / "keep").glob("*/ws/agents/*-*-*/messages/002-command.json")
    assert reply.read_text() == '{"content":[{"type":"text","text":"kit reply: build it"}]}'


@pytest.mark.parametrize("verb", REQUIRED_VERBS)
def test_an_adapter_missing_a_verb_is_one_clear_error(tmp_path: Path, verb: str) -> None:
    lines = [line for line in reference_toml().splitlines() if not line.startswith(f"{verb} =")]
    path = tmp_path / "incomplete.toml"
    path.write_text("\n".join(lines))
    with pytest.raises(AdapterError, match=f"no command line for verb '{verb}'"):
        load(str(path))
    if verb == "stop":
        proc = subprocess.run([*CHECK, "--impl", str(path)], capture_output=True, text=True,
                              check=False)
        assert proc.returncode == 1 and proc.stdout == ""
        assert proc.stderr == (f"lernie-check conform: adapter {path}: no command line for verb "
                               "'stop' (every adapter gives new, prompt, dispatch, message, "
                               "scan, stop; optional: scan_json, log, message_file)\n")


def test_an_optional_verb_missing_makes_its_cases_not_applicable(tmp_path: Path) -> None:
    lines = [line for line in reference_toml().splitlines() if not line.startswith("log =")]
    path = tmp_path / "nolog.toml"
    path.write_text("\n".join(lines))
    card = conform(load(str(path)), only="log-of")
    assert [r.status for r in card.results] == ["n/a"]
    assert card.areas()["R-LOG"]["n/a"] == 1
