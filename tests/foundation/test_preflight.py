"""R-CLI-8 and R-STEP-9 at the library level: the model record's lineage, its parsing, the
environment's different choice, and the command model's checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lernie_ref.core.errors import ConfigError
from lernie_ref.substrate.config import load
from lernie_ref.substrate.preflight import (
    apply,
    check_spec,
    env_differs,
    parse_record,
    recorded,
    settings_in,
    spec_of,
    write_record,
)
from lernie_ref.substrate.workspace import Workspace

ROOT = "20260711T000000Z-00000001"
CHILD = f"{ROOT}-20260711T000001Z-00000002"
GRANDCHILD = f"{CHILD}-20260711T000002Z-00000003"


def test_r_step_9_an_agent_without_a_record_runs_on_its_nearest_ancestors(
    ws: Workspace,
) -> None:
    root = str(ws.root)
    assert recorded(root, GRANDCHILD) is None  # no record in the line: the configuration rules
    command = {"model": "command", "model_command": "/bin/true", "model_timeout": 5.0}
    write_record(root, ROOT, command)
    assert recorded(root, GRANDCHILD) is not None
    owner, raw = recorded(root, GRANDCHILD) or ("", b"")
    assert owner == ROOT and parse_record(owner, raw) == command
    write_record(root, CHILD, {"model": "scripted"})
    owner, raw = recorded(root, GRANDCHILD) or ("", b"")
    assert owner == CHILD and raw == b'{"model": "scripted"}\n'
    assert [p.name for p in ws.steps_dir(CHILD).iterdir()] == ["model.json"]  # no temp left


@pytest.mark.parametrize("raw", [b"", b"{", b'{"model": "gpt"}', b"[]", b"\xff"])
def test_r_step_9_a_record_that_is_not_one_is_one_line_naming_it(raw: bytes) -> None:
    with pytest.raises(ConfigError, match=f"steps/{ROOT}/model.json is not a model record"):
        parse_record(ROOT, raw)


def test_r_step_9_the_environment_differs_only_when_it_chooses_something_else(
    tmp_path: Path,
) -> None:
    same = {"LERNIE_MODEL": "openai"}
    recorded_spec = spec_of(load(tmp_path, same))  # as `prompt` records it: with its table
    assert env_differs(recorded_spec, load(tmp_path, same), same) == []
    other = {"LERNIE_MODEL": "openai", "LERNIE_OPENAI_MODEL": "gpt-4o"}
    assert env_differs(recorded_spec, load(tmp_path, other), other) == [
        "LERNIE_MODEL",
        "LERNIE_OPENAI_MODEL",
    ]
    assert env_differs(recorded_spec, load(tmp_path, {}), {}) == []  # nothing chosen
    applied = apply(load(tmp_path, other), {"model": "command", "model_command": "/x"})
    assert (applied.model, applied.model_command, applied.openai.model) == (
        "command",
        "/x",
        "gpt-4o",
    )
    assert spec_of(applied) == {"model": "command", "model_command": "/x", "model_timeout": 600.0}


@pytest.mark.parametrize(
    ("command", "error"),
    [
        ("", "needs a command line"),
        ("'unclosed", "cannot be split into words"),
        ("./model", "is a relative path"),
        ("no-such-program-here", "is not an executable on PATH"),
        ("/nonexistent/model", "does not exist"),
    ],
)
def test_r_cli_8_the_command_models_program_is_checked(command: str, error: str) -> None:
    spec = {"model": "command", "model_command": command, "model_timeout": 1.0}
    with pytest.raises(ConfigError, match=error):
        check_spec(spec, {"PATH": "/usr/bin:/bin"}, "/")


def test_r_cli_8_a_program_found_on_path_or_by_absolute_path_passes(tmp_path: Path) -> None:
    for command in ("sh -c true", "/bin/sh -c true"):
        check_spec({"model": "command", "model_command": command}, {"PATH": "/usr/bin:/bin"}, "/")
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\n")
    with pytest.raises(ConfigError, match="is not executable"):
        check_spec({"model": "command", "model_command": str(plain)}, {}, "/")


_NAMES = st.sampled_from(
    ["LERNIE_MODEL", "LERNIE_STEP_BUDGET", "LERNIE_LOCK_FD", "LERNIE_AGENT", "LERNIE_",
     "PATH", "HOME", "XLERNIE_MODEL", "lernie_model"]
)


@given(st.dictionaries(_NAMES, st.sampled_from(["", "x", "scripted"]), max_size=9))
def test_r_cli_8_the_settings_are_the_non_empty_lernie_variables_that_configure(
    env: dict[str, str],
) -> None:
    """The preflight's (and the scan's R-STEP-9 warning's) view of the environment: every
    ``LERNIE_*`` variable set to something, but the marks that are not configuration."""
    marks = {"LERNIE_LOCK_FD", "LERNIE_AGENT"}
    expected = sorted(k for k, v in env.items() if k.startswith("LERNIE_") and v and k not in marks)
    assert settings_in(env) == expected
