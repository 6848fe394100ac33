"""Deposits: place, name, sequence, bytes, create-only, durability, returned mark (R-DEP)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lernie_ref import inbox
from lernie_ref.core.clock import FixedClock
from lernie_ref.core.errors import DepositError, NotAnAgentId, NotASender
from lernie_ref.core.frontmatter import sender_of
from lernie_ref.core.stepper import Stepper
from lernie_ref.core.vocab import Point
from lernie_ref.inbox import (
    Epitaph,
    deposit,
    deposit_actor,
    deposit_child_result,
    deposit_result,
    inbox_dir,
    pending,
)
from lernie_ref.substrate.workspace import Workspace
from tests.support.snapshots import snapshot
from tests.support.workspaces import add_child, add_root

FIXTURE = b"---\nfrom: user\ndeposited_at: 2026-07-11T00:00:00Z\n---\nsteer left\n"


def test_r_dep_1_4_plain_deposit_bytes_and_name(ws: Workspace, fixed_clock: FixedClock) -> None:
    path = deposit(ws.root, "R-1", "user", "steer left\n", fixed_clock)
    assert path == ws.root / "inbox" / "R-1" / "user-001.md"
    assert path.read_bytes() == FIXTURE
    assert os.listdir(path.parent) == ["user-001.md"]  # no temp left behind


def test_r_dep_5_8_result_bytes_and_returned_mark(ws: Workspace, fixed_clock: FixedClock) -> None:
    parent = add_root(ws, fixed_clock)
    child = add_child(ws, parent, fixed_clock)
    sha = ws.branch_tip(child)
    path = deposit_result(
        ws.root, parent, child, Epitaph.FINAL_RESPONSE, sha, "all done\n", fixed_clock
    )
    assert path.name == f"{child}-001.md"
    assert (
        path.read_bytes()
        == (
            f"---\nfrom: {child}\ndeposited_at: 2026-07-11T00:00:00Z\nepitaph: final-response\n"
            f"terminal_ref: {sha}\n---\nall done\n"
        ).encode()
    )
    assert ws.git.run(ws.repo_git, ["rev-parse", f"refs/lernie/returned/{child}"]).stdout == sha
    again = deposit_result(ws.root, parent, child, "stopped", sha, None, fixed_clock)
    assert again.name == f"{child}-002.md"
    assert again.read_bytes().endswith(
        b"epitaph: stopped\nterminal_ref: " + sha.encode() + b"\n---\n"
    )


def test_r_dep_8_mark_failure_is_reported_and_the_file_stays(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    with pytest.raises(DepositError) as caught:
        deposit_result(ws.root, "P-1", "P-1-c-2", Epitaph.DIED, "not-a-sha", None, fixed_clock)
    assert str(caught.value).startswith(
        'mark refs/lernie/returned/P-1-c-2: git ["update-ref", "refs/lernie/returned/P-1-c-2", '
        '"not-a-sha"] exited with exit status: 128: fatal: '
    )
    assert (inbox_dir(ws.root, "P-1") / "P-1-c-2-001.md").is_file()


def test_deposit_child_result_goes_to_the_parent(ws: Workspace, fixed_clock: FixedClock) -> None:
    root = add_root(ws, fixed_clock)
    child = add_child(ws, root, fixed_clock)
    sha = ws.branch_tip(child)
    assert deposit_child_result(ws.root, root, Epitaph.STOPPED, sha, None, fixed_clock) is None
    path = deposit_child_result(ws.root, child, Epitaph.STOPPED, sha, None, fixed_clock)
    assert path == inbox_dir(ws.root, root) / f"{child}-001.md"


def test_r_dep_2_sequence_across_foreign_and_malformed_names(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    box = inbox_dir(ws.root, "R-1")
    box.mkdir(parents=True)
    for name in [
        "user-abc.md",
        "user-agent-001.md",
        "p2-005.md",
        "user-007.md",
        ".user-050.md.x.tmp",
    ]:
        (box / name).write_bytes(b"x")
    assert deposit(ws.root, "R-1", "user", "a", fixed_clock).name == "user-008.md"
    assert deposit(ws.root, "R-1", "p2", "b", fixed_clock).name == "p2-006.md"
    assert deposit(ws.root, "R-1", "user-agent", "c", fixed_clock).name == "user-agent-002.md"
    assert deposit(ws.root, "R-1", "p1", "d", fixed_clock).name == "p1-001.md"
    # every pre-existing file is untouched
    assert (box / "user-007.md").read_bytes() == b"x"


def test_r_dep_2_numbers_are_reused_after_delivery(ws: Workspace, fixed_clock: FixedClock) -> None:
    first = deposit(ws.root, "R-1", "user", "one", fixed_clock)
    first.rename(ws.root / "delivered.md")
    assert deposit(ws.root, "R-1", "user", "two", fixed_clock).name == "user-001.md"


def test_r_dep_3_sequence_grows_past_three_digits(ws: Workspace, fixed_clock: FixedClock) -> None:
    box = inbox_dir(ws.root, "R-1")
    box.mkdir(parents=True)
    (box / "user-999.md").write_bytes(b"x")
    assert deposit(ws.root, "R-1", "user", "a", fixed_clock).name == "user-1000.md"


def test_r_dep_6_same_sender_concurrent_deposits_never_overwrite(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    """Both writers list the inbox before either publishes: they compute the same number.
    Upstream's rename would silently replace one; here the second takes the next number."""
    a = Stepper(deposit_actor(ws.root, "R-1", "user", "from a", fixed_clock))
    b = Stepper(deposit_actor(ws.root, "R-1", "user", "from b", fixed_clock))
    assert a.run_to(Point.DEPOSIT_LISTED).detail == "user-001.md"
    assert b.run_to(Point.DEPOSIT_LISTED).detail == "user-001.md"
    assert a.run_to(Point.DEPOSIT_PUBLISHED).detail == "user-001.md"
    assert b.run_to(Point.DEPOSIT_COLLIDED).detail == "user-001.md"
    assert b.run_to(Point.DEPOSIT_PUBLISHED).detail == "user-002.md"
    pa, pb = a.finish(), b.finish()
    assert pa.read_bytes().endswith(b"\n---\nfrom a")
    assert pb.read_bytes().endswith(b"\n---\nfrom b")
    assert sorted(os.listdir(pa.parent)) == ["user-001.md", "user-002.md"]


