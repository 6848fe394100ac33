"""R-CLI-5: the ``lernie message`` path stays light, and its shortcuts answer what the slow
paths answer: existence read from git's ref files agrees with git, the root text agrees
with ``pathlib``, and only the plain command line skips the parser."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lernie_ref.cli import plain_message
from lernie_ref.core.clock import FixedClock
from lernie_ref.inbox import RecordingLauncher, cli_dispatch, cli_prompt, deposit
from lernie_ref.substrate.lock import try_acquire
from lernie_ref.substrate.reffiles import RefFiles
from lernie_ref.substrate.registry import Registry, path_text
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import drive
from tests.support.history import git
from tests.support.light import (
    FOR_FLAGGED_ROWS,
    HEAVY_FOR_MESSAGE,
    HEAVY_FOR_OPERATOR,
    check_light,
)
from tests.support.processes import driver_pids
from tests.support.runners import run_cli
from tests.support.waits import wait_quiescent
from tests.support.workspaces import add_root

ROOT = Path(__file__).resolve().parents[2]

# Run without site (no editable-install finder, which itself loads pathlib and re), with
# the code root (and its spec/ folder, where the model's shared spellings live) first on
# sys.path, and print every module one command loaded.
PROBE = """
import sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/spec"]
from lernie_ref import inbox
from lernie_ref.substrate.launcher import AdvanceLauncher
class TrueLauncher(AdvanceLauncher):
    def __init__(self):
        super().__init__(["/bin/true"])
