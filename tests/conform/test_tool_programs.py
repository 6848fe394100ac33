"""The kit's tool programs (``scenarios/tools.toml``): the work tools judged from the worktree,
the tree at the tip of the agent's branch and the tool results its transcript holds
(R-TOOL-2 to R-TOOL-5, R-TOOL-8). The reference passes them (also through its HTTP adapter
and the kit's model server); each of the checks they add fails a workspace that differs."""

from __future__ import annotations

import json
import subprocess
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import pytest
from lernie_stateful.conform.adapter import load
from lernie_stateful.conform.run import CaseRunner, Failed, cases_of, conform, scenario_files

PATCH_CASE = "apply-patch-adds-updates-moves-and-deletes"


def tool_cases() -> dict[str, dict[str, object]]:
    return {str(c["id"]): c for name, c in cases_of(scenario_files()) if name == "tools.toml"}


def git(*args: str, cwd: Path) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_tool_programs_cover_every_work_tool_and_cite_the_tool_rules() -> None:
    cases = tool_cases()
    assert len(cases) >= 8
    steps = [s for c in cases.values() for s in c["step"]  # type: ignore[attr-defined]
             if isinstance(s, dict)]
    bodies = "\n".join(str(s.get("args", {})) for s in steps)
    for directive in ("@read_file", "@cd", "@apply_patch", "@bash"):
        assert directive in bodies
    for case in cases.values():
        rules = case["rules"]
        assert isinstance(rules, list)
        assert any(str(r).startswith("R-TOOL-") for r in rules), case["id"]


@pytest.fixture(scope="module")
def patched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The add/update/move/delete program, run on the reference and kept: (workspace, id)."""
    keep = tmp_path_factory.mktemp("keep")
    card = conform(load("lernie"), [("tools.toml", _only(PATCH_CASE))], keep=keep)
    assert [(r.status, r.difference) for r in card.results] == [("passed", "")]
    ws = keep / PATCH_CASE / "ws"
    [root] = [p.name for p in (ws / "agents").iterdir()]
    return ws, root


def _only(case_id: str) -> str:
    """tools.toml with one case (the kit reads scenario files as text)."""
    text = dict(scenario_files())["tools.toml"]
    head, *chunks = text.split("\n[[case]]\n")
    [chunk] = [c for c in chunks if c.startswith(f'id = "{case_id}"')]
    return head + "\n[[case]]\n" + chunk


def _judge(ws: Path, root: str, expect: Mapping[str, object]) -> str:
    """The kit's verdict on the kept workspace under ``expect``: '' or the difference."""
    runner = CaseRunner(load("lernie"), ws)
    runner.vars["root"] = root
    try:
        runner.expect(expect)
        runner.expect_work(expect)
    except Failed as exc:
        return str(exc)
    return ""


def _expect() -> dict[str, object]:
    expect = tool_cases()[PATCH_CASE]["expect"]
    assert isinstance(expect, dict)
    return dict(expect)


def test_the_reference_passes_the_patch_program_and_the_kit_reads_what_it_did(
        patched: tuple[Path, str]) -> None:
    ws, root = patched
    assert _judge(ws, root, _expect()) == ""
    # the changes are in the commits of the calls that made them
    log = git("log", "--no-renames", "--format=%s", "--name-status", f"agents/{root}",
              cwd=ws / "repo.git")
    assert "D\tgone.txt" in log and "A\tmoved.txt" in log and "A\tnew/added.txt" in log


def test_a_tool_result_flagged_otherwise_fails_the_program(patched: tuple[Path, str],
                                                           tmp_path: Path) -> None:
    ws, root = patched
    copy = tmp_path / "ws"
    subprocess.run(["cp", "-a", str(ws), str(copy)], check=True)
    entries = sorted((copy / "agents" / root / "messages").glob("*-tool.json"))
    blocks = json.loads(entries[1].read_text())
    blocks[0]["is_error"] = True
    entries[1].write_text(json.dumps(blocks))
    assert _judge(copy, root, _expect()).startswith("tool result 2 of 4 ('patch applied")
    assert "is an error, expected a success" in _judge(copy, root, _expect())
    entries[3].unlink()
    assert f"{root}'s transcript holds 3 tool result(s), expected 4" in _judge(
        copy, root, _expect())


def test_each_result_expectation_fails_a_result_that_differs(patched: tuple[Path, str]) -> None:
    ws, root = patched
    ok: dict[str, object] = {}
    for want, difference in [
        ({"contains": ["not there"]}, "does not hold 'not there'"),
        ({"lacks": ["patch applied"]}, "holds 'patch applied'"),
        ({"search": "(?m)^Exit code: 0$"}, "has no match for '(?m)^Exit code: 0$'"),
        ({"max_bytes": 3}, "bytes, expected at most 3"),
    ]:
        expect = {"results": {"root": [want, ok, ok, ok]}}
        verdict = _judge(ws, root, expect)
        assert verdict.startswith("tool result 1 of 4 (") and verdict.endswith(difference)
    assert _judge(ws, root, {"results": {"root": [ok, ok, ok, ok]}}) == ""


