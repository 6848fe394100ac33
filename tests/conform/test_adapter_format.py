"""The adapter format for implementations that live outside PATH and keep state outside
the workspace (docs/upstream.md, "The adapter format"): installed adapters by name,
``[locate]`` directories, ``[[check]]`` pins, ``{env:VAR}``, per-run ``[[setup]]`` in a
private ``{run}`` directory, and layout names the audit honours (``--impl``)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from lernie_stateful.audit import audit
from lernie_stateful.conform.adapter import AdapterError, installed, layout_of, load, parse
from lernie_stateful.conform.session import prepared

from tests.support.runners import CHECK_CLI
from tests.support.waits import wait_quiescent

BASE = '''
name = "fmt"
command = ["{tool}/bin/impl"]
program = "impl"
env_prefix = "IMPL_"
[locate.tool]
env = "IMPL_DIR"
what = "the unpacked tool"
holds = ["bin/impl"]
[verbs]
new = ["new", "{ws}"]
prompt = ["prompt", "{ws}", "{text}"]
dispatch = ["dispatch", "{ws}", "{parent}", "{goal}"]
message = ["message", "{ws}", "{agent}", "{content}"]
scan = ["scan", "{ws}"]
stop = ["stop", "{ws}", "{agent}"]
'''


def tool(tmp_path: Path, version: str = "impl 1.0") -> Path:
    d = tmp_path / "tool"
    (d / "bin").mkdir(parents=True)
    script = d / "bin" / "impl"
    script.write_text(f"#!/bin/sh\necho '{version}'\n")
    script.chmod(0o755)
    return d


def test_installed_adapters_are_found_by_name() -> None:
    names = installed()
    assert {"lernie", "upstream-lernie-0.0.11"} <= set(names)
    with pytest.raises(AdapterError, match=r"no installed adapter 'nosuch' \(installed: "):
        load("nosuch")
    lay = layout_of("upstream-lernie-0.0.11")  # needs no binary
    assert lay.model_origin == "kit" and "abandoned" in lay.other_marks


def test_a_located_directory_fills_templates_and_the_inherited_path(tmp_path: Path) -> None:
    d = tool(tmp_path)
    text = BASE + '[env]\nPATH = "{tool}/bin:{env:PATH}"\nHOME_OF = "{run}/home"\n'
    a = parse(tomllib.loads(text), "fmt.toml", {"IMPL_DIR": str(d)})
    assert a.argv("scan", {"ws": "/w"}) == [f"{d}/bin/impl", "scan", "/w"]
    env = a.bound({"run": "/r"}).env({}, {"PATH": "/usr/bin", "IMPL_OLD": "x"})
    assert env["PATH"] == f"{d}/bin:/usr/bin"
    assert env["HOME_OF"] == "/r/home"
    assert "IMPL_OLD" not in env


def test_an_unset_or_wrong_directory_is_one_line(tmp_path: Path) -> None:
    data = tomllib.loads(BASE)
    with pytest.raises(AdapterError) as unset:
        parse(data, "fmt.toml", {})
    assert str(unset.value) == "adapter fmt.toml: set IMPL_DIR to the unpacked tool"
    with pytest.raises(AdapterError) as empty:
        parse(data, "fmt.toml", {"IMPL_DIR": str(tmp_path)})
    assert str(empty.value) == (f"adapter fmt.toml: IMPL_DIR={tmp_path} is not the unpacked "
                                "tool (no bin/impl in it)")
    with pytest.raises(AdapterError, match=r"\(no such directory\)"):
        parse(data, "fmt.toml", {"IMPL_DIR": str(tmp_path / "absent")})


def test_a_version_pin_that_does_not_match_is_refused(tmp_path: Path) -> None:
    d = tool(tmp_path, "impl 2.0")
    text = BASE + '[[check]]\nargv = ["{tool}/bin/impl", "--version"]\nstdout = "impl 1.0\\n"\n'
    with pytest.raises(AdapterError, match=r"printed 'impl 2.0\\n' \(exit 0\), expected "
                                           r"'impl 1.0\\n'"):
        parse(tomllib.loads(text), "fmt.toml", {"IMPL_DIR": str(d)})
    ok = text.replace("impl 1.0", "impl 2.0")
    parse(tomllib.loads(ok), "fmt.toml", {"IMPL_DIR": str(d)})


def test_setup_runs_per_run_in_a_private_directory(tmp_path: Path) -> None:
    d = tool(tmp_path)
    text = BASE + ('[env]\nMARK = "{run}"\n'
                   '[[setup]]\nwrite = "{run}/conf/settings.toml"\ntext = "home = \\"{run}\\""\n'
                   '[[setup]]\nrun = ["sh", "-c", "echo ran > $MARK/ran.txt"]\n')
    a = parse(tomllib.loads(text), "fmt.toml", {"IMPL_DIR": str(d)})
    seen = []
    for k in (1, 2):
        with prepared(a, tmp_path / f"case{k}") as live:
            run = Path(live.base_values()["run"])
            seen.append(run)
            assert (run / "conf" / "settings.toml").read_text() == f'home = "{run}"'
            assert (run / "ran.txt").read_text() == "ran\n"
    assert seen[0] != seen[1]


def test_a_failing_setup_step_names_itself(tmp_path: Path) -> None:
    d = tool(tmp_path)
    text = BASE + '[[setup]]\nrun = ["sh", "-c", "echo broken >&2; exit 3"]\n'
    a = parse(tomllib.loads(text), "fmt.toml", {"IMPL_DIR": str(d)})
    with pytest.raises(AdapterError, match=r"setup `sh -c echo broken >&2; exit 3` exited 3: "
                                           "broken"), prepared(a, tmp_path / "case"):
        pass
    bad = BASE + '[[setup]]\nwrite = "x"\nrun = ["y"]\n'
    with pytest.raises(AdapterError, match="either run"):
        parse(tomllib.loads(bad), "fmt.toml", {"IMPL_DIR": str(d)})


def _workspace(tmp_path: Path) -> tuple[Path, str]:
    ws = tmp_path / "ws"
    env = {**os.environ, "LERNIE_MODEL": "scripted"}
    run = [sys.executable, "-m", "lernie_ref"]
    subprocess.run([*run, "new", str(ws)], env=env, check=True, capture_output=True)
    aid = subprocess.run([*run, "prompt", str(ws), "hello"], env=env, check=True,
                         capture_output=True, text=True).stdout.strip()
    wait_quiescent(ws)
    return ws, aid


def test_the_audit_honours_an_implementations_own_marks(tmp_path: Path) -> None:
    ws, aid = _workspace(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    repo = ws / "repo.git"
    subprocess.run(["git", "-C", str(repo), "update-ref", f"refs/lernie/abandoned/{aid}",
                    f"refs/heads/agents/{aid}"], env=env, check=True)
    plain = audit(ws)
    assert [f.message for f in plain.findings] == [
        f"mark refs/lernie/abandoned/{aid} names no agent or an unknown kind (debris)"]
    assert audit(ws, layout_of("upstream-lernie-0.0.11")).findings == []
    check = [*CHECK_CLI, "audit", "--strict"]
    assert subprocess.run([*check, str(ws)], capture_output=True).returncode == 1
    assert subprocess.run([*check, "--impl", "upstream-lernie-0.0.11", str(ws)],
                          capture_output=True).returncode == 0


def test_a_workspace_without_an_inbox_root_has_nothing_pending(tmp_path: Path) -> None:
    """An implementation may make ``inbox/`` lazily (upstream does, at the first prompt)."""
    ws, _ = _workspace(tmp_path)
    for box in (ws / "inbox").iterdir():
        box.rmdir()
    (ws / "inbox").rmdir()
    report = audit(ws)
    assert report.violations() == [] and report.pending == 0
