"""Adapter settings in ``lernie.toml`` and their ``LERNIE_*`` overrides (R-STEP-6, R-STEP-8)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lernie_ref.core.errors import ConfigError
from lernie_ref.substrate.config import CONFIG_FILE, Config, ProviderSettings, load
from lernie_ref.substrate.workspace import Workspace
from tests.support.readers import lock_is_free, names
from tests.support.runners import run_cli
from tests.support.waits import wait_quiescent


def test_r_step_6_model_timeout_from_file_and_environment(tmp_path: Path) -> None:
    assert load(tmp_path, {}).model_timeout == 600.0
    (tmp_path / CONFIG_FILE).write_text("model_timeout = 2\n")
    assert load(tmp_path, {}).model_timeout == 2.0
    assert load(tmp_path, {"LERNIE_MODEL_TIMEOUT": "0.25"}).model_timeout == 0.25
    for bad in ("0", "-1", '"soon"', "inf", "true"):
        (tmp_path / CONFIG_FILE).write_text(f"model_timeout = {bad}\n")
        with pytest.raises(ConfigError, match="model_timeout"):
            load(tmp_path, {})
    (tmp_path / CONFIG_FILE).write_text("")
    with pytest.raises(ConfigError, match=r"LERNIE_MODEL_TIMEOUT='soon': expected a number"):
        load(tmp_path, {"LERNIE_MODEL_TIMEOUT": "soon"})


def test_r_step_8_provider_tables_default_file_and_environment(tmp_path: Path) -> None:
    config = load(tmp_path, {})
    assert config.anthropic == ProviderSettings(model="claude-sonnet-4-5")
    assert config.openai == ProviderSettings(model="gpt-4.1-mini")
    (tmp_path / CONFIG_FILE).write_text(
        'model = "anthropic"\n'
        "[anthropic]\n"
        'model = "claude-x"\nmax_tokens = 100\ntemperature = 0\nsystem = "be brief"\n'
        "timeout = 5\nmax_retries = 0\nretry_backoff = 0.01\n"
        "[openai]\n"
        'model = "local"\nsystem_file = "sys.md"\n'
    )
    env = {"LERNIE_ANTHROPIC_MAX_TOKENS": "7", "LERNIE_OPENAI_TEMPERATURE": "0.5"}
    config = load(tmp_path, env)
    assert config.model == "anthropic"
    assert config.anthropic == ProviderSettings(
        model="claude-x",
        max_tokens=7,
        temperature=0.0,
        system="be brief",
        timeout=5.0,
        max_retries=0,
        retry_backoff=0.01,
    )
    assert config.openai == ProviderSettings(model="local", system_file="sys.md", temperature=0.5)
    assert load(tmp_path, {"LERNIE_OPENAI_MODEL": "other"}).openai.model == "other"


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("[anthropic]\nmodle = 'x'\n", {}, r"unknown setting 'modle' in \[anthropic\]"),
        ("[openai]\nmax_tokens = 0\n", {}, "max_tokens must be at least 1"),
        ("[openai]\nmax_tokens = '9'\n", {}, "max_tokens must be int, not str"),
        ("[anthropic]\ntemperature = -1\n", {}, "temperature must be a number from 0 up"),
        ("[anthropic]\nsystem = 'a'\nsystem_file = 'b'\n", {}, "set system or system_file"),
        ("anthropic = 'x'\n", {}, r"anthropic must be a table \(\[anthropic\]\)"),
        ("", {"LERNIE_ANTHROPIC_MAX_RETRIES": "few"}, "LERNIE_ANTHROPIC_MAX_RETRIES='few'"),
        ("[model.anthropic]\n", {}, "unknown key 'model'|model must be str"),
    ],
)
def test_r_step_8_a_bad_or_unknown_setting_is_a_config_error(
    tmp_path: Path, text: str, env: dict[str, str], message: str
) -> None:
    (tmp_path / CONFIG_FILE).write_text(text)
    with pytest.raises(ConfigError, match=message):
        load(tmp_path, env)


def test_r_ws_1_defaults_unchanged_for_the_old_keys(tmp_path: Path) -> None:
    assert load(tmp_path, {}) == Config(model="scripted", model_command="", step_budget=100)


def test_r_step_5_model_timeout_fails_the_hop_with_one_line_through_the_cli(
    ws: Workspace, tmp_path: Path
) -> None:
    script = tmp_path / "hang.py"
    script.write_text("import sys, time\nsys.stdin.read()\ntime.sleep(600)\n")
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    (ws.root / CONFIG_FILE).write_text("model_timeout = 0.3\n")
    env = {"LERNIE_MODEL": "command", "LERNIE_MODEL_COMMAND": command}
    proc = run_cli(["prompt", str(ws.root), "x" * 100_000], env)
    assert proc.returncode == 0, proc.stderr
    root = proc.stdout.splitlines()[0]
    wait_quiescent(ws)
    log = ws.driver_log(root).read_text()
    assert log.count("\n") == 1
    assert log.startswith("lernie advance: model command [")
    assert log.endswith(
        "gave no answer within 0.3 s (model_timeout); its process group was killed\n"
    )
    assert names(ws, root) == ["001-user.md"]
    assert lock_is_free(ws, root)


def test_r_step_8_the_scripted_default_never_imports_an_sdk(ws: Workspace) -> None:
    code = (
        "import sys\n"
        "from lernie_ref.cli import main\n"
        "assert main(['prompt', sys.argv[1], 'hi', '--wait']) == 0\n"
        "from lernie_ref.substrate.config import load\n"
        "from lernie_ref.adapters import select_model\n"
        "select_model('scripted', config=load(__import__('pathlib').Path(sys.argv[1]), {}))\n"
        "loaded = {'anthropic', 'openai', 'httpx', 'lernie_ref.adapters.anthropic',\n"
        "          'lernie_ref.adapters.openai', 'lernie_ref.adapters.provider'}\n"
        "print(sorted(loaded & set(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(ws.root)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]"
    wait_quiescent(ws)
