"""R-WS-3, R-WS-5, R-SCAN-6, R-STATUS-1: the batched reads of scan and status answer what
git answers one ref at a time, and the sweep uses a snapshot value only when git's files
confirm it under the agent's lock."""

from __future__ import annotations

from lernie_ref.actors.readings import Refs, mark_value
from lernie_ref.actors.sweep import scan
from lernie_ref.core.clock import FixedClock
from lernie_ref.core.vocab import MarkKind
from lernie_ref.operator.status import render_json, status
from lernie_ref.substrate.reffiles import RefFiles
from lernie_ref.substrate.refsnap import RefSnapshot, confirm, names_at
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import RecordingLauncher
from tests.support.history import git
from tests.support.scenarios import MARKED_KID as KID
from tests.support.scenarios import MARKED_OTHER as OTHER
from tests.support.scenarios import MARKED_ROOT as ROOT
from tests.support.scenarios import marked_world
from tests.support.workspaces import FIXTURE_NS


def _one_by_one(ws: Workspace, agent: str) -> tuple[str, str | None, str | None, str | None]:
    return (
        ws.branch_tip(agent),
        mark_value(ws, MarkKind.RETURNED, agent),
        mark_value(ws, MarkKind.BUDGET_EXHAUSTED, agent),
        mark_value(ws, MarkKind.STOPPED, agent),
    )


def test_r_ws_5_the_snapshot_answers_as_git_does_ref_by_ref(ws: Workspace) -> None:
    marked_world(ws)
    snapshot = RefSnapshot.read(ws.git, ws.repo_git)
    assert snapshot.agent_ids() == ws.agent_ids()
    for agent in ws.agent_ids():
        refs = snapshot.agent_refs(agent)
        assert refs is not None
        assert (refs.tip, refs.returned, refs.budget, refs.stopped) == _one_by_one(ws, agent)
        log = git(ws.repo_git, "log", "-1", "--format=%s", refs.tip)
        assert refs.subject == log


def test_r_scan_6_confirm_uses_the_snapshot_only_while_git_files_agree(ws: Workspace) -> None:
    marked_world(ws)
    snapshot = RefSnapshot.read(ws.git, ws.repo_git)
    files = RefFiles(ws.repo_git)
    assert confirm(snapshot, files, ROOT) == snapshot.agent_refs(ROOT)
    # Packed refs answer the same (git moves loose refs into packed-refs on gc).
    git(ws.repo_git, "pack-refs", "--all")
    assert not (ws.repo_git / "refs" / "heads" / "agents" / ROOT).exists()
    for agent in (ROOT, OTHER, KID):
        assert confirm(snapshot, files, agent) == snapshot.agent_refs(agent)
    # A mark that moved after the snapshot (or appeared) is never taken from it.
    ws.set_mark(MarkKind.RETURNED, ROOT, ws.branch_tip(ROOT))
    assert confirm(snapshot, files, ROOT) is None
    assert Refs(ws, ROOT, confirm(snapshot, files, ROOT)).mark(MarkKind.RETURNED) == (
        ws.branch_tip(ROOT)
    )
    # ... and a moved mark inside packed-refs is seen too.
    git(ws.repo_git, "pack-refs", "--all")
    ws.git.run(ws.repo_git, ["update-ref", "-d", f"refs/lernie/returned/{KID}"])
    assert confirm(snapshot, files, KID) is None
    fresh = RefSnapshot.read(ws.git, ws.repo_git)
    assert confirm(fresh, files, KID) == fresh.agent_refs(KID)


def test_r_status_1_names_in_one_batch_match_the_name_blob(ws: Workspace) -> None:
    marked_world(ws)
    # A name committed by a tool: bytes that are not UTF-8 make the batch defer to git.
    odd = "20260711T000000Z-00000004"
    ws.create_root_agent(odd, "", "goal")
    (ws.worktree(odd) / "name").write_bytes(b"caf\xe9 \n")
    git(ws.worktree(odd), "commit", "-qam", "rename")
    tips = {a: ws.branch_tip(a) for a in ws.agent_ids()}
    names = names_at(ws.git, ws.repo_git, tips)
    for agent, name in names.items():
        assert name is None or name == ws.agent_name(agent)
    assert names[ROOT] == "boss" and names[KID] == "kid" and names[OTHER] == ""
    assert [r.name for r in status(ws)] == [ws.agent_name(a) for a in ws.agent_ids()]


def test_r_status_1_status_and_scan_read_the_same_from_loose_and_packed_refs(
    ws: Workspace,
) -> None:
    marked_world(ws)
    for agent in (ROOT, OTHER, KID):
        ws.inbox_dir(agent).mkdir(parents=True, exist_ok=True)
    before = render_json(status(ws))
    git(ws.repo_git, "pack-refs", "--all")
    assert render_json(status(ws)) == before
    clock = FixedClock(FIXTURE_NS)
    packed = scan(ws, RecordingLauncher(), clock).json_text()
    assert packed == scan(ws, RecordingLauncher(), clock).json_text()
