"""The implementation adapter file: how the kit drives an implementation (TOML).

An adapter names the program, one argv template per verb, the environment
prefix, the deterministic model's settings and the workspace layout names; optionally the
names and inputs of the implementation's tools (``[tools]``, for the kit's model) and a
``[model_server]`` table: then the kit starts its scripted model server
(:mod:`lernie_stateful.conform.model_server`) for each case and program and fills in
``{model_url}`` (``http://127.0.0.1:<port>``) and ``{model_port}`` in ``[env]`` and ``[model]``.
``--impl lernie`` is the reference's own file, installed with the package
(``adapters/lernie.toml``); ``--impl PATH.toml`` is any other.
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path

from lernie_stateful.audit import Layout
from lernie_stateful.conform.kit_model import DEFAULT_TOOLS, ToolSpec

REQUIRED_VERBS = ("new", "prompt", "dispatch", "message", "scan", "stop")
OPTIONAL_VERBS = ("scan_json", "log", "message_file")
_FIELD = re.compile(r"\{(\w+)\}")

Template = list[str | list[str]]
TOOL_FIELDS = {"message": ("agent", "content"), "dispatch": ("goal", "name"), "noop": ()}
SERVER_APIS = ("anthropic", "openai", "both")


class AdapterError(Exception):
    """The adapter file cannot drive an implementation; the text says what to fix."""


@dataclass(frozen=True)
class Adapter:
    name: str
    source: str
    command: tuple[str, ...]
    program: str
    env_prefix: str
    model: Mapping[str, str]
    verbs: Mapping[str, Template]
    layout: Layout
    plain_env: Mapping[str, str] = field(default_factory=dict)
    tools: Mapping[str, ToolSpec] = field(default_factory=lambda: dict(DEFAULT_TOOLS))
    server_api: str | None = None
    """``[model_server] api``: the kit serves its model over HTTP for every case; None: not."""
    served: Mapping[str, str] = field(default_factory=dict)
    """``model_url`` and ``model_port`` of the server running for the current case."""

    def has(self, verb: str) -> bool:
        return verb in self.verbs

    def argv(self, verb: str, values: Mapping[str, str]) -> list[str]:
        """The command line of ``verb`` with its fields filled in (optional groups dropped when
        one of their fields is not given)."""
        base = [fill(part, self.base_values()) for part in self.command]
        out = list(base)
        for part in self.verbs[verb]:
            if isinstance(part, list):
                if all(set(_FIELD.findall(p)) <= values.keys() for p in part):
                    out += [fill(p, values) for p in part]
            else:
                missing = set(_FIELD.findall(part)) - values.keys()
                if missing:
                    raise AdapterError(f"adapter {self.source}: verb {verb!r} needs "
                                       f"{', '.join(sorted(missing))}, which the kit does not "
                                       "provide")
                out.append(fill(part, values))
        return out

    def base_values(self) -> dict[str, str]:
        return {"python": sys.executable,
                "kit_model": f"{sys.executable} -m lernie_stateful.conform.kit_model",
                **self.served}

    def env(self, extra: Mapping[str, str], inherited: Mapping[str, str]) -> dict[str, str]:
        """The inherited environment minus the implementation's prefix, plus the adapter's
        ``[env]`` variables as named, and the model's and the step's variables (names given
        without the prefix)."""
        env = {k: v for k, v in inherited.items() if not k.startswith(self.env_prefix)}
        for key, value in self.plain_env.items():
            env[key] = fill(value, self.base_values())
        for key, value in {**self.model, **extra}.items():
            env[self.env_prefix + key] = fill(value, self.base_values())
        return env


def fill(text: str, values: Mapping[str, str]) -> str:
    """Replace ``{field}`` for the fields given; other braces stay as they are."""
    return _FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def load(spec: str) -> Adapter:
    """The name of an installed adapter (``lernie``, ``lernie-anthropic``, ``lernie-openai``:
    the files in ``adapters/``) or a path to an adapter TOML file."""
    installed = resources.files("lernie_stateful.conform").joinpath("adapters", spec + ".toml")
    if "/" not in spec and not spec.endswith(".toml") and installed.is_file():
        text = installed.read_text(encoding="utf-8")
        source = spec
    else:
        try:
            text = Path(spec).read_text(encoding="utf-8")
        except OSError as exc:
            raise AdapterError(f"cannot read adapter {spec}: {exc.strerror or exc}") from None
        source = spec
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AdapterError(f"adapter {source} is not valid TOML: {exc}") from None
    return parse(data, source)


def parse_tools(raw: object, source: str) -> dict[str, ToolSpec]:
    """An adapter's ``[tools]`` table over the reference's defaults::

        [tools]
        dispatch = { name = "dispatch", input = { role = "worker", goal = "{goal}" } }

    maps the kit's tool (``message``, ``dispatch``, ``noop``) to the implementation's name
    and input; a template's fields are the kit's (``message``: agent, content;
    ``dispatch``: goal, name), a value without fields is a constant."""
    if not isinstance(raw, dict):
        raise AdapterError(f"adapter {source}: [tools] must be a table")
    out = dict(DEFAULT_TOOLS)
    for tool, spec in raw.items():
        if tool not in TOOL_FIELDS:
            raise AdapterError(f"adapter {source}: unknown tool {tool!r} in [tools] (known: "
                               f"{', '.join(TOOL_FIELDS)})")
        if not isinstance(spec, dict) or not isinstance(spec.get("name", tool), str) or \
                set(spec) - {"name", "input"}:
            raise AdapterError(f"adapter {source}: tools.{tool} must be a table with a string "
                               "name and an input table")
        inputs = spec.get("input", DEFAULT_TOOLS[tool].input)
        if not isinstance(inputs, dict) or not all(isinstance(v, str) for v in inputs.values()):
            raise AdapterError(f"adapter {source}: tools.{tool}.input must map names to "
                               "strings")
        for template in inputs.values():
            bad = sorted(set(_FIELD.findall(template)) - set(TOOL_FIELDS[tool]))
            if bad:
                raise AdapterError(
                    f"adapter {source}: tools.{tool}.input uses {', '.join(bad)}; the kit "
                    f"gives {tool} only {', '.join(TOOL_FIELDS[tool]) or 'no fields'}")
        out[tool] = ToolSpec(str(spec.get("name", tool)),
                             {str(k): str(v) for k, v in inputs.items()})
    return out


def _strings(value: object, what: str, source: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AdapterError(f"adapter {source}: {what} must be an array of strings")
    return [str(v) for v in value]


def parse(data: Mapping[str, object], source: str) -> Adapter:
    command = _strings(data.get("command"), "command", source)
    if not command:
        raise AdapterError(f"adapter {source}: command is empty")
    verbs_raw = data.get("verbs")
    if not isinstance(verbs_raw, dict):
        raise AdapterError(f"adapter {source}: no [verbs] table")
    missing = [v for v in REQUIRED_VERBS if v not in verbs_raw]
    if missing:
        raise AdapterError(
            f"adapter {source}: no command line for verb{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)} (every adapter gives "
            f"{', '.join(REQUIRED_VERBS)}; optional: {', '.join(OPTIONAL_VERBS)})")
    verbs: dict[str, Template] = {}
    for verb, template in verbs_raw.items():
        if not isinstance(template, list):
            raise AdapterError(f"adapter {source}: verbs.{verb} must be an array")
        parts: Template = []
        for part in template:
            if isinstance(part, str):
                parts.append(part)
            else:
                parts.append(_strings(part, f"an optional group of verbs.{verb}", source))
        verbs[str(verb)] = parts
    model = data.get("model", {})
    if not isinstance(model, dict) or not all(isinstance(v, str) for v in model.values()):
        raise AdapterError(f"adapter {source}: [model] must map names to strings")
    layout_raw = data.get("layout", {})
    if not isinstance(layout_raw, dict):
        raise AdapterError(f"adapter {source}: [layout] must be a table")
    known = {f.name for f in fields(Layout)}
    unknown = sorted(set(layout_raw) - known)
    if unknown:
        raise AdapterError(f"adapter {source}: unknown layout names {', '.join(unknown)} "
                           f"(known: {', '.join(sorted(known))})")
    layout = Layout(**{str(k): str(v) for k, v in layout_raw.items()})
    plain = data.get("env", {})
    if not isinstance(plain, dict) or not all(isinstance(v, str) for v in plain.values()):
        raise AdapterError(f"adapter {source}: [env] must map names to strings")
    prefix = data.get("env_prefix", "")
    program = data.get("program", "")
    if not isinstance(prefix, str) or not isinstance(program, str) or not program:
        raise AdapterError(f"adapter {source}: env_prefix and program must be strings "
                           "(program non-empty)")
    name = data.get("name", source)
    tools = parse_tools(data.get("tools", {}), source)
    server = data.get("model_server")
    api: str | None = None
    if server is not None:
        api = server.get("api", "both") if isinstance(server, dict) else None
        if not isinstance(server, dict) or set(server) - {"api"} or api not in SERVER_APIS:
            raise AdapterError(f"adapter {source}: [model_server] takes one key, api = "
                               f"{' | '.join(repr(a) for a in SERVER_APIS)}")
    return Adapter(str(name), source, tuple(command), program, prefix,
                   {str(k): str(v) for k, v in model.items()}, verbs, layout,
                   {str(k): str(v) for k, v in plain.items()}, tools, api)
