"""Workspace configuration: defaults, file, ``LERNIE_*`` overrides, refusal of bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from lernie_ref.core.errors import ConfigError
from lernie_ref.substrate.config import CONFIG_FILE, Config, load, write_default
from lernie_ref.substrate.workspace import Workspace


def test_new_workspace_has_the_default_config(ws: Workspace) -> None:
    assert (ws.root / CONFIG_FILE).is_file()
    assert load(ws.root, {}) == Config()


def test_missing_file_means_defaults(tmp_path: Path) -> None:
    assert load(tmp_path, {}) == Config(model="scripted", model_command="", step_budget=100)


def test_file_values_and_env_overrides(tmp_path: Path) -> None:
    (tmp_path / CONFIG_FILE).write_text('model = "command"\nmodel_command = "x --y"\n')
    assert load(tmp_path, {}) == Config(model="command", model_command="x --y")
    env = {"LERNIE_MODEL": "scripted", "LERNIE_STEP_BUDGET": "7", "LERNIE_MODEL_COMMAND": ""}
    assert load(tmp_path, env) == Config(model="scripted", model_command="x --y", step_budget=7)


@pytest.mark.parametrize(
    ("text", "env"),
    [
        ("step_budget = 0\n", {}),
        ('step_budget = "5"\n', {}),
        ("step_budget = true\n", {}),
        ("model = 3\n", {}),
        ('model = ""\n', {}),
        ('modle = "x"\n', {}),
        ("this is not toml", {}),
        ("", {"LERNIE_STEP_BUDGET": "many"}),
        ("", {"LERNIE_STEP_BUDGET": "-1"}),
    ],
)
def test_bad_values_are_refused(tmp_path: Path, text: str, env: dict[str, str]) -> None:
    (tmp_path / CONFIG_FILE).write_text(text)
    with pytest.raises(ConfigError):
        load(tmp_path, env)


def test_write_default_never_overwrites(tmp_path: Path) -> None:
    write_default(tmp_path)
    with pytest.raises(FileExistsError):
        write_default(tmp_path)
