"""R-SCAN-6, R-WS-8, R-STATUS-1, R-CLI-5: what scan and status read, and when.

The sweep reads each agent's transcript once per hold, its refs (by name and object id,
what the objects are only when asked) only when a decision needs them, and clears stale
git lock files only before it writes; status takes a name from the worktree's ``name``
file where it can. Each shortcut is checked here against the reading it replaces (the
fast and the slow path agree), and each skip against a planted bug that shows the
checks can fail.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lernie_ref.actors.sweep as sweep
from lernie_ref.actors.mark_repair import landed_result
from lernie_ref.actors.readings import (
    Refs,
    mark_value,
    may_owe_a_result,
    stray_terminal,
    unsent_reply,
)
from lernie_ref.actors.sweep import scan
from lernie_ref.cli import VERBS
from lernie_ref.cli.plain import plain_operator
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.vocab import MarkKind
from lernie_ref.inbox import RecordingLauncher, cli_dispatch, cli_prompt
from lernie_ref.operator.status import status, worktree_name
from lernie_ref.substrate import gitlocks
from lernie_ref.substrate.lock import try_acquire
from lernie_ref.substrate.reffiles import RefFiles
from lernie_ref.substrate.refsnap import ObjectFacts, RefOids
from lernie_ref.substrate.transcript import Transcript, entry_name
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Inline, Point, drive
from tests.support.history import git
from tests.support.scenarios import MARKED_KID as KID
from tests.support.scenarios import MARKED_OTHER as OTHER
from tests.support.scenarios import MARKED_ROOT as ROOT
from tests.support.scenarios import marked_world, reply_published_mark_left_behind

RETURNED = MarkKind.RETURNED


def _fast_refs(ws: Workspace, oids: RefOids, agent: str) -> Refs:
    files = RefFiles(ws.repo_git)
    facts = ObjectFacts(ws.git, ws.repo_git)
    return Refs(ws, agent, oids=lambda: oids.confirm(files, agent), facts=facts)


def _answers(refs: Refs) -> tuple[str, str | None, str | None, str | None, str]:
    tip = refs.tip()
    return (
        tip,
        refs.mark(MarkKind.RETURNED),
        refs.mark(MarkKind.BUDGET_EXHAUSTED),
        refs.mark(MarkKind.STOPPED),
        refs.subject(tip),
    )


def test_r_scan_6_refs_by_object_id_answer_as_git_does_ref_by_ref(ws: Workspace) -> None:
    """The fast path (names and object ids, object facts when asked) and the slow path
    (git, one ref at a time) agree: tags peeled, a blob mark is no mark, loose or packed."""
    marked_world(ws)
    for packed in (False, True):
        if packed:
            git(ws.repo_git, "pack-refs", "--all")
        oids = RefOids.read(ws.git, ws.repo_git)
        assert oids.agent_ids() == ws.agent_ids()
        for agent in (ROOT, OTHER, KID):
            assert _answers(_fast_refs(ws, oids, agent)) == _answers(Refs(ws, agent))


def test_r_scan_6_a_ref_moved_after_the_read_is_asked_of_git(ws: Workspace) -> None:
    marked_world(ws)
    oids = RefOids.read(ws.git, ws.repo_git)
    ws.set_mark(MarkKind.RETURNED, ROOT, ws.branch_tip(ROOT))  # after the read
    files = RefFiles(ws.repo_git)
    assert oids.confirm(files, ROOT) is None
    assert _fast_refs(ws, oids, ROOT).mark(RETURNED) == ws.branch_tip(ROOT)


def test_r_scan_6_an_agent_with_no_mark_needs_no_object_read(ws: Workspace) -> None:
    """Names and object ids answer every ref of an agent with no mark: the second
    ``for-each-ref`` (what the objects are) is never run for it."""
    ws.create_root_agent(ROOT, "boss", "goal")
    oids = RefOids.read(ws.git, ws.repo_git)
    files = RefFiles(ws.repo_git)
    facts = ObjectFacts(ws.git, ws.repo_git)
    refs = Refs(ws, ROOT, oids=lambda: oids.confirm(files, ROOT), facts=facts)
    assert (refs.tip(), refs.mark(RETURNED)) == (ws.branch_tip(ROOT), None)
    assert facts._by_oid is None  # never read


# ----------------------------------------------- the at-rest skip (R-SCAN-9, -10, -11)


def _owes_nothing(ws: Workspace, agent: str) -> bool:
    """R-SCAN-9, R-SCAN-10's stray and R-SCAN-11, read the slow way (git, fresh listings)."""
    tip = ws.branch_tip(agent)
    registry = frozenset(ws.agent_ids())
    return (
        landed_result(ws, agent, tip, registry.__contains__) is None
        and unsent_reply(ws, agent, tip, registry) is None
        and not stray_terminal(ws, agent, tip)
    )


