"""The aimed kill and the body check of the outcome check (R-DRAIN-4, R-DRAIN-2).

A driver killed the moment a deposit leaves the inbox shows whether the delivery can lose or
tear a message: the reference's delivery is one rename, so it loses nothing; the seeded
build ``drain-unlinks-before-commit`` (read, unlink, then write) loses or tears it. The kit
compares every message from the user byte for byte with what the program sent.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lernie_stateful.conform.adapter import load
from lernie_stateful.conform.outcome import (
    Input,
    Program,
    ProgramError,
    Run,
    _lock_holders,
    body_faults,
    check_program,
    judge,
    load_programs,
    reachable,
    regression_programs,
    run_program,
)
from lernie_stateful.conform.watch import DeliveryKill

from tests.support.runners import CHECK_CLI

PID = "a-driver-killed-as-a-large-message-leaves-the-inbox-loses-nothing"
AID = "20260101T000000Z-0000abcd"
HEAD = b"---\nfrom: user\ndeposited_at: 2026-01-01T00:00:00Z\n---\n"


def _program() -> Program:
    [p] = [p for p in regression_programs() if p.id == PID]
    return p


def _workspace(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A workspace as far as the kit reads it: agent P's name file, transcript and inbox."""
    ws = tmp_path / "ws"
    (ws / "agents" / AID / "messages").mkdir(parents=True)
    (ws / "agents" / AID / "name").write_text("P\n")
    (ws / "inbox" / AID).mkdir(parents=True)
    return ws, ws / "agents" / AID / "messages", ws / "inbox" / AID


def test_every_user_message_must_be_a_body_the_program_sent(tmp_path: Path) -> None:
    ws, messages, inbox = _workspace(tmp_path)
    big = Input("message", "P", "big news", pad=1000).content()
    assert len(big) == 1008 and big.startswith(b"big news\n")
    sent = {"P": [b"hello", big]}
    (messages / "001-user.md").write_bytes(HEAD + b"hello")
    (messages / "003-user.md").write_bytes(HEAD + big)
    (messages / "005-C.md").write_bytes(b"---\nfrom: C\n---\nnot the kit's to judge")
    (inbox / "user-001.md").write_bytes(HEAD + big)
    adapter = load("lernie")
    assert body_faults(ws, adapter, sent) == []

    (messages / "003-user.md").write_bytes(HEAD + big[:300])  # the write was cut short
    (messages / "007-user.md").write_bytes(HEAD + b"hello, again")
    (inbox / "user-001.md").write_bytes(HEAD[:10])  # torn inside the frontmatter
    assert body_faults(ws, adapter, sent) == [
        "P delivered: torn user:plain (300 of 1008 bytes)",
        "P delivered: user:plain with a body the program never sent (12 bytes)",
        "P pending: torn user:plain (0 of 1008 bytes)",
    ]


def test_a_torn_body_fails_a_program_whose_state_the_model_reaches() -> None:
    p = _program()
    search = reachable(p)
    assert search.complete and len(search.outcomes) == 1
    reached = next(iter(search.outcomes))
    torn = "P delivered: torn user:plain (4194250 of 33554440 bytes)"
    verdict = judge(p, Run(reached, [], [], [torn]), search)
    assert not verdict.passed and not verdict.inconclusive
    assert verdict.headline() == f"{PID}: a delivered or pending message is not the bytes " \
                                 "the program sent"
    assert verdict.diff == (torn,)
    assert verdict.text.endswith("difference:\n    " + torn)
    assert "  kill P when delivered\n  message P 'big news' + 33,554,432 bytes" in verdict.text
    assert judge(p, Run(reached, [], []), search).passed


@pytest.mark.parametrize(("step", "error"), [
    (Input("scan", when="delivered"), "`when` is for kill"),
    (Input("kill", "P", when="soon"), "`when` is for kill, one of delivered"),
    (Input("prompt", "S", "x", pad=10), "`pad` is for message"),
    (Input("message", "P", "x", pad=-1), "`pad` is for message, 1 to"),
])
def test_a_bad_aimed_kill_or_pad_is_one_clear_error(step: Input, error: str) -> None:
    with pytest.raises(ProgramError, match=error):
        check_program(Program("bad", (Input("prompt", "P", "x"), step)))


