"""R-ID-9: an agent id is guarded once, where it enters, and travels as ``AgentId``.

Three sides of it: every edge declines a bad id with the R-ID-3 text and writes nothing;
a path builder given a plain ``str`` is a type error (mypy proves each path went through
the guard); and a hop of an id that was guarded already does not guard it again at every
step (before the type, one hop entered the guard 15 times).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lernie_ref.core import ids
from lernie_ref.core.clock import FixedClock
from lernie_ref.core.errors import NotAnAgentId
from lernie_ref.inbox import (
    RecordingLauncher,
    cli_dispatch,
    cli_message,
    cli_prompt,
    deposit,
    deposit_child_result,
    deposit_result,
)
from lernie_ref.substrate.gitrun import GitResult
from lernie_ref.substrate.refsnap import RefOids
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import Inline
from tests.support.snapshots import snapshot
from tests.support.workspaces import add_root

BAD = ["", ".", "..", "a/b", "../x", "/abs", "a\\b", "a\0b"]


def _r_id_3_text(agent: str) -> str:
    quoted = agent.replace("\\", "\\\\").replace('"', '\\"').replace("\0", "\\0")
    return (
        f'agent id "{quoted}" is not a single path component — an agent id is its branch name, '
        "the hyphenated descent `<a>-<b>-…` (R-ID-3); pass the id exactly as "
        "`lernie prompt` / `lernie dispatch` printed it"
    )


def _edges(ws: Workspace, clock: FixedClock, good: str) -> dict[str, Callable[[str], object]]:
    launcher = RecordingLauncher()
    return {
        "resolution (R-ID-6)": lambda bad: ws.resolve_agent(bad, "why"),
        "message": lambda bad: cli_message(ws, bad, "x", "user", launcher, clock),
        "dispatch": lambda bad: cli_dispatch(ws, bad, "x", "", launcher, clock),
        "deposit": lambda bad: deposit(ws.root, bad, "user", "x", clock),
        "result recipient": lambda bad: deposit_result(
            ws.root, bad, good, "done", "0" * 40, None, clock
        ),
        "result sender": lambda bad: deposit_result(
            ws.root, good, bad, "done", "0" * 40, None, clock
        ),
        "child result": lambda bad: deposit_child_result(
            ws.root, bad, "done", "0" * 40, None, clock
        ),
        "in-process hop": lambda bad: Inline(ws).run_chain(bad),
    }


@pytest.mark.parametrize("bad", BAD)
def test_r_id_9_every_edge_declines_a_bad_id_with_the_r_id_3_text(
    ws: Workspace, fixed_clock: FixedClock, bad: str
) -> None:
    good = add_root(ws, fixed_clock)
    before = snapshot(ws.root)
    for edge, call in _edges(ws, fixed_clock, good).items():
        with pytest.raises(NotAnAgentId) as caught:
            call(bad)
        assert str(caught.value) == _r_id_3_text(bad), edge
        assert snapshot(ws.root) == before, edge


def test_r_id_9_the_cli_edge_declines_with_the_r_id_3_line(ws: Workspace) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lernie_ref", "message", str(ws.root), "a/b", "hi"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == f"lernie message: {_r_id_3_text('a/b')}\n"


def test_r_id_9_listings_keep_only_ids(ws: Workspace, fixed_clock: FixedClock) -> None:
    """A ref below ``agents/`` whose rest is no single component names no agent: the
    registry and the status snapshot both list the real agent alone."""
    good = add_root(ws, fixed_clock)
    tip = ws.branch_tip(ids.require_agent_id(good))
    subprocess.run(
        ["git", "--git-dir", str(ws.repo_git), "update-ref", "refs/heads/agents/sub/x", tip],
        check=True, capture_output=True, timeout=60,
    )
    assert ws.agent_ids() == [good]
    assert RefOids.read(ws.git, ws.repo_git).agent_ids() == [good]


def test_r_id_9_a_path_builder_given_a_plain_str_is_a_type_error(tmp_path: Path) -> None:
    from mypy import api

    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from lernie_ref.core.ids import require_agent_id\n"
        "from lernie_ref.substrate.workspace import Workspace\n"
        "\n"
        "\n"
        "def unguarded(ws: Workspace, raw: str) -> None:\n"
        "    ws.inbox_dir(raw)\n"
        "    ws.worktree(raw)\n"
        "\n"
        "\n"
        "def guarded(ws: Workspace, raw: str) -> None:\n"
        "    agent = require_agent_id(raw)\n"
        "    ws.inbox_dir(agent)\n"
        "    ws.worktree(agent)\n"
    )
    out, _, status = api.run(["--strict", "--cache-dir", str(tmp_path / "cache"), str(snippet)])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1
    assert [e.split(":")[1] for e in errors] == ["6", "7"], out
    assert all('expected "AgentId"' in e for e in errors), out


def test_r_id_9_a_hop_of_a_guarded_id_does_not_guard_it_at_every_step(
    ws: Workspace,
) -> None:
    """Counted by a profiler hook on the guard's functions (nothing is patched): the hop
    harness guards the id it is handed once (its edge) and the existence check asks the
    predicate once; the hop itself trusts the type."""
    agent = cli_prompt(ws, "hello", "", RecordingLauncher())
    inline = Inline(Workspace(ws.root))
    guard = {ids.is_agent_id.__code__, ids.require_agent_id.__code__}
    entered: list[str] = []

    def count(frame: object, event: str, arg: object) -> None:
        code = getattr(frame, "f_code", None)
        if event == "call" and code in guard:
            entered.append(code.co_name)  # type: ignore[union-attr]

    sys.setprofile(count)
    try:
        inline.hop(agent)
    finally:
        sys.setprofile(None)
    assert entered, "the edge guards the id it is handed"
    assert len(entered) <= 4, entered


def test_r_id_9_only_the_ids_module_makes_an_agent_id() -> None:
    """Every ``AgentId(...)`` call of the implementation and the checkers is in
    ``lernie_ref/core/ids.py`` (the guard, the listing form, minting): no other module can
    bless a string without the guard."""
    import ast

    import lernie_ref

    package = Path(lernie_ref.__file__).parent
    roots = [package, package.parent / "stateful"]
    makers = []
    for root in roots:
        for source in sorted(root.rglob("*.py")):
            tree = ast.parse(source.read_text(encoding="utf-8"))
            makers.extend(
                f"{source.relative_to(root.parent)}:{node.lineno}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "AgentId"
            )
    assert makers, "the ids module makes them"
    assert {m.split(":")[0] for m in makers} == {"lernie_ref/core/ids.py"}, makers


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "-", ".", "..", "/", "\\", "\0", "", "x1"]),
                         max_size=4).map("".join), max_size=6))
def test_r_id_9_a_listing_keeps_exactly_the_names_the_guard_accepts(names: list[str]) -> None:
    """R-ID-3, R-ID-9: a listing's guard (applied to the whole listing at once when it can)
    keeps the names :func:`is_agent_id` accepts, in order, and no other."""
    assert ids.agent_ids_among(iter(names)) == [n for n in names if ids.is_agent_id(n)]


class _Printed:
    """A git runner that answers every call with fixed output (what ``for-each-ref``
    printed), to feed the reader lines git itself would not print."""

    def __init__(self, stdout: str) -> None:
        self.stdout = stdout

    def run(
        self, cwd: Path, args: Sequence[str], *, check: bool = True, input: bytes | None = None
    ) -> GitResult:
        return GitResult(0, self.stdout, "")


@pytest.mark.parametrize("odd", ["", "refs/heads/agents/c", "refs/heads/agents/c\0x\0y"])
def test_r_id_9_a_ref_line_that_is_not_a_name_and_an_id_names_no_agent(
    tmp_path: Path, odd: str
) -> None:
    """The registry's one ``for-each-ref`` read whole: a line that is not ``<name> NUL <oid>``
    is left out and every other line kept (as when each line is read alone)."""
    lines = ["refs/heads/agents/a\0" + "1" * 40, odd, "refs/heads/agents/b\0" + "2" * 40,
             "refs/lernie/returned/a\0" + "3" * 40]  # fmt: skip
    oids = RefOids.read(_Printed("\n".join(lines) + "\n"), tmp_path)
    assert oids.oids == {
        "refs/heads/agents/a": "1" * 40,
        "refs/heads/agents/b": "2" * 40,
        "refs/lernie/returned/a": "3" * 40,
    }
    assert oids.agent_ids() == ["a", "b"]