def _situations(ws: Workspace) -> dict[str, str]:
    rec = RecordingLauncher()
    fresh = "20260711T000000Z-0000000a"
    ws.create_root_agent(fresh, "", "goal")  # never messaged: empty transcript
    dead_root = cli_prompt(ws, "work", "", rec)
    Inline(ws).crash_at(dead_root, Point.HOP_WARRANT)  # newest entry: delivered mail
    done_root = cli_prompt(ws, "answer", "", rec)
    drive(ws, done_root)  # newest entry: a final response owed to the operator
    orphan = cli_dispatch(ws, done_root, "sub", "", rec)
    Inline(ws).crash_at(orphan, Point.HOP_WARRANT)
    done_child = cli_dispatch(ws, done_root, "sub 2", "", rec)
    drive(ws, done_child)
    return {
        "fresh": fresh,
        "dead-root": dead_root,
        "done-root": done_root,
        "orphan": orphan,
        "done-child": done_child,
    }


def test_r_scan_6_the_sweep_skips_only_agents_that_can_owe_nothing(ws: Workspace) -> None:
    """Whenever the skip applies (no registered parent, newest entry not a terminal
    response), the full checks, read the slow way, find nothing either; and the agents
    that can owe something are never skipped."""
    agents = _situations(ws)
    # The orphan's parent loses its branch: the orphan counts as a root (R-SCAN-1).
    parent = agents["done-root"]
    git(ws.repo_git, "update-ref", "-d", f"refs/heads/agents/{parent}")
    registry = frozenset(ws.agent_ids())
    skipped = {
        name
        for name, agent in agents.items()
        if agent in registry
        and not may_owe_a_result(agent, registry, Transcript(ws.worktree(agent)))
    }
    assert skipped == {"fresh", "dead-root", "orphan"}
    for name in skipped:
        assert _owes_nothing(ws, agents[name]), name
    done_child = agents["done-child"]
    assert may_owe_a_result(done_child, registry, Transcript(ws.worktree(done_child)))


