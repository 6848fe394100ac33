"""The CLI verbs ``new``, ``prompt``, ``dispatch``, ``message`` as real processes (R-CLI, R-PROBE).

Every error is one stderr line ``lernie <verb>: <text>`` with upstream's exact text, exit 1,
nothing on stdout, and nothing written (the workspace tree is byte-identical afterwards).
Most runs inject a recording launcher through ``tests/support/recording_cli.py``; one runs
the production launcher and waits for the launched driver.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from lernie_ref.core.clock import FixedClock
from lernie_ref.substrate.lock import try_acquire
from lernie_ref.substrate.workspace import Workspace
from tests.support.runners import RECORDING_CLI, run_cli
from tests.support.snapshots import snapshot
from tests.support.waits import wait_quiescent
from tests.support.workspaces import add_child, add_root

ROOT_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}")
DEPOSIT = re.compile(
    rb"---\nfrom: (.*)\ndeposited_at: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z\n---\n"
)


def not_a_component(agent: str) -> str:
    quoted = agent.replace("\\", "\\\\").replace('"', '\\"')
    return (
        f'agent id "{quoted}" is not a single path component — an agent id is its branch name, '
        "the hyphenated descent `<a>-<b>-…` (R-ID-3); pass the id exactly as "
        "`lernie prompt` / `lernie dispatch` printed it"
    )


def not_a_workspace(path: Path) -> str:
    return f"{path} is not a workspace (no repo.git) — create one with `lernie new` (R-WS-2)"


def no_agent(agent: str, reason: str) -> str:
    return (
        f'no agent "{agent}" in this workspace — {reason}; no agent has that id or wears '
        "that name: `lernie status <ws>` lists every agent with its name, `lernie prompt` / "
        "`lernie dispatch` start one"
    )


MESSAGE_REASON = "a message is addressed to an existing agent, by id or unique name (R-ID-6)"
DISPATCH_REASON = (
    "a dispatch forks a child of an existing agent, named by id or unique name (R-ID-6)"
)


class Cli:
    """Runs the shimmed CLI and reads the launches it recorded."""

    def __init__(self, tmp_path: Path) -> None:
        self.log = tmp_path / "launches.log"

    def __call__(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return run_cli(
            args,
            {"LAUNCH_LOG": str(self.log), **(env or {})},
            prefix=[sys.executable, RECORDING_CLI],
        )

    @property
    def launches(self) -> list[tuple[str, str]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text().splitlines()
        return [(a, b) for a, b in (line.split("\t") for line in lines)]


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def assert_declined(
    proc: subprocess.CompletedProcess[str], verb: str, text: str, exit_code: int = 1
) -> None:
    assert proc.stdout == ""
    assert proc.stderr == f"lernie {verb}: {text}\n"
    assert proc.returncode == exit_code


# ------------------------------------------------------------------------ new


def test_r_ws_1_new_creates_the_layout(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "ws"
    proc = run_cli(["new", str(target)])
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert sorted(p.name for p in target.iterdir()) == [
        "agents",
        "inbox",
        "lernie.toml",
        "repo.git",
        "steps",
    ]
    ws = Workspace(target)
    assert ws.git.run(ws.repo_git, ["rev-parse", "--is-bare-repository"]).stdout == "true"
    assert ws.git.run(ws.repo_git, ["symbolic-ref", "HEAD"]).stdout == "refs/heads/config/default"
    assert ws.agent_ids() == []


def test_r_ws_1_new_refuses_an_existing_workspace_or_a_non_empty_directory(
    tmp_path: Path,
) -> None:
    target = tmp_path / "ws"
    assert run_cli(["new", str(target)]).returncode == 0
    before = snapshot(tmp_path)
    assert_declined(
        run_cli(["new", str(target)]), "new", f"{target} is already a workspace (repo.git exists)"
    )
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_bytes(b"mine")
    before = snapshot(tmp_path)
    assert_declined(
        run_cli(["new", str(busy)]),
        "new",
        f"{busy} is not empty — `lernie new` creates a workspace in a new or empty directory",
    )
    assert_declined(
        run_cli(["new", str(busy / "keep.txt")]),
        "new",
        f"{busy / 'keep.txt'} exists and is not a directory",
    )
    assert snapshot(tmp_path) == before


def test_r_cli_2_usage_errors_exit_2(tmp_path: Path) -> None:
    for args in (["message", str(tmp_path)], ["prompt"], ["dispatch", "a", "b"], ["new"], []):
        proc = run_cli(args)
        assert proc.returncode == 2 and proc.stdout == "" and "usage: lernie" in proc.stderr


def test_r_cli_2_bad_wait_options_and_an_empty_workspace_path_exit_2_writing_nothing(
    ws: Workspace, tmp_path: Path
) -> None:
    before = snapshot(ws.root)
    for extra in (
        ["--timeout", "5"],
        ["--wait", "--timeout", "-1"],
        ["--wait", "--timeout", "nan"],
    ):
        proc = run_cli(["prompt", str(ws.root), "hello", *extra])
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.splitlines()[-1].startswith("lernie prompt")
    assert snapshot(ws.root) == before
    proc = subprocess.run(
        [sys.executable, "-m", "lernie_ref", "new", ""],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "lernie new: the workspace path is empty\n"
    assert not (tmp_path / "repo.git").exists()


# ------------------------------------------------------------------------ prompt


def test_r_probe_5_prompt_mints_a_root_deposits_and_launches(ws: Workspace, cli: Cli) -> None:
    proc = cli("prompt", str(ws.root), "hello\nworld", "--name", "boss")
    assert proc.returncode == 0 and proc.stderr == ""
    root = proc.stdout.removesuffix("\n")
    assert ROOT_ID.fullmatch(root) and proc.stdout == root + "\n"
    assert ws.agent_ids() == [root]
    box = ws.inbox_dir(root)
    assert [p.name for p in box.iterdir()] == ["user-001.md"]
    data = (box / "user-001.md").read_bytes()
    match = DEPOSIT.match(data)
    assert match and match.group(1) == b"user" and data[match.end() :] == b"hello\nworld"
    tree = ws.worktree(root)
    assert (tree / "name").read_text() == "boss\n"
    assert (tree / "goal.md").read_text() == "hello\nworld"
    subject = ws.git.run(tree, ["log", "-1", "--format=%s"]).stdout
    assert subject == f"step 001: dispatch [{root}]"
    assert ws.agent_name(root) == "boss"
    assert cli.launches == [(str(ws.root), root)]


def test_r_probe_5_prompt_declines_without_writing(tmp_path: Path, ws: Workspace, cli: Cli) -> None:
    missing = tmp_path / "nowhere"
    before = snapshot(tmp_path)
    assert_declined(cli("prompt", str(missing), "hi"), "prompt", not_a_workspace(missing))
    assert_declined(
        cli("prompt", str(ws.root), "hi", "--name", "a/b"),
        "prompt",
        'agent name "a/b" is not usable — a name is one path component of printable UTF-8 text '
        "with no whitespace, `/`, `\\` or NUL, not starting with `-` or `.`",
    )
    assert_declined(
        cli("prompt", str(ws.root), "hi", "--name", "20260101T000000Z-x"),
        "prompt",
        'agent name "20260101T000000Z-x" starts like an agent id (a YYYYMMDDTHHMMSSZ token); '
        "choose a name that cannot be mistaken for an id",
    )
    assert snapshot(tmp_path) == before
    assert cli.launches == []


def test_prompt_refuses_a_name_already_worn(ws: Workspace, cli: Cli) -> None:
    first = cli("prompt", str(ws.root), "one", "--name", "boss").stdout.strip()
    before = snapshot(ws.root)
    assert_declined(
        cli("prompt", str(ws.root), "two", "--name", "boss"),
        "prompt",
        f'agent name "boss" is already worn by {first} in this workspace; choose another name',
    )
    assert snapshot(ws.root) == before


# ------------------------------------------------------------------------ dispatch


def test_r_probe_6_dispatch_forks_a_child_and_deposits_the_goal(
    ws: Workspace, cli: Cli, fixed_clock: FixedClock
) -> None:
    parent = add_root(ws, fixed_clock, name="boss")
    (ws.worktree(parent) / "messages").mkdir()
    (ws.worktree(parent) / "messages" / "001-user.md").write_bytes(b"old")
    ws.git.run(ws.worktree(parent), ["add", "-A"])
    ws.git.run(ws.worktree(parent), ["commit", "-q", "-m", "transcript 001: user [x]"])
    proc = cli("dispatch", str(ws.root), parent, "build the thing", "--name", "builder")
    assert proc.returncode == 0 and proc.stderr == ""
    child = proc.stdout.removesuffix("\n")
    assert re.fullmatch(re.escape(parent) + r"-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}", child)
    data = (ws.inbox_dir(child) / f"{parent}-001.md").read_bytes()
    match = DEPOSIT.match(data)
    assert match and match.group(1) == parent.encode() and data[match.end() :] == b"build the thing"
    tree = ws.worktree(child)
    assert not (tree / "messages").exists()  # the inherited transcript is dropped
    assert (tree / "goal.md").read_text() == "build the thing"
    assert ws.agent_name(child) == "builder"
    log = ws.git.run(tree, ["log", "--format=%s"]).stdout.splitlines()
    assert log[0] == f"dispatch: worker [{child}]"
    assert ws.git.run(tree, ["rev-parse", "HEAD~1"]).stdout == ws.branch_tip(parent)
    assert cli.launches == [(str(ws.root), child)]


@pytest.mark.parametrize("bad", ["..", ".", "a/b", "/etc", "", "a\\b", "../../victim/pwned"])
def test_r_id_3_dispatch_declines_a_bad_parent_id(ws: Workspace, cli: Cli, bad: str) -> None:
    before = snapshot(ws.root)
    assert_declined(cli("dispatch", str(ws.root), bad, "goal"), "dispatch", not_a_component(bad))
    assert snapshot(ws.root) == before and cli.launches == []


def test_dispatch_declines_unknown_parent_and_non_workspace(
    tmp_path: Path, ws: Workspace, cli: Cli
) -> None:
    before = snapshot(tmp_path)
    assert_declined(
        cli("dispatch", str(ws.root), "20260101T000000Z-00000000", "goal"),
        "dispatch",
        no_agent("20260101T000000Z-00000000", DISPATCH_REASON),
    )
    missing = tmp_path / "nowhere"
    assert_declined(
        cli("dispatch", str(missing), "A-1", "goal"), "dispatch", not_a_workspace(missing)
    )
    assert snapshot(tmp_path) == before and cli.launches == []


# ------------------------------------------------------------------------ message


@pytest.fixture
def agents(ws: Workspace, fixed_clock: FixedClock) -> dict[str, str]:
    root = add_root(ws, fixed_clock, name="boss")
    child = add_child(ws, root, fixed_clock, name="builder")
    return {"root": root, "child": child}


def test_r_probe_4_message_by_id_deposits_and_launches(
    ws: Workspace, cli: Cli, agents: dict[str, str]
) -> None:
    root = agents["root"]
    proc = cli("message", str(ws.root), root, "steer left\n")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    data = (ws.inbox_dir(root) / "user-001.md").read_bytes()
    match = DEPOSIT.match(data)
    assert match and match.group(1) == b"user" and data[match.end() :] == b"steer left\n"
    assert cli.launches == [(str(ws.root), root)]


def test_r_id_6_message_by_unique_name_and_sender_from_env(
    ws: Workspace, cli: Cli, agents: dict[str, str]
) -> None:
    root, child = agents["root"], agents["child"]
    proc = cli(
        "message", str(ws.root), "builder", "from the boss", env={"LERNIE_CONV_BRANCH": root}
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    data = (ws.inbox_dir(child) / f"{root}-001.md").read_bytes()
    assert data.startswith(f"---\nfrom: {root}\n".encode()) and data.endswith(b"from the boss")
    proc = cli("message", str(ws.root), "builder", "from you", env={"LERNIE_CONV_BRANCH": ""})
    assert proc.returncode == 0
    assert (ws.inbox_dir(child) / "user-001.md").read_bytes().endswith(b"\n---\nfrom you")
    assert cli.launches == [(str(ws.root), child)] * 2


def test_r_probe_4_message_to_a_busy_agent_deposits_exits_0_and_launches_nothing(
    ws: Workspace, cli: Cli, agents: dict[str, str]
) -> None:
    root = agents["root"]
    lock = try_acquire(ws.inbox_dir(root))
    assert lock is not None
    try:
        proc = cli("message", str(ws.root), root, "while you work")
    finally:
        lock.release()
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert (ws.inbox_dir(root) / "user-001.md").is_file()
    assert cli.launches == []


@pytest.mark.parametrize("bad", ["..", ".", "a/b", "/etc/passwd", "", "a\\b", "../../victim/pwned"])
def test_r_id_3_message_declines_a_bad_id_and_writes_nothing(
    ws: Workspace, cli: Cli, agents: dict[str, str], bad: str
) -> None:
    before = snapshot(ws.root.parent)
    assert_declined(cli("message", str(ws.root), bad, "x"), "message", not_a_component(bad))
    assert snapshot(ws.root.parent) == before and cli.launches == []


def test_r_id_4_message_declines_an_unknown_agent_and_creates_no_inbox(
    ws: Workspace, cli: Cli, agents: dict[str, str]
) -> None:
    before = snapshot(ws.root)
    for agent in ("nobody", "20260101T000000Z-00000000", "boss-x"):
        assert_declined(
            cli("message", str(ws.root), agent, "x"), "message", no_agent(agent, MESSAGE_REASON)
        )
    assert snapshot(ws.root) == before and cli.launches == []


def test_r_id_6_message_declines_an_ambiguous_name(
    ws: Workspace, cli: Cli, fixed_clock: FixedClock
) -> None:
    first = add_root(ws, fixed_clock, name="twin")
    second = add_root(ws, fixed_clock, name="twin")  # a name re-worn (fork-back-in)
    before = snapshot(ws.root)
    assert_declined(
        cli("message", str(ws.root), "twin", "x"),
        "message",
        f'agent name "twin" is ambiguous in this workspace — it is worn by {first}, {second}; '
        "address the one you mean by its agent id (R-ID-6)",
    )
    assert snapshot(ws.root) == before and cli.launches == []


def test_r_ws_2_message_declines_a_non_workspace_and_the_old_layout(
    tmp_path: Path, cli: Cli
) -> None:
    missing = tmp_path / "nowhere"
    old = tmp_path / "old"
    (old / "root" / ".git").mkdir(parents=True)
    plain = tmp_path / "plain"
    plain.mkdir()
    before = snapshot(tmp_path)
    assert_declined(cli("message", str(missing), "A-1", "x"), "message", not_a_workspace(missing))
    assert_declined(cli("message", str(plain), "A-1", "x"), "message", not_a_workspace(plain))
    assert_declined(
        cli("message", str(old), "A-1", "x"),
        "message",
        f"{old} uses the retired per-conversation layout (a `root/` primary worktree with "
        "control files at the repo root); the current layout is one repo per workspace — "
        "`<workspace>/repo.git` (bare) with `config/*` branches and `agents/*` refs "
        "(R-WS-1, R-WS-2). There is no migration: create a fresh workspace with "
        "`lernie new` and re-author its config",
    )
    assert snapshot(tmp_path) == before and cli.launches == []


def test_message_with_a_hostile_sender_writes_nothing(
    ws: Workspace, cli: Cli, agents: dict[str, str]
) -> None:
    before = snapshot(ws.root.parent)
    proc = cli("message", str(ws.root), agents["root"], "x", env={"LERNIE_CONV_BRANCH": "../../x"})
    assert_declined(proc, "message", not_a_component("../../x"))
    assert snapshot(ws.root.parent) == before


def test_message_probe_failure_text(ws: Workspace, cli: Cli, agents: dict[str, str]) -> None:
    """A launch that cannot start reads ``probe executor lock: {io}``; the deposit stays."""
    root = agents["root"]
    ws.steps_dir(root).mkdir(parents=True)
    ws.driver_log(root).mkdir()
    proc = run_cli(["message", str(ws.root), root, "x"])
    assert_declined(proc, "message", "probe executor lock: Is a directory (os error 21)")
    assert (ws.inbox_dir(root) / "user-001.md").is_file()


# ------------------------------------------------------------------------ real launch


def test_r_launch_2_message_launches_a_real_detached_driver(
    ws: Workspace, make_ws: Callable[..., Workspace], agents: dict[str, str]
) -> None:
    root = agents["root"]
    proc = run_cli(["message", str(ws.root), root, "wake up"])
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    wait_quiescent(ws)
    assert ws.driver_log(root).is_file()
    lock = try_acquire(ws.inbox_dir(root))
    assert lock is not None  # the driver is gone and left the lock free
    lock.release()


# ------------------------------------------------------------------------ edges


def test_r_cli_6_text_that_is_not_utf8_is_a_usage_error(
    ws: Workspace, cli: Cli, agents: dict[str, str]
) -> None:
    bad = os.fsdecode(b"caf\xe9")
    before = snapshot(ws.root)
    assert_declined(
        cli("message", str(ws.root), agents["root"], bad),
        "message",
        "the message content is not valid UTF-8",
        exit_code=2,
    )
    assert_declined(
        cli("prompt", str(ws.root), bad), "prompt", "the prompt text is not valid UTF-8", 2
    )
    assert_declined(
        cli("dispatch", str(ws.root), agents["root"], bad),
        "dispatch",
        "the goal is not valid UTF-8",
        2,
    )
    assert snapshot(ws.root) == before and cli.launches == []


LIGHT = """
import sys
from lernie_ref import inbox
class Quiet:
    def __init__(self, argv_prefix=None): pass
    def launch(self, ws, agent): pass
inbox.AdvanceLauncher = Quiet
from lernie_ref.cli import main
assert main(["message", sys.argv[1], sys.argv[2], "hi"]) == 0
heavy = {"json", "tomllib", "lernie_ref.core.entry", "lernie_ref.substrate.config",
         "lernie_ref.reply_debt", "lernie_ref.actors.hop", "lernie_ref.actors.drain",
         "lernie_ref.adapters", "lernie_ref.actors.tools"}
print(sorted(heavy & set(sys.modules)))
"""


def test_r_cli_5_the_message_path_imports_nothing_heavy(
    ws: Workspace, agents: dict[str, str]
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", LIGHT, str(ws.root), agents["root"]],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[]\n"