inbox.AdvanceLauncher = TrueLauncher
from lernie_ref.cli import main
assert main(["message", sys.argv[2], sys.argv[3], "hi"]) == 0
print(" ".join(sorted(sys.modules)))
"""

OPERATOR_PROBE = """
import sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/spec"]
from lernie_ref.cli import main
assert main(sys.argv[2:]) == 0
print(" ".join(sorted(sys.modules)), file=sys.stderr)
"""


def run_probe(code_root: Path, probe: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-S", "-c", probe, str(code_root), *argv],
        capture_output=True,
        text=True,
        check=False,
    )


def loaded_modules(report: str) -> frozenset[str]:
    """The modules a probe reported (its last line)."""
    lines = report.splitlines()
    return frozenset(lines[-1].split()) if lines else frozenset()


def message_loads(code_root: Path, ws: Workspace, agent: str) -> frozenset[str]:
    proc = run_probe(code_root, PROBE, str(ws.root), agent)
    assert proc.returncode == 0, proc.stderr
    return loaded_modules(proc.stdout)


@pytest.mark.parametrize("busy", [True, False], ids=["busy", "idle-launch"])
def test_r_cli_5_message_loads_none_of_the_heavy_modules(
    ws: Workspace, fixed_clock: FixedClock, busy: bool
) -> None:
    agent = add_root(ws, fixed_clock, name="boss")
    lock = try_acquire(ws.inbox_dir(agent)) if busy else None
    try:
        loaded = message_loads(ROOT, ws, agent)
    finally:
        if lock is not None:
            lock.release()
    assert "lernie_ref.substrate.deposit" in loaded  # the probe saw the path run
    check_light(loaded, HEAVY_FOR_MESSAGE, "lernie message")
    assert sorted(os.listdir(ws.inbox_dir(agent))) == ["user-001.md"]


@pytest.mark.parametrize("heavy", ["typing", "json"])
def test_r_cli_5_the_guard_names_a_heavy_module_a_module_on_the_path_imports(
    ws: Workspace, fixed_clock: FixedClock, tmp_path: Path, heavy: str
) -> None:
    """The guard can fail: a copy of the package whose errors module (on every path)
    imports ``typing`` or ``json`` at the top makes the check name that module."""
    code = tmp_path / "code"
    shutil.copytree(
        ROOT / "lernie_ref", code / "lernie_ref", ignore=shutil.ignore_patterns("__pycache__")
    )
    (code / "spec").symlink_to(ROOT / "spec")
    errors = code / "lernie_ref" / "core" / "errors.py"
    errors.write_text(
        errors.read_text().replace(
            "from __future__ import annotations\n",
            f"from __future__ import annotations\n\nimport {heavy}  # planted\n",
            1,
        )
    )
    agent = add_root(ws, fixed_clock, name="boss")
    lock = try_acquire(ws.inbox_dir(agent))  # busy: the planted copy launches nothing
    assert lock is not None
    try:
        loaded = message_loads(code, ws, agent)
    finally:
        lock.release()
    with pytest.raises(AssertionError) as caught:
        check_light(loaded, HEAVY_FOR_MESSAGE, "lernie message")
    named = str(caught.value).split(", which")[0].removeprefix("`lernie message` loaded ")
    assert heavy in named.split(", ")
    check_light(message_loads(ROOT, ws, agent), HEAVY_FOR_MESSAGE, "lernie message")


@pytest.mark.parametrize("verb", ["scan", "status"])
def test_r_cli_5_scan_and_status_load_no_subprocess_typing_dataclasses_or_json(
    ws: Workspace, verb: str
) -> None:
    """A root that dispatched a child, both finished (model entries read for their
    tokens and terminal responses, marks and tip subjects read): the paths read what
    they read in use. ``json`` is loaded by the first model entry read (or ``--json``);
    none of the others ever is."""
    rec = RecordingLauncher()
    root = cli_prompt(ws, "answer", "", rec)
    child = cli_dispatch(ws, root, "sub", "", rec)
    drive(ws, child)
    drive(ws, root)  # takes the child's result: no mail is left, nothing to launch
    assert not os.listdir(ws.inbox_dir(root)) and not os.listdir(ws.inbox_dir(child))
    for argv in ([verb, str(ws.root)], [verb, str(ws.root), "--json"]):
        proc = run_probe(ROOT, OPERATOR_PROBE, *argv)
        assert proc.returncode == 0, proc.stderr
        loaded = loaded_modules(proc.stderr)
        assert f"lernie_ref.cli.{verb}" in loaded
        check_light(loaded, HEAVY_FOR_OPERATOR, f"lernie {' '.join(argv[:1] + argv[2:])}")
        check_light(loaded, FOR_FLAGGED_ROWS, f"lernie {' '.join(argv[:1] + argv[2:])}")
    if verb == "scan":
        assert "drivers launched: 0" in proc.stdout or '"launched": []' in proc.stdout


def test_r_id_4_ref_files_answer_like_git_loose_and_packed(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    agent = add_root(ws, fixed_clock)
    repo = str(ws.repo_git)
    ref = "refs/heads/agents/" + agent
    tip = git(ws.repo_git, "rev-parse", ref)
    assert RefFiles(repo).value(ref) == tip  # a loose ref file
    git(ws.repo_git, "pack-refs", "--all")
    assert not (ws.repo_git / ref).exists()
    assert RefFiles(repo).value(ref) == tip  # now only in packed-refs
    assert RefFiles(repo).value(ref + "0") == ""  # absent: the registry asks git
    assert Registry(str(ws.root)).agent_exists(agent)
    assert not Registry(str(ws.root)).agent_exists(agent + "0")


def test_r_id_4_a_symbolic_or_malformed_ref_file_is_left_to_git(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    agent = add_root(ws, fixed_clock)
    heads = ws.repo_git / "refs" / "heads" / "agents"
    (heads / "X-1").write_text(f"ref: refs/heads/agents/{agent}\n")
    (heads / "X-2").write_text("not an object id\n")
    repo = str(ws.repo_git)
    assert RefFiles(repo).value("refs/heads/agents/X-1") is None
    assert RefFiles(repo).value("refs/heads/agents/X-2") is None
    registry = Registry(str(ws.root))
    verdict = subprocess.run(
        ["git", "-C", repo, "rev-parse", "--verify", "--quiet", "refs/heads/agents/X-2"],
        capture_output=True,
        check=False,
    )
    assert registry.agent_exists("X-1")  # git follows the symbolic ref
    assert registry.agent_exists("X-2") == (verdict.returncode == 0)


def test_r_id_4_a_lock_file_is_never_read_as_an_agent(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    """A ``.lock`` beside a ref (git updating it) looks like a ref file; the id is not plain,
    so git is asked, and git knows no such branch."""
    agent = add_root(ws, fixed_clock)
    heads = ws.repo_git / "refs" / "heads" / "agents"
    (heads / f"{agent}.lock").write_bytes((heads / agent).read_bytes())
    assert not Registry(str(ws.root)).agent_exists(f"{agent}.lock")


@given(st.text(alphabet="/.ab", max_size=12))
def test_path_text_is_pathlibs_text(raw: str) -> None:
    assert path_text(raw) == str(PurePosixPath(raw))


@pytest.mark.parametrize(
    "args",
    [
        ["message", "ws", "a"],
        ["message", "ws", "a", "b", "c"],
        ["message", "-h", "a", "b"],
        ["message", "ws", "a", "--"],
        ["message", "ws", "a", "-1"],
        ["--version", "ws", "a", "b"],
        ["log", "ws", "a", "b"],
    ],
)
def test_r_cli_5_only_the_plain_message_form_skips_the_parser(args: list[str]) -> None:
    assert plain_message(args) is None


def test_r_cli_5_the_plain_form_hands_on_the_arguments_unchanged() -> None:
    assert plain_message(["message", "ws/", "boss", ""]) == ("ws/", "boss", "")


def test_r_cli_8_an_edited_configuration_is_parsed_once_then_known_by_its_identity(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    """R-CLI-5 with R-CLI-8: a ``lernie.toml`` that is not ``lernie new``'s text is parsed by
    the first message; the next ones know it by its identity and load no ``tomllib``; any
    edit is parsed again (a bad one refused, nothing deposited)."""
    agent = add_root(ws, fixed_clock, name="boss")
    config = ws.root / "lernie.toml"
    config.write_text(config.read_text().replace("step_budget = 100", "step_budget = 50"))
    lock = try_acquire(ws.inbox_dir(agent))  # busy: no driver is launched
    assert lock is not None
    try:

        assert "tomllib" in message_loads(ROOT, ws, agent)  # parsed once
        check_light(message_loads(ROOT, ws, agent), HEAVY_FOR_MESSAGE, "lernie message")
        config.write_text(config.read_text() + 'modle = "command"\n')
        third = run_probe(ROOT, PROBE, str(ws.root), agent)
        assert third.returncode != 0 and "unknown key 'modle'" in third.stderr
    finally:
        lock.release()
    assert sorted(os.listdir(ws.inbox_dir(agent))) == ["user-001.md", "user-002.md"]


SCRIPT = [sys.executable, str(ROOT / "bin" / "lernie")]
"""The installed ``lernie`` command's code (``bin/lernie``), as this interpreter runs it."""


