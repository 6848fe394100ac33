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
@example(pointer=f"/ws/repo.git/worktrees/{AGENT}\n", plain=True)  # as git writes it
@example(pointer=f"/ws/repo.git/worktrees/{AGENT}\n", plain=False)
@example(pointer=f"/ws//./worktrees/{AGENT}\n", plain=True)
@example(pointer=f" worktrees/{AGENT}\n", plain=True)
@example(pointer=f"/worktrees/{AGENT}\n\n", plain=True)
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


LOCK_PIECES = st.sampled_from(["x", AGENT, f"{AGENT}1", "..", "."])


@settings(max_examples=200, deadline=None)
@example(pointer="/ws/repo.git/worktrees//x\n", plain=True, admin="x", lock="index.lock")
@example(pointer=f"/ws/repo.git/worktrees/{AGENT}\n", plain=True, admin=AGENT, lock="HEAD.lock")
@example(pointer=f"/ws/repo.git/worktrees/{AGENT}\n", plain=True, admin=AGENT, lock=None)
@example(pointer=f"/ws/repo.git/worktrees/{AGENT}1\n", plain=True, admin=f"{AGENT}1",
         lock="index.lock")
@given(
    pointer=st.lists(PIECES, max_size=8).map("".join),
    plain=st.booleans(),
    admin=LOCK_PIECES,
    lock=st.sampled_from(["index.lock", "HEAD.lock", "config.lock", None]),
)
def test_r_ws_8_the_passs_look_from_descriptors_answers_as_the_paths_do(
    pointer: str, plain: bool, admin: str, lock: str | None
) -> None:
    """The sweep's :class:`LockLook` (descriptors of ``agents/`` and ``worktrees/``) sees
    a lock file exactly when the path look does, wherever the pointer leads."""
    import tempfile

    from lernie_ref.substrate.gitlocks import LockLook, worktree_lock_exists

    with tempfile.TemporaryDirectory() as tmp:
        repo, agents = Path(tmp) / "repo.git", Path(tmp) / "agents"
        worktree = agents / AGENT
        worktree.mkdir(parents=True)
        (repo / "worktrees" / admin).mkdir(parents=True, exist_ok=True)
        if lock is not None:
            (repo / "worktrees" / admin / lock).write_bytes(b"")
        pointed = pointer.replace("/ws/repo.git", os.fspath(repo))
        (worktree / ".git").write_text(("gitdir: " if plain else "") + pointed)
        look = LockLook(repo, agents)
        try:
            assert look.exists(AGENT) == worktree_lock_exists(repo, worktree, AGENT)
        finally:
            look.close()


def test_planted_bug_a_look_that_ignores_the_pointer_misses_a_renamed_admin(
    tmp_path: Path,
) -> None:
    """The property above can fail: a look at ``worktrees/<id>`` alone misses the lock
    of an admin directory git named ``<id>1``, which the path look sees."""
    from lernie_ref.substrate import gitlocks
    from lernie_ref.substrate.gitlocks import LockLook, worktree_lock_exists

    repo, agents = tmp_path / "repo.git", tmp_path / "agents"
    (agents / AGENT).mkdir(parents=True)
    admin = repo / "worktrees" / f"{AGENT}1"
    admin.mkdir(parents=True)
    (admin / "HEAD.lock").write_bytes(b"")
    (agents / AGENT / ".git").write_text(f"gitdir: {admin}\n")
    look = LockLook(repo, agents)
    real = gitlocks._admin_name
    try:
        assert look.exists(AGENT) and worktree_lock_exists(repo, agents / AGENT, AGENT)
        gitlocks._admin_name = lambda text, repo_git, worktree, agent_id: agent_id
        assert not look.exists(AGENT)
    finally:
        gitlocks._admin_name = real
        look.close()