def test_planted_bug_a_sweep_that_skips_every_agent_at_rest_misses_a_mark_repair(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The skip is what stands between the sweep and R-SCAN-11 for a child at rest: a
    skip that ignored the registered parent leaves the mark behind (the check can fail)."""
    _, child, tip = reply_published_mark_left_behind(ws)
    monkeypatch.setattr(sweep, "may_owe_a_result", lambda *a: False)
    scan(ws, RecordingLauncher(), SystemClock())
    assert mark_value(ws, RETURNED, child) != tip  # the planted bug: no repair
    monkeypatch.undo()
    scan(ws, RecordingLauncher(), SystemClock())
    assert mark_value(ws, RETURNED, child) == tip


# ------------------------------------------------------------------- R-WS-8, deferred


def _stale_returned_lock(ws: Workspace, agent: str) -> Path:
    path = ws.repo_git / f"refs/lernie/returned/{agent}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ws.branch_tip(agent) + "\n")
    return path


def test_r_ws_8_the_sweep_clears_a_stale_lock_before_it_reads_refs_or_writes(
    ws: Workspace, capfd: pytest.CaptureFixture[str]
) -> None:
    """A dead child's obituary moves its returned mark: the stale lock of that mark is
    cleared first (with the notice), so the write succeeds."""
    rec = RecordingLauncher()
    root = cli_prompt(ws, "lead", "", rec)
    drive(ws, root)
    child = cli_dispatch(ws, root, "build it", "", rec)
    Inline(ws).crash_at(child, Point.HOP_WARRANT)  # died mid-work: an obituary is owed
    stale = _stale_returned_lock(ws, child)
    report = scan(ws, RecordingLauncher(), SystemClock())
    assert report.swept == [child]
    assert not stale.exists()
    assert mark_value(ws, RETURNED, child) == ws.branch_tip(child)
    assert "(R-WS-8)" in capfd.readouterr().err


def test_r_ws_8_a_hold_that_writes_nothing_leaves_a_stale_lock_to_the_next_holder(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A root at rest that can owe nothing (never messaged) gets neither a ref read nor a
    write from the sweep, so its stale lock is left for its next holder (a hop clears
    before its own first git call); one whose refs are read is cleared; planted bug: a
    sweep that never clears fails on its first write."""
    rec = RecordingLauncher()
    fresh = "20260711T000000Z-0000000a"
    ws.create_root_agent(fresh, "", "goal")
    ws.inbox_dir(fresh).mkdir(parents=True, exist_ok=True)
    root = cli_prompt(ws, "lead", "", rec)
    drive(ws, root)  # newest entry a final response: its refs are read (R-SCAN-9)
    untouched, read = _stale_returned_lock(ws, fresh), _stale_returned_lock(ws, root)
    scan(ws, RecordingLauncher(), SystemClock())
    assert untouched.exists() and not read.exists()
    untouched.unlink()
    child = cli_dispatch(ws, root, "build it", "", rec)
    Inline(ws).crash_at(child, Point.HOP_WARRANT)
    _stale_returned_lock(ws, child)
    monkeypatch.setattr(gitlocks, "clear_stale_locks", lambda *a, **k: [])
    monkeypatch.setattr(type(ws.git), "run", _no_retry(type(ws.git).run))
    with pytest.raises(Exception, match=r"\.lock"):
        scan(ws, RecordingLauncher(), SystemClock())


def _no_retry(real):  # type: ignore[no-untyped-def]
    """The runner without its shared-lock retries (R-WS-9), so the planted bug fails fast."""

    def run(self, cwd, args, **kw):  # type: ignore[no-untyped-def]
        saved = getattr(self, "_lock_retries", None)
        if saved is not None:
            self._lock_retries = 0
        try:
            return real(self, cwd, args, **kw)
        finally:
            if saved is not None:
                self._lock_retries = saved

    return run


# --------------------------------------------------------------- R-STATUS-1, the name


def test_r_status_1_the_worktree_name_is_the_committed_name(ws: Workspace) -> None:
    marked_world(ws)
    for agent in ws.agent_ids():
        assert worktree_name(ws, agent) == ws.agent_name(agent)


def test_r_status_1_a_name_file_that_cannot_say_defers_to_the_tip(ws: Workspace) -> None:
    marked_world(ws)
    name = ws.worktree(ROOT) / "name"
    name.unlink()
    os.symlink("/etc/hostname", name)  # a link: never read through (R-WS-7)
    assert worktree_name(ws, ROOT) is None
    kid = ws.worktree(KID) / "name"
    kid.write_bytes(b"caf\xe9\n")  # not UTF-8
    assert worktree_name(ws, KID) is None
    rows = {r.id: r.name for r in status(ws)}
    assert rows[ROOT] == "boss" and rows[KID] == "kid"


def test_r_status_1_a_live_agent_shows_its_committed_name(ws: Workspace) -> None:
    """A tool step of a live executor may be rewriting ``name``: the tip's blob counts."""
    marked_world(ws)
    (ws.worktree(ROOT) / "name").write_text("half-written\n")
    ws.inbox_dir(ROOT).mkdir(parents=True, exist_ok=True)
    lock = try_acquire(ws.inbox_dir(ROOT))
    assert lock is not None
    try:
        rows = {r.id: (r.name, r.live) for r in status(ws)}
    finally:
        lock.release()
    assert rows[ROOT] == ("boss", True)


# ------------------------------------------------------------ R-CLI-5, the plain forms


def _argparse_ns(args: list[str]) -> tuple[str, str, bool] | None:
    parser = argparse.ArgumentParser(prog="lernie", exit_on_error=False)
    sub = parser.add_subparsers(dest="verb", required=True)
    import importlib

    for verb in VERBS:
        p = sub.add_parser(verb, exit_on_error=False)
        if verb in ("scan", "status"):
            importlib.import_module(f"lernie_ref.cli.{verb}").configure(p)
    try:
        ns = parser.parse_args(args)
    except (argparse.ArgumentError, SystemExit):
        return None
    return ns.verb, ns.workspace, ns.json


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["scan", "status", "--json", "ws", "-x", "--js", "--", "w s", ""]),
             max_size=4)
)
def test_r_cli_5_the_plain_operator_form_reads_as_argparse_does(args: list[str]) -> None:
    plain = plain_operator(list(args))
    if plain is not None:
        assert (plain.verb, plain.workspace, plain.json) == _argparse_ns(list(args))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 30), st.sampled_from(["user", "model", "tool"])),
             max_size=25),
    st.integers(0, 30),
)
def test_r_scan_6_a_transcript_read_again_in_one_hold_hands_out_the_same_entries(
    tmp_path_factory: pytest.TempPathFactory, made: list[tuple[int, str]], taken: int
) -> None:
    """The sweep reads one hold's transcript in several decisions (its condition, the
    result it may owe): however much of it one decision took, every later full reading
    gives what one full reading of the directory gives."""
    worktree = tmp_path_factory.mktemp("worktree")
    (worktree / "messages").mkdir()
    for seq, origin in made:
        (worktree / "messages" / entry_name(seq, origin, origin != "model")).write_text("x")
    fresh = [(e.seq, e.origin, e.path.name) for e in Transcript(worktree).everything()]
    listed = Transcript(worktree)
    for _, _ in zip(range(taken), listed, strict=False):
        pass
    for _ in range(2):
        assert [(e.seq, e.origin, e.path.name) for e in listed.everything()] == fresh