def test_a_change_not_in_the_branch_fails_the_program(patched: tuple[Path, str],
                                                      tmp_path: Path) -> None:
    """The files on disk are right; the tree at the branch's tip is not (R-TOOL-8)."""
    ws, root = patched
    copy = tmp_path / "ws"
    subprocess.run(["cp", "-a", str(ws), str(copy)], check=True)
    _commit_on_branch(copy / "repo.git", f"agents/{root}",
                      {"data.txt": "one\ntwo\nthree\n", "gone.txt": "bye\n"}, tmp_path)
    assert _judge(copy, root, _expect()) == (
        f"data.txt at the tip of {root}'s branch is 'one\\ntwo\\nthree\\n', expected "
        "'one\\nTWO\\nthree\\n'")
    expect = _expect()
    del expect["committed"]
    assert _judge(copy, root, expect) == (
        f"gone.txt is in the tree at the tip of {root}'s branch, expected nothing there")


def _commit_on_branch(repo: Path, branch: str, files: dict[str, str], tmp: Path) -> None:
    """A commit on ``branch`` of the bare ``repo`` that sets ``files``, made with an index of
    its own (the worktree, its files and its index are left alone)."""
    env = {"GIT_INDEX_FILE": str(tmp / "index"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": "/usr/bin:/bin"}

    def run(*args: str, data: str | None = None) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], input=data, env=env,
                              capture_output=True, text=True, check=True).stdout.strip()

    run("read-tree", branch)
    for path, text in files.items():
        blob = run("hash-object", "-w", "--stdin", data=text)
        run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    commit = run("commit-tree", run("write-tree"), "-p", branch, "-m", "undo")
    run("update-ref", f"refs/heads/{branch}", commit)


def test_a_symlink_step_makes_a_link_the_expectations_read_through(tmp_path: Path) -> None:
    case = tomllib.loads('''
[[case]]
id = "links"
rules = ["R-TOOL-2"]
fresh = true
[[case.step]]
write = { path = "outside.txt", text = "kit secret\\n" }
[[case.step]]
symlink = { path = "tree/link.txt", target = "{ws}/outside.txt" }
[case.expect]
files = { "tree/link.txt" = "kit secret\\n" }
''')["case"][0]
    ws = tmp_path / "ws"
    ws.mkdir()
    CaseRunner(load("lernie"), ws).run(case)
    assert (ws / "tree" / "link.txt").readlink() == ws / "outside.txt"


@pytest.mark.slow
def test_the_reference_passes_the_tool_programs_through_its_openai_adapter() -> None:
    """The kit's model server plays the programs over HTTP (about 2 minutes; the CI-sized
    HTTP run with tools is tests/tools/test_hosted_loopback.py, and every case and program
    through both adapters is tests/model_server/test_reference.py's slow test)."""
    card = conform(load("lernie-openai"), only="tools.toml")
    assert len(card.results) >= 10 and card.passed == len(card.results), card.text()


def test_k_selects_the_cases_of_a_scenario_file_by_its_name(tmp_path: Path) -> None:
    files = [(name, f'[[case]]\nid = "{case}"\nrules = ["R-TOOL-1"]\nfresh = true\n')
             for name, case in (("tools.toml", "first"), ("other.toml", "second-tools"))]
    for only, ran in (("tools.toml", ["first"]), ("tools", ["second-tools"]),
                      ("other.toml", ["second-tools"]), ("none.toml", [])):
        card = conform(load("lernie"), files, only=only, keep=tmp_path / only)
        assert [r.id for r in card.results] == ran
        assert all(r.status == "passed" for r in card.results)


def test_the_kit_model_plays_a_tool_program_through_the_reference_command_model(
        tmp_path: Path) -> None:
    """An implementation without the reference's scripted model gets the same tool calls
    from the kit's command model (docs/models.md JSON both ways)."""
    text = resources.files("lernie_stateful.conform").joinpath(
        "adapters", "lernie.toml").read_text(encoding="utf-8").replace(
        'MODEL = "scripted"', 'MODEL = "command"\nMODEL_COMMAND = "{kit_model}"')
    path = tmp_path / "kit.toml"
    path.write_text(text)
    case = "bash-runs-in-the-current-directory-and-reports-output-and-exit"
    card = conform(load(str(path)), [("tools.toml", _only(case))], keep=tmp_path / "keep")
    assert [(r.status, r.difference) for r in card.results] == [("passed", "")]
    [entry] = (tmp_path / "keep").glob("*/ws/agents/*/messages/004-command.json")
    assert json.loads(entry.read_text())["content"][0]["name"] == "bash"
