"""Message accounting (SPEC I-5, R-DEP-6): every message a writer accepted is delivered or
pending exactly once, byte for byte. The reference passes; an implementation that drops or
doubles a message it accepted is caught, by the flood and by the outcome programs alike,
from the files and what the kit sent (no model).

The planted bugs wrap the reference CLI: the kit sees only argv, exit codes and files."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from lernie_stateful.conform.adapter import Adapter, load
from lernie_stateful.conform.flood import flood
from lernie_stateful.conform.outcome import Input, Program, check
from lernie_stateful.conform.session import prepared

LOSSY = '''
import subprocess, sys
args = sys.argv[1:]
if args[0] == "message" and args[-1] in ("flood message 3 of writer 1", "dropped"):
    sys.exit(0)  # accepted, never written
runs = 2 if args[0] == "message" and args[-1] in ("flood message 2 of writer 2",
                                                  "doubled") else 1
for _ in range(runs):
    p = subprocess.run([sys.executable, "-m", "lernie_ref", *args])
sys.exit(p.returncode)
'''


def lossy(tmp_path: Path) -> Adapter:
    script = tmp_path / "lossy_impl.py"
    script.write_text(LOSSY)
    text = resources.files("lernie_stateful.conform").joinpath(
        "adapters", "lernie.toml").read_text(encoding="utf-8")
    text = text.replace('command = ["{python}", "-m", "lernie_ref"]',
                        f'command = ["{{python}}", "{script}"]')
    path = tmp_path / "lossy.toml"
    path.write_text(text)
    return load(str(path))


def test_the_flood_passes_on_the_reference(tmp_path: Path) -> None:
    with prepared(load("lernie"), tmp_path) as live:
        result = flood(live, tmp_path / "ws", writers=3, per_writer=4)
    assert result.passed, result.one_line()
    assert (result.accepted, result.found) == (12, 12)


def test_the_flood_reports_a_message_lost_and_one_doubled(tmp_path: Path) -> None:
    with prepared(lossy(tmp_path), tmp_path) as live:
        result = flood(live, tmp_path / "ws", writers=2, per_writer=3)
    assert not result.passed
    assert result.accepted == 6 and result.found == 6  # one missing, one twice
    assert "P: 1 of 7 accepted messages neither delivered nor pending (lost)" in result.faults
    assert "P: 1 accepted messages found more than once (duplicated)" in result.faults
    assert result.one_line().startswith("6 messages from 2 concurrent writers: 6 accepted, "
                                        "6 found")


def test_an_outcome_program_fails_on_a_lost_message_the_model_would_allow(
        tmp_path: Path) -> None:
    """Two messages race; the lossy build drops one it accepted. The final state (one
    delivery fewer) is not what the model reaches either, but the verdict names the
    accounting first: the kit knows what it sent."""
    p = Program("lose-one", (Input("prompt", "P", "hello"), Input("wait"),
                             Input("message", "P", "kept"),
                             Input("message", "P", "dropped", with_previous=True)))
    with prepared(lossy(tmp_path), tmp_path) as live:
        v = check(p, live, tmp_path / "ws")
    assert not v.passed and not v.inconclusive
    assert v.headline() == ("lose-one: message accounting: P: 1 of 3 accepted messages "
                            "neither delivered nor pending (lost)")


def test_the_reference_passes_the_same_program(tmp_path: Path) -> None:
    p = Program("lose-none", (Input("prompt", "P", "hello"), Input("wait"),
                              Input("message", "P", "kept"),
                              Input("message", "P", "dropped", with_previous=True)))
    with prepared(load("lernie"), tmp_path) as live:
        v = check(p, live, tmp_path / "ws")
    assert v.passed, v.text
