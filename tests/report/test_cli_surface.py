"""`lernie-check` as one command: subcommands, help, version, exit codes, --json, -q/-v,
progress on a terminal only, wall and CPU time, the bash completion."""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest
from lernie_stateful import cli

from tests.support.runners import CHECK_CLI, run_check

ROOT = Path(__file__).resolve().parents[2]
COMPLETION = ROOT / "docs" / "lernie-check.bash"


def _parsers() -> dict[str, argparse.ArgumentParser]:
    out = {}
    for name in cli.SUBCOMMANDS:
        ap = cli.parser_of(name)
        if ap is not None:
            out[name] = ap
    return out


def test_top_level_help_lists_every_subcommand_and_the_exit_codes() -> None:
    proc = run_check("--help")
    assert proc.returncode == 0 and proc.stderr == ""
    for name, sub in cli.SUBCOMMANDS.items():
        assert f"    {name}" in proc.stdout, name
        assert sub.summary.split()[0] in proc.stdout
    assert "exit codes:" in proc.stdout and "2  usage error" in proc.stdout
    assert "runs `check`" in proc.stdout


@pytest.mark.parametrize("name", sorted(cli.SUBCOMMANDS))
def test_every_subcommand_has_help(name: str) -> None:
    proc = run_check(name, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: lernie-check {name}")


def test_every_option_is_described_and_its_default_shown() -> None:
    parsers = _parsers()
    assert set(parsers) == set(cli.SUBCOMMANDS)
    for name, ap in parsers.items():
        text = ap.format_help()
        for action in ap._actions:
            assert action.help, f"{name} {action.option_strings or action.dest}: no help"
            default = action.default
            if (action.option_strings and default not in (None, False, [], argparse.SUPPRESS)
                    and not isinstance(default, bool)):
                flat = " ".join(text.split())
                assert f"(default: {default})" in flat or "default" in action.help, (
                    name, action.option_strings)


def test_every_subcommand_but_completion_answers_in_json() -> None:
    for name, ap in _parsers().items():
        opts = {o for a in ap._actions for o in a.option_strings}
        if name != "completion":
            assert {"--json", "-q", "-v"} <= opts, name


def test_mutants_help_is_help_not_an_unknown_mutant() -> None:
    proc = run_check("mutants", "--help")
    assert proc.returncode == 0 and "unknown mutant" not in proc.stderr
    assert "MUTANT" in proc.stdout and "--list" in proc.stdout


def test_version_of_both_commands() -> None:
    check = run_check("--version")
    assert check.returncode == 0 and check.stdout.startswith("lernie-check ")
    lernie = subprocess.run([sys.executable, "-m", "lernie_ref", "--version"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert lernie.returncode == 0 and lernie.stdout.startswith("lernie ")
    assert check.stdout.split()[1] == lernie.stdout.split()[1]


def test_lernie_version_imports_no_heavy_module() -> None:
    probe = ("import sys\nbefore = set(sys.modules)\nfrom lernie_ref.cli import main\n"
             "assert main(['--version']) == 0\n"
             "print(sorted(m for m in ('argparse', 're', 'typing', 'pathlib') "
             "if m in set(sys.modules) - before))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    version, loaded = proc.stdout.splitlines()
    assert version.startswith("lernie ") and loaded == "[]"


def test_unknown_subcommand_is_a_usage_error_in_one_line() -> None:
    proc = run_check("frobnicate")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("lernie-check: unknown subcommand 'frobnicate'")
    assert proc.stderr.count("\n") == 1


def test_no_subcommand_is_check_and_prints_wall_and_cpu_time() -> None:
    proc = run_check("--variant", "reference", "--scope", "races", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # not a terminal: no progress
    assert "wall time " in proc.stdout and ", CPU time " in proc.stdout
    assert proc.stdout.rstrip().endswith("all as expected")
    head = next(line for line in proc.stdout.splitlines() if line.startswith("profile/"))
    assert " cpu " in head and " time " not in head


def test_json_run_reports_wall_and_cpu_seconds() -> None:
    proc = run_check("check", "--json", "--variant", "reference", "--scope", "races")
    doc = json.loads(proc.stdout)
    assert doc["wall_seconds"] >= 0 and doc["cpu_seconds"] >= 0 and doc["jobs"] >= 1
    assert "cpu_seconds" in doc["results"][0]


def _on_a_terminal(*args: str) -> tuple[int, str]:
    """Run with stderr on a pseudo-terminal; what the terminal received."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*CHECK_CLI, *args], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 300)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    return proc.wait(timeout=300), seen.decode(errors="replace")


def test_progress_shows_on_a_terminal_and_is_cleared() -> None:
    code, seen = _on_a_terminal("--scope", "races", "--scope", "faults", "--jobs", "2",
                                "--variant", "reference", "--variant", "litany-0.0.12")
    assert code == 0
    assert "explorations done" in seen and "states so far" in seen
    assert seen.endswith("\r\x1b[K")  # the line is wiped before the product is read


def test_conform_shows_the_cases_scored_on_a_terminal() -> None:
    code, seen = _on_a_terminal("conform", "--impl", "lernie", "-k",
                                "prompt-prints-a-root-id")
    assert code == 0
    assert "lernie-check conform: case " in seen and "failed so far" in seen
    assert seen.endswith("\r\x1b[K")


def test_quiet_silences_progress_even_on_a_terminal() -> None:
    code, seen = _on_a_terminal("-q", "--scope", "races", "--jobs", "2",
                                "--variant", "reference")
    assert code == 0 and seen == ""


def test_verbose_progress_as_lines_when_not_a_terminal() -> None:
    proc = run_check("-v", "--scope", "races", "--jobs", "2", "--variant", "reference",
                "--variant", "litany-0.0.12")
    assert proc.returncode == 0
    assert "explorations done" in proc.stderr and "\r" not in proc.stderr


def test_old_invocation_through_the_model_module_still_runs_every_subcommand() -> None:
    proc = subprocess.run([sys.executable, "-m", "lernie_spec.check", "mutants", "--list"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "tool-step-closes-debt-window" in proc.stdout


def test_completion_file_is_current_and_valid_bash() -> None:
    script = cli.completion_script()
    for name in cli.SUBCOMMANDS:
        assert name in script
    assert "--variant" in script and "--seeded-bug" in script and "bl-" not in script
    assert COMPLETION.read_text(encoding="utf-8") == script, (
        "docs/lernie-check.bash is stale: lernie-check completion > docs/lernie-check.bash")
    subprocess.run(["bash", "-n", str(COMPLETION)], check=True, timeout=30)


def test_completion_completes_subcommands_and_choices(tmp_path: Path) -> None:
    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        probe = (f"source {COMPLETION}\nCOMP_WORDS=(lernie-check {line})\n"
                 f"COMP_CWORD={len(words)}\n_lernie_check\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"")
        if line.endswith(" ") or not words:
            probe = probe.replace(f"COMP_WORDS=(lernie-check {line})",
                                  f"COMP_WORDS=(lernie-check {line} '')")
        out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True,
                             timeout=30, check=True, cwd=tmp_path)
        return out.stdout.split()

    assert complete("mu") == ["mutants"]
    assert "--trace" in complete("check", "--tr")
    assert complete("check", "--format", "mer") == ["mermaid"]
    assert "--until-caught" in complete("bugs", "--un")
