"""R-WS-8: the scan's quick look for stale git lock files checks the very paths the
holder would clear (the text paths agree with the ``pathlib`` ones for any ``.git``)."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from lernie_ref.substrate.gitlocks import _owned_lock_texts, owned_lock_files

AGENT = "20260101T000000Z-00000001"
PIECES = st.sampled_from(["/", ".", "..", "worktrees", "x", AGENT, "//", "/./", " ", "\n"])


@settings(max_examples=300, deadline=None)
@example(pointer="/ws/repo.git/worktrees/x/", plain=True)
@example(pointer="/ws/repo.git/worktrees/x/.", plain=True)
@example(pointer="/ws/repo.git/worktrees/./x", plain=True)
@example(pointer="/ws/repo.git/worktrees//x\n", plain=True)
@example(pointer="worktrees/x", plain=True)
@given(pointer=st.lists(PIECES, max_size=8).map("".join), plain=st.booleans())
def test_r_ws_8_text_lock_paths_are_the_pathlib_ones(pointer: str, plain: bool) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        repo, worktree = Path(tmp) / "repo.git", Path(tmp) / "wt"
        worktree.mkdir()
        (worktree / ".git").write_text(("gitdir: " if plain else "") + pointer)
        want = [os.fspath(p) for p in owned_lock_files(repo, worktree, AGENT)]
        assert _owned_lock_texts(repo, worktree, AGENT) == want


def test_r_ws_8_a_present_lock_is_seen(tmp_path: Path) -> None:
    from lernie_ref.substrate.gitlocks import clear_stale_locks

    root = tmp_path
    worktree = root / "agents" / AGENT
    admin = root / "repo.git" / "worktrees" / f"{AGENT}1"
    worktree.mkdir(parents=True)
    admin.mkdir(parents=True)
    (worktree / ".git").write_text(f"gitdir: {admin}\n")
    (admin / "index.lock").write_bytes(b"")
    removed = clear_stale_locks(root, worktree, AGENT, live_users=lambda w, a: [])
    assert removed == [admin / "index.lock"]
    assert not (admin / "index.lock").exists()
