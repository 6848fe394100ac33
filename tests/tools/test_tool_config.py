"""R-TOOL-1: which tools an agent is offered (lernie.toml ``tools``, ``LERNIE_TOOLS``), and the
scripted model's directives for the work tools (docs/models.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lernie_ref.adapters import ModelRequest, parse_script
from lernie_ref.core.errors import ConfigError
from lernie_ref.core.tooldefs import ALL_TOOLS, DEFAULT_TOOLS, TOOL_SPECS, tool_specs
from lernie_ref.substrate.config import Config, load, write_default


def _ws(tmp_path: Path, text: str | None = None) -> Path:
    if text is None:
        write_default(tmp_path)
    else:
        (tmp_path / "lernie.toml").write_text(text)
    return tmp_path


def test_r_tool_1_default_offers_every_contained_tool_and_no_shell(tmp_path: Path) -> None:
    assert load(_ws(tmp_path), {}).tools == DEFAULT_TOOLS == Config().tools
    assert "bash" not in DEFAULT_TOOLS
    assert [t["name"] for t in ModelRequest("a", [], []).tools] == list(DEFAULT_TOOLS)


def test_r_tool_1_the_file_and_the_environment_choose(tmp_path: Path) -> None:
    ws = _ws(tmp_path, 'tools = ["bash", "read_file"]\ntool_timeout = 5\ntool_output_cap = 9\n')
    config = load(ws, {})
    assert (config.tools, config.tool_timeout, config.tool_output_cap) == (
        ("bash", "read_file"), 5.0, 9)
    assert load(ws, {"LERNIE_TOOLS": " message , cd "}).tools == ("message", "cd")
    assert load(_ws(tmp_path, "tools = []\n"), {}).tools == ()
    # declared to the model in one fixed order, whatever the list's order
    assert [t["name"] for t in tool_specs(("bash", "read_file"))] == ["read_file", "bash"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [('tools = ["bash", "rm"]\n', "unknown tool 'rm'"), ('tools = ["cd", "cd"]\n', "twice"),
     ('tools = "bash"\n', "list of tool names"), ("tool_output_cap = 0\n", "at least 1"),
     ("tool_timeout = -1\n", "positive number")],
)
def test_r_tool_1_bad_settings_are_config_errors(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        load(_ws(tmp_path, text), {})


def test_r_tool_1_names_and_input_shapes_are_upstreams() -> None:
    shapes = {
        name: (sorted(spec["input_schema"]["properties"]),  # type: ignore[index]
               spec["input_schema"]["required"])  # type: ignore[index]
        for name, spec in TOOL_SPECS.items()
    }
    assert set(shapes) == set(ALL_TOOLS)
    assert shapes["bash"] == (["command"], ["command"])
    assert shapes["read_file"] == (["path"], ["path"])
    assert shapes["cd"] == (["path"], ["path"])
    assert shapes["apply_patch"] == (["input"], ["input"])
    assert shapes["multi_tool"] == (["execution", "invocations", "on_failure"], ["invocations"])
    for spec in TOOL_SPECS.values():
        assert spec["input_schema"]["additionalProperties"] is False  # type: ignore[index]


def test_scripted_directives_for_the_work_tools() -> None:
    script = parse_script(
        "fix it\n@read_file src/a.py\n@cd src\n@bash make test && echo ok\n@apply_patch\n"
        "*** Begin Patch\n*** Delete File: a.py\n*** End Patch\n@read_file a.py\n@bash\n"
    )
    assert script.actions == (
        ("read_file", {"path": "src/a.py"}), ("cd", {"path": "src"}),
        ("bash", {"command": "make test && echo ok"}),
        ("apply_patch", {"input": "*** Begin Patch\n*** Delete File: a.py\n*** End Patch\n"}),
        ("read_file", {"path": "a.py"}),
    )
    assert script.first_line == "fix it"
    assert script.directive_count == 5  # `@bash` alone is text: it has no command
    unclosed = parse_script("@apply_patch\n*** Begin Patch\n*** Delete File: x")
    assert unclosed.actions == (
        ("apply_patch", {"input": "*** Begin Patch\n*** Delete File: x\n"}),)


def test_r_tool_1_agent_tools_give_one_agent_its_own_list(tmp_path: Path) -> None:
    ws = _ws(tmp_path, '[agent_tools]\ntester = ["bash"]\n"20260711T000000Z-0a1b2c3d" = []\n')
    config = load(ws, {})
    asked: list[str] = []

    def name(value: str) -> Callable[[], str]:
        return lambda: asked.append(value) or value  # type: ignore[func-returns-value]

    assert config.tools_for("20260711T000000Z-0a1b2c3d", name("tester")) == ()
    assert asked == []  # the id is looked up first; the name is not even read
    assert config.tools_for("x", name("tester")) == ("bash",)
    assert config.tools_for("x", name("other")) == DEFAULT_TOOLS
    assert Config().tools_for("x", name("never")) == DEFAULT_TOOLS
    assert asked == ["tester", "other"]  # no table: no name read at all
    with pytest.raises(ConfigError, match="unknown tool 'sh'"):
        load(_ws(tmp_path, '[agent_tools]\nx = ["sh"]\n'), {})
    with pytest.raises(ConfigError, match="must be a table"):
        load(_ws(tmp_path, 'agent_tools = ["bash"]\n'), {})
