"""Packaging: a regular install adds no top-level ``spec`` or ``stateful`` package and both
commands run from it (the model and the machines install as ``lernie_spec`` and
``lernie_stateful``).

The wheel is built once per run from a copy of the sources, so the checkout gets no
``build/``. Inspecting it takes a few seconds; installing it into a fresh venv and
running both commands from there adds about five more, so both run by default.
"""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.support.light import HEAVY_FOR_MESSAGE, check_light

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "bin", "lernie_ref", "spec", "stateful")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
            shutil.copytree(ROOT / name, src / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w", str(out)],
        check=True,
        timeout=600,
    )
    (built,) = out.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A regular (non-editable) install of the wheel in a fresh virtual environment;
    its ``bin`` directory."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / "bin"
    subprocess.run(
        [str(bin_dir / "pip"), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=600,
    )
    return bin_dir


def top_level(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name.split("/")[0] for name in archive.namelist()}


def test_the_wheel_has_no_spec_or_stateful_package(wheel: Path) -> None:
    packages = {n for n in top_level(wheel) if not n.endswith((".dist-info", ".data"))}
    assert packages == {"lernie_ref", "lernie_spec", "lernie_stateful"}


def test_the_wheel_carries_both_commands_and_the_kit_data(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        parser = configparser.ConfigParser()
        parser.read_string(archive.read(entry_points).decode())
        (script,) = [n for n in names if n.endswith(".data/scripts/lernie")]
        lernie_script = archive.read(script).decode()
    scripts = dict(parser["console_scripts"])
    assert scripts == {"lernie-check": "lernie_stateful.cli:entry"}
    for target in scripts.values():
        module = target.split(":")[0].replace(".", "/")
        assert f"{module}.py" in names or f"{module}/__init__.py" in names
    # `lernie` is a plain script (R-CLI-5): pip rewrites its first line to the interpreter
    assert lernie_script.startswith("#!python\n")
    assert "from lernie_ref.cli import script" in lernie_script
    assert any(n.startswith("lernie_stateful/conform/adapters/") for n in names)
    assert any(n.startswith("lernie_stateful/conform/scenarios/") for n in names)


def test_the_wheel_check_sees_a_planted_top_level_package(tmp_path: Path) -> None:
    planted = tmp_path / "planted-0.1-py3-none-any.whl"
    with zipfile.ZipFile(planted, "w") as archive:
        archive.writestr("spec/__init__.py", "")
    assert "spec" in top_level(planted)


def test_both_commands_run_from_a_regular_install(installed: Path, tmp_path: Path) -> None:
    bin_dir = installed
    site = subprocess.run(
        [str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    packages = {p.name for p in Path(site).iterdir()}
    assert "spec" not in packages and "stateful" not in packages
    for command in ("lernie", "lernie-check"):
        # run from an empty directory, so nothing of the checkout can be imported
        proc = subprocess.run(
            [str(bin_dir / command), "--help"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("usage:"), proc.stdout


def test_r_cli_5_the_installed_lernie_message_loads_none_of_the_heavy_modules(
    installed: Path, tmp_path: Path
) -> None:
    """The command a user runs (the installed script, not ``python -m``) keeps the modules
    R-CLI-5 names off the message path; the agent is busy, so nothing is launched."""
    from lernie_ref.core.clock import FixedClock
    from lernie_ref.substrate.lock import try_acquire
    from lernie_ref.substrate.workspace import create_workspace

    bin_dir = installed
    ws = create_workspace(tmp_path / "ws")
    agent = ws.mint_root(FixedClock(0))
    ws.create_root_agent(agent, "boss", "goal")
    lock = try_acquire(ws.inbox_dir(agent))
    assert lock is not None
    try:
        proc = subprocess.run(
            [
                str(bin_dir / "python"),
                "-X",
                "importtime",
                str(bin_dir / "lernie"),
                "message",
                str(ws.root),
                agent,
                "hi",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        lock.release()
    assert proc.returncode == 0, proc.stderr
    loaded = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()}
    assert "lernie_ref.cli.message" in loaded  # the report is read right
    check_light(loaded, HEAVY_FOR_MESSAGE, "lernie message")
    assert os.listdir(ws.inbox_dir(agent)) == ["user-001.md"]
    # it exits at once (os._exit) on this path: an error still reaches stderr whole
    ghost = agent[:-1] + ("0" if agent[-1] != "0" else "1")
    proc = subprocess.run(
        [str(bin_dir / "lernie"), "message", str(ws.root), ghost, "hi"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith(f'lernie message: no agent "{ghost}"')
    assert proc.stderr.count("\n") == 1 and proc.stderr.endswith("\n")


def test_the_upstream_adapter_and_its_predictions_are_installed(installed: Path,
                                                                tmp_path: Path) -> None:
    """`--impl upstream-lernie-0.0.11` and `--programs lernie-0.0.11` resolve in a regular
    install; without the binary the adapter says in one line where it must be, and with it
    (the archive beside the repository) the installed kit prints a scorecard."""
    import hypothesis

    env = {k: v for k, v in os.environ.items() if k != "LERNIE_UPSTREAM_DIR"}
    # The install is --no-deps: the kit's one dependency (hypothesis, the `test` extra) comes
    # from this interpreter; the package itself is the installed wheel's.
    env["PYTHONPATH"] = str(Path(hypothesis.__file__).parents[1])
    check = [str(installed / "lernie-check"), "conform", "--impl", "upstream-lernie-0.0.11"]
    proc = subprocess.run(check, cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.startswith("lernie-check conform: adapter upstream-lernie-0.0.11: set "
                                  "LERNIE_UPSTREAM_DIR to the unpacked lernie-0.0.11 "
                                  "directory"), proc.stderr
    listing = subprocess.run(
        [str(installed / "python"), "-c", "from importlib import resources; "
         "r = resources.files('lernie_stateful.conform'); "
         "print(sorted(p.name for d in ('adapters', 'predictions') "
         "for p in r.joinpath(d).iterdir()))"],
        cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert "'upstream-lernie-0.0.11.toml'" in listing and "'lernie-0.0.11.toml'" in listing
    tarball = Path(os.environ.get("LERNIE_UPSTREAM_TARBALL", ROOT.parent / "shared" / "upstream"
                                  / "lernie-0.0.11-linux-x86_64.tar.gz"))
    if not tarball.is_file():
        return
    subprocess.run(["tar", "-xzf", str(tarball), "-C", str(tmp_path)], check=True)
    env["LERNIE_UPSTREAM_DIR"] = str(tmp_path / "lernie-0.0.11")
    proc = subprocess.run([*check, "-k", "declines", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=300)
    card = json.loads(proc.stdout)
    assert (card["passed"], card["applicable"]) == (2, 2), proc.stdout