def test_aimed_kills_and_pads_round_trip_as_data() -> None:
    p = _program()
    assert Input("kill", "P", when="delivered") in p.inputs
    assert load_programs(p.as_toml()) == [p]


def test_the_aimed_kill_fires_on_a_deposit_that_arrived_after_it_was_armed(
        tmp_path: Path) -> None:
    """A real flock holder is found in /proc/locks and killed when the deposit leaves; an
    older deposit leaving, or a dot-temp, does not fire it."""
    ws, messages, inbox = _workspace(tmp_path)
    (inbox / "user-001.md").write_bytes(b"older")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         f"fd = os.open({str(inbox)!r}, os.O_RDONLY)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)"],
        stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        adapter = load("lernie")
        assert _lock_holders(ws, adapter, AID) == [holder.pid]
        watch = DeliveryKill(inbox, lambda: _lock_holders(ws, adapter, AID))
        try:
            os.rename(inbox / "user-001.md", messages / "001-user.md")  # armed before: ignored
            (inbox / ".user-002.md.1.tmp").write_bytes(b"temp")
            os.link(inbox / ".user-002.md.1.tmp", inbox / "user-002.md")
            os.unlink(inbox / ".user-002.md.1.tmp")  # a temp leaving: ignored
            os.rename(inbox / "user-002.md", messages / "002-user.md")
            assert holder.wait(timeout=30) == -9
        finally:
            watch.stop()
        assert watch.deposit == "user-002.md" and watch.killed == [holder.pid]
    finally:
        holder.kill()
        holder.wait()
    # the lock went with its holder
    fd = os.open(inbox, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_r_drain_4_the_reference_loses_nothing_when_killed_as_the_deposit_leaves(
        tmp_path: Path) -> None:
    """The delivery is a rename: killed right after it, the entry is in messages/, and the
    scan's revival commits the stray and answers it; both bodies are the bytes sent."""
    p = _program()
    run = run_program(p, load("lernie"), tmp_path / "ws")
    assert run.findings == [] and run.faults == [], run
    assert len(run.killed) == 1, run
    assert run.killed[0].startswith("P's holder (pid ") and run.killed[0].endswith(
        ".md left its inbox"), run
    assert dict(run.observation) == {
        "P": ((("user", "plain"), ("user", "plain")), (), 2, False, 0, False, False)}
    assert run.observation in reachable(p).outcomes
    aid = next((tmp_path / "ws" / "agents").iterdir())
    log = subprocess.run(["git", "-C", str(aid), "log", "--format=%s"], capture_output=True,
                         text=True, check=True).stdout
    assert log.startswith(f"transcript 004: scripted [{aid.name}]\n"
                          f"transcript: recover delivered stray [{aid.name}]\n")


def test_the_copying_delivery_build_loses_or_tears_the_message_cli(tmp_path: Path) -> None:
    """``drain-unlinks-before-commit``, as a subprocess CLI: the aimed kill lands between the
    unlink and the end of the write (10 of 10 runs caught it when measured; three tries)."""
    path = tmp_path / "one.toml"
    path.write_text(_program().as_toml())
    for _ in range(3):
        proc = subprocess.run([*CHECK_CLI, "conform", "--impl", "lernie", "--outcome-only",
                               "--seeded-bug", "drain-unlinks-before-commit", "--programs",
                               str(path), "--show-program"],
                              capture_output=True, text=True, timeout=600, check=False)
        if proc.returncode == 1:
            break
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("outcome "))
    assert row.split()[1:3] == ["0", "1"]
    diff = proc.stderr.split("difference:\n", 1)[1]
    assert diff.startswith(("    P delivered: torn user:plain (",
                            "    P delivered: missing user:plain")), proc.stderr
    assert f"program {PID}:" in proc.stderr
    assert "  killed: P's holder (pid " in proc.stderr