def _as_both(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``argv`` by the installed command and by ``python -m lernie_ref``: the same stdout,
    stderr and exit status; the installed command's outcome. Output to a pipe is buffered,
    as a user's is (no ``PYTHONUNBUFFERED``): what is not flushed before ``os._exit`` is lost."""
    buffered = {"PYTHONUNBUFFERED": ""}
    installed, normal = run_cli(argv, buffered, prefix=SCRIPT), run_cli(argv, buffered)
    assert (installed.returncode, installed.stdout, installed.stderr) == (
        normal.returncode, normal.stdout, normal.stderr
    ), argv
    return installed


def test_r_cli_5_the_installed_scan_and_status_print_what_a_normal_exit_prints(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    """The installed command ends ``scan`` and ``status`` that launched no driver with
    ``os._exit``; what they print and their exit status are what ``python -m lernie_ref``,
    which exits normally, gives: a quiet workspace, undelivered mail with its hint on
    stderr, ``--json``, and a directory that is no workspace."""
    agent = add_root(ws, fixed_clock, "solo")
    root = str(ws.root)
    assert _as_both(["scan", root]).stdout.startswith("silent deaths: 0;")
    assert '"launched": []' in _as_both(["scan", root, "--json"]).stdout
    deposit(ws.root, agent, "user", "hi")  # no driver: undelivered (R-STATUS-2, R-STATUS-5)
    table = _as_both(["status", root])
    assert agent in table.stdout
    assert f"{agent} has 1 undelivered message(s) and no driver" in table.stderr
    assert f'"id": "{agent}"' in _as_both(["status", "--json", root]).stdout
    assert _as_both(["status", str(ws.agents_root)]).returncode == 1


def test_r_cli_5_the_installed_message_returns_once_its_driver_shows_its_command(
    ws: Workspace, fixed_clock: FixedClock
) -> None:
    """The installed command ends a `lernie message` that launched a driver with
    ``os._exit`` too, but only once the driver shows its ``advance`` command line: read
    right after the command returned (before the driver can have started Python, let alone
    finished), ``/proc`` names it as the agent's driver."""
    agent = add_root(ws, fixed_clock, "solo")
    done = subprocess.run([*SCRIPT, "message", str(ws.root), agent, "hi"],
                          capture_output=True, text=True, timeout=120)
    seen = driver_pids(ws, agent)
    assert (done.returncode, done.stderr) == (0, "")
    assert len(seen) == 1
    wait_quiescent(ws)
    assert os.listdir(ws.inbox_dir(agent)) == []  # the driver it launched delivered the mail


def test_r_cli_5_the_wait_for_a_driver_that_never_shows_its_command_is_bounded() -> None:
    """A launched process whose command line never names ``advance`` (a stand-in that is
    not a driver), and one already gone: the installed command's wait returns for both."""
    from lernie_ref.cli import _until_shown
    from lernie_ref.substrate.spawn import spawn

    pid = spawn(["/bin/sh", "-c", "sleep 30; exit 7"], os.environ, [], setsid=True,
                until_exec=True)
    try:
        _until_shown([pid], tries=5)
        assert os.waitpid(pid, os.WNOHANG) == (0, 0)  # it was still running, never shown
    finally:
        os.killpg(pid, 9)
        os.waitpid(pid, 0)
    _until_shown([pid], tries=5)  # gone: its /proc entry cannot be opened