def test_r_dep_6_a_name_taken_after_listing_is_never_replaced(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    actor = Stepper(deposit_actor(ws.root, "R-1", "user", "mine", fixed_clock))
    actor.run_to(Point.DEPOSIT_TEMP_WRITTEN)
    squatter = inbox_dir(ws.root, "R-1") / "user-001.md"
    squatter.write_bytes(b"someone else's")
    path = actor.finish()
    assert path.name == "user-002.md"
    assert squatter.read_bytes() == b"someone else's"


def test_r_dep_6_the_temp_file_is_never_a_pending_deposit(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    actor = Stepper(deposit_actor(ws.root, "R-1", "user", "x", fixed_clock))
    box = inbox_dir(ws.root, "R-1")
    seen: list[list[str]] = []
    for point in (Point.DEPOSIT_TEMP_WRITTEN, Point.DEPOSIT_PUBLISHED):
        actor.run_to(point)
        names = os.listdir(box)
        assert any(n.startswith(".") and n.endswith(".tmp") for n in names)
        assert all(sender_of(n) is None for n in names if n.startswith("."))
        seen.append([p.name for p in pending(box)])
    assert seen == [[], ["user-001.md"]]
    actor.finish()
    assert os.listdir(box) == ["user-001.md"]


def test_r_dep_6_an_abandoned_actor_leaves_no_temp(ws: Workspace, fixed_clock: FixedClock) -> None:
    actor = deposit_actor(ws.root, "R-1", "user", "x", fixed_clock)
    stepper = Stepper(actor)
    stepper.run_to(Point.DEPOSIT_TEMP_WRITTEN)
    actor.close()
    assert os.listdir(inbox_dir(ws.root, "R-1")) == []


def test_r_dep_7_file_and_directory_are_fsynced(
    ws: Workspace, fixed_clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    path = deposit(ws.root, "R-1", "user", "x", fixed_clock)
    box = str(path.parent.resolve())
    assert len(synced) == 2
    assert os.path.dirname(synced[0]) == box and os.path.basename(synced[0]).startswith(".user-")
    assert synced[1] == box


@pytest.mark.parametrize("bad", ["", ".", "..", "../x", "a/b", "/abs", "a\\b", "a\0b"])
def test_r_id_3_hostile_recipient_or_sender_writes_nothing(
    ws: Workspace, fixed_clock: FixedClock, bad: str
) -> None:
    before = snapshot(ws.root)
    with pytest.raises(NotAnAgentId):
        deposit(ws.root, bad, "user", "x", fixed_clock)
    with pytest.raises(NotAnAgentId):
        deposit(ws.root, "R-1", bad, "x", fixed_clock)
    assert snapshot(ws.root) == before


def test_deposit_io_error_text(ws: Workspace, fixed_clock: FixedClock) -> None:
    (ws.root / "inbox" / "R-1").write_bytes(b"a file where the inbox should be")
    with pytest.raises(DepositError) as caught:
        deposit(ws.root, "R-1", "user", "x", fixed_clock)
    assert str(caught.value) == f"inbox i/o at {ws.root}/inbox/R-1: File exists (os error 17)"


def test_pending_orders_by_mtime_then_name(ws: Workspace) -> None:
    box = inbox_dir(ws.root, "R-1")
    box.mkdir(parents=True)
    stamps = {"b-001.md": 5, "a-001.md": 5, "c-001.md": 1, "user-x.md": 0, ".t-001.md.tmp": 0}
    for name, t in stamps.items():
        (box / name).write_bytes(b"")
        os.utime(box / name, ns=(t, t))
    assert [(p.name, p.sender, p.mtime_ns) for p in pending(box)] == [
        ("c-001.md", "c", 1),
        ("a-001.md", "a", 5),
        ("b-001.md", "b", 5),
    ]
    assert pending(ws.root / "inbox" / "missing") == []



def test_r_dep_12_a_deposit_published_late_is_listed_after_those_published_first(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    """A writer held up between its temp write and its publication (its temp's times an
    hour old: the state a writer stopped for an hour leaves) while another sender's
    deposit is published: the late one is stamped at its publication, so the listing
    (R-DEP-11, R-DRAIN-3) puts it after the one published first."""
    late = Stepper(deposit_actor(ws.root, "R-1", "user", "late", fixed_clock))
    late.run_to(Point.DEPOSIT_TEMP_WRITTEN)
    box = inbox_dir(ws.root, "R-1")
    (temp,) = os.listdir(box)
    old = os.stat(box / temp).st_mtime_ns - 3600 * 10**9
    os.utime(box / temp, ns=(old, old))
    early = deposit(ws.root, "R-1", "R-2", "early", fixed_clock)
    path = late.finish()
    assert [p.name for p in pending(box)] == [early.name, path.name]
    assert path.stat().st_mtime_ns >= early.stat().st_mtime_ns > old


def test_r_dep_12_deposits_published_one_after_another_are_listed_in_that_order(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    """Deposits published back to back by two senders whose names sort against their
    order ("R-2" before "user"): many share a tick of the kernel's file clock, so only a
    stamp finer than that tick keeps the listing in publication order."""
    published = []
    for i in range(40):
        sender = "user" if i % 2 == 0 else "R-2"
        published.append(deposit(ws.root, "R-1", sender, f"m{i}", fixed_clock).name)
    box = inbox_dir(ws.root, "R-1")
    stamps = [os.stat(box / n).st_mtime_ns for n in published]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert [p.name for p in pending(box)] == published


WRITER = """
import sys
from pathlib import Path
from lernie_ref.inbox import deposit
ws, tag, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
sys.stdin.readline()
for i in range(count):
    deposit(ws, "R-1", "user", f"{tag}:{i}:" + "x" * (i % 7) * 300)
"""


def test_r_dep_6_two_processes_same_sender_lose_nothing(ws: Workspace) -> None:
    count = 150
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(ws.root), tag, str(count)],
            stdin=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    for proc in procs:  # release both writers together
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=300) == 0
    box = inbox_dir(ws.root, "R-1")
    names = sorted(os.listdir(box))
    assert len(names) == 2 * count
    assert sorted(int(n[len("user-") : -len(".md")]) for n in names) == list(
        range(1, 2 * count + 1)
    )
    bodies = set()
    for name in names:
        data = (box / name).read_bytes()
        head, _, body = data.partition(b"\n---\n")
        assert head.startswith(b"---\nfrom: user\ndeposited_at: ")
        tag, i, pad = body.decode().split(":")
        assert pad == "x" * (int(i) % 7) * 300  # nothing truncated
        bodies.add((tag, int(i)))
    assert bodies == {(t, i) for t in ("a", "b") for i in range(count)}


def test_module_exports_required_names() -> None:
    for name in [
        "INBOX_DIR",
        "USER_SENDER",
        "inbox_dir",
        "parent_of",
        "deposit",
        "deposit_result",
        "deposit_child_result",
        "Epitaph",
        "Launcher",
        "AdvanceLauncher",
        "ProbeOutcome",
        "probe_and_launch",
        "cli_message",
        "resolve_cli_sender",
    ]:
        assert hasattr(inbox, name), name
    assert [e.value for e in Epitaph] == ["final-response", "stopped", "budget-exhausted", "died"]
    assert inbox.resolve_cli_sender(None) == "user"
    assert inbox.resolve_cli_sender("") == "user"
    assert inbox.resolve_cli_sender("A-1") == "A-1"


@pytest.mark.parametrize("bad", [".x", "a\nterminal_ref: deadbeef", "a\rb"])
def test_r_id_7_a_sender_whose_mail_no_reader_could_take_is_declined(
    ws: Workspace, fixed_clock: FixedClock, bad: str
) -> None:
    """D-18: a dot sender's file is never pending; a line break forges frontmatter."""
    before = snapshot(ws.root)
    with pytest.raises(NotASender):
        deposit(ws.root, "R-1", bad, "x", fixed_clock)
    assert snapshot(ws.root) == before


@pytest.mark.parametrize("form", ["text", "text/", "path"])
def test_r_dep_1_a_relative_workspace_gets_the_path_of_the_file_written(
    ws: Workspace, fixed_clock: FixedClock, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    """The path a deposit returns is the file it published, for a workspace named relative
    to the working directory too (it once named the inbox twice: ``w/inbox/R-1/w/inbox/...``),
    in the type it was given."""
    monkeypatch.chdir(ws.root.parent)
    name = ws.root.name
    where = {"text": name, "text/": name + "/", "path": ws.root.relative_to(ws.root.parent)}[form]
    path = deposit(where, "R-1", "user", "steer left\n", fixed_clock)
    assert type(path) is type(where)
    assert os.path.normpath(path) == os.path.join(name, "inbox", "R-1", "user-001.md")
    assert os.path.samefile(path, ws.root / "inbox" / "R-1" / "user-001.md")
    assert inbox_dir(where, "R-1") == type(where)(os.path.join(where, "inbox", "R-1"))


def test_r_dep_2_the_number_is_read_from_every_name_of_a_long_listing(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    """R-DEP-2 over a listing of many names of several shapes (the number is read from the
    whole listing at once): one above the sender's largest u32, whatever else is there."""
    box = inbox_dir(ws.root, "R-1")
    box.mkdir(parents=True)
    names = [f"user-{k:03d}.md" for k in range(1, 300, 7)] + [
        "user-+400.md", "user-4294967296.md", "user-\u0665\u0660\u0660.md", "user-1_000.md",
        "user- 900.md", "user-450.md.tmp", ".user-999.md.1.abcdefabcdef.tmp", "p2-977.md",
        "xuser-800.md", "user-x-600.md",
    ]  # fmt: skip
    for name in names:
        (box / name).write_bytes(b"x")
    assert deposit(ws.root, "R-1", "user", "a", fixed_clock).name == "user-401.md"
    assert deposit(ws.root, "R-1", "p2", "b", fixed_clock).name == "p2-978.md"
    assert deposit(ws.root, "R-1", "user-x", "c", fixed_clock).name == "user-x-601.md"
