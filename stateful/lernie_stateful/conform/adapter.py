"""The implementation adapter file: how the kit drives an implementation (TOML).

An adapter names the program, one argv template per verb, the environment
prefix, the deterministic model's settings and the workspace layout names; optionally the
names and inputs of the implementation's tools (``[tools]``, for the kit's model) and a
``[model_server]`` table: then the kit starts its scripted model server
(:mod:`lernie_stateful.conform.model_server`) for each case and program and fills in
``{model_url}`` (``http://127.0.0.1:<port>``) and ``{model_port}`` in ``[env]`` and ``[model]``.
``--impl NAME`` is an adapter installed with the package (``adapters/NAME.toml``:
``lernie``, the reference's own file, and the adapters of other implementations);
``--impl PATH.toml`` is any other.

An implementation that is not installed on ``PATH`` and keeps state outside the
workspace declares it (docs/upstream.md, "The adapter format"):

- ``[locate.NAME]``: a directory named by an environment variable (``env``) that must
  hold the listed paths (``holds``); ``{NAME}`` is then its absolute path in every
  template. Unset or wrong is one clear error, before anything runs.
- ``[[check]]``: commands run once when the adapter is loaded, with their expected
  standard output (a version pin).
- ``{env:VAR}``: the inherited value of ``VAR`` (``PATH = "{dir}/bin:{env:PATH}"``).
- ``[[setup]]``: per run (one workspace of a case or a program), commands to run
  (``run = [...]``) and files to write (``write = PATH``, ``text = ...``) before the
  workspace is created; ``{run}`` is a fresh directory beside the workspace, private to
  the run (a home directory, a configuration file).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

from lernie_stateful.audit.layout import Layout
from lernie_stateful.conform.kit_model import DEFAULT_TOOLS, ToolSpec

REQUIRED_VERBS = ("new", "prompt", "dispatch", "message", "scan", "stop")
OPTIONAL_VERBS = ("scan_json", "log", "message_file")
_FIELD = re.compile(r"\{(\w+)\}")
_ENV_FIELD = re.compile(r"\{env:(\w+)\}")
INSTALLED = "adapters"

Template = list[str | list[str]]
TOOL_FIELDS = {"message": ("agent", "content"), "dispatch": ("goal", "name"), "noop": (),
               "bash": ("command",), "read_file": ("path",), "cd": ("path",),
               "apply_patch": ("input",)}
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
    values: Mapping[str, str] = field(default_factory=dict)  # {locate} dirs, {run}, model
    setup: tuple[Mapping[str, object], ...] = ()
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
                **self.values, **self.served}

    def env(self, extra: Mapping[str, str], inherited: Mapping[str, str]) -> dict[str, str]:
        """The inherited environment minus the implementation's prefix, plus the adapter's
        ``[env]`` variables as named, and the model's and the step's variables (names given
        without the prefix). ``{env:VAR}`` in a value is the inherited ``VAR``."""
        env = {k: v for k, v in inherited.items() if not k.startswith(self.env_prefix)}

        def value(text: str) -> str:
            text = _ENV_FIELD.sub(lambda m: inherited.get(m.group(1), ""), text)
            return fill(text, self.base_values())

        for key, text in self.plain_env.items():
            env[key] = value(text)
        for key, text in {**self.model, **extra}.items():
            env[self.env_prefix + key] = value(text)
        return env

    def bound(self, values: Mapping[str, str]) -> Adapter:
        """This adapter with more template values (a run's ``{run}``, the model's port)."""
        return replace(self, values={**self.values, **values})


def fill(text: str, values: Mapping[str, str]) -> str:
    """Replace ``{field}`` for the fields given; other braces stay as they are."""
    return _FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def installed() -> list[str]:
    """The names of the adapters installed with the package."""
    root = resources.files("lernie_stateful.conform").joinpath(INSTALLED)
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def load(spec: str, environ: Mapping[str, str] | None = None, locate: bool = True) -> Adapter:
    """An installed adapter by name (``lernie``, ``upstream-lernie-0.0.11``) or a path to an
    adapter TOML file. ``environ`` (default: this process's) resolves ``[locate]``."""
    if "/" not in spec and not spec.endswith(".toml") and spec in installed():
        text = resources.files("lernie_stateful.conform").joinpath(
            INSTALLED, f"{spec}.toml").read_text(encoding="utf-8")
        source = spec
    elif "/" not in spec and not spec.endswith(".toml") and not Path(spec).is_file():
        raise AdapterError(f"no installed adapter {spec!r} (installed: "
                           f"{', '.join(installed())}; or give a path to an adapter file)")
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
    return parse(data, source, os.environ if environ is None else environ, locate)


def parse_tools(raw: object, source: str) -> dict[str, ToolSpec]:
    """An adapter's ``[tools]`` table over the reference's defaults::

        [tools]
        dispatch = { name = "dispatch", input = { role = "worker", goal = "{goal}" } }

    maps the kit's tool (``message``, ``dispatch``, ``noop``, and the work tools ``bash``,
    ``read_file``, ``cd``, ``apply_patch``) to the implementation's name and input; a
    template's fields are the kit's (``message``: agent, content; ``dispatch``: goal, name;
    ``bash``: command; ``read_file``, ``cd``: path; ``apply_patch``: input), a value without
    fields is a constant."""
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


def _locate(data: Mapping[str, object], source: str,
            environ: Mapping[str, str]) -> dict[str, str]:
    """``[locate.NAME]``: the directory each names, checked (one line when unset or wrong)."""
    table = data.get("locate", {})
    if not isinstance(table, dict):
        raise AdapterError(f"adapter {source}: [locate] must be a table")
    out: dict[str, str] = {}
    for name, spec in table.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("env"), str):
            raise AdapterError(f"adapter {source}: locate.{name} needs env = \"VARIABLE\"")
        var = str(spec["env"])
        what = str(spec.get("what", "the implementation's directory"))
        holds = _strings(spec.get("holds", []), f"locate.{name}.holds", source)
        given = environ.get(var, "")
        if not given:
            raise AdapterError(f"adapter {source}: set {var} to {what}")
        where = Path(given).expanduser().resolve()
        missing = [h for h in holds if not (where / h).exists()]
        if not where.is_dir() or missing:
            raise AdapterError(f"adapter {source}: {var}={given} is not {what} ("
                               + (f"no {missing[0]} in it" if where.is_dir() and missing
                                  else "no such directory") + ")")
        out[str(name)] = str(where)
    return out


def _checks(data: Mapping[str, object], source: str, values: Mapping[str, str]) -> None:
    """``[[check]]``: each command's standard output must be the given text."""
    checks = data.get("check", [])
    if not isinstance(checks, list):
        raise AdapterError(f"adapter {source}: check must be an array of tables")
    for chk in checks:
        if not isinstance(chk, dict):
            raise AdapterError(f"adapter {source}: check must be an array of tables")
        argv = [fill(a, values) for a in _strings(chk.get("argv"), "check.argv", source)]
        want = fill(str(chk.get("stdout", "")), values)
        try:
            proc = subprocess.run(argv, capture_output=True, timeout=60, check=False,
                                  stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise AdapterError(f"adapter {source}: cannot run {argv[0]}: "
                               f"{exc.strerror or exc}") from None
        got = proc.stdout.decode("utf-8", "replace")
        if proc.returncode != 0 or got != want:
            raise AdapterError(f"adapter {source}: `{' '.join(argv)}` printed {got!r} "
                               f"(exit {proc.returncode}), expected {want!r}")


def parse(data: Mapping[str, object], source: str,
          environ: Mapping[str, str] | None = None, locate: bool = True) -> Adapter:
    values = _locate(data, source, os.environ if environ is None else environ) if locate \
        else {}
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
    names: dict[str, Any] = {}
    for f in fields(Layout):
        if f.name not in layout_raw:
            continue
        raw = layout_raw[f.name]
        if isinstance(f.default, tuple):
            names[f.name] = tuple(_strings(raw, f"layout.{f.name}", source))
        elif isinstance(raw, str):
            names[f.name] = raw
        else:
            raise AdapterError(f"adapter {source}: layout.{f.name} must be a string")
    layout = Layout(**names)
    plain = data.get("env", {})
    if not isinstance(plain, dict) or not all(isinstance(v, str) for v in plain.values()):
        raise AdapterError(f"adapter {source}: [env] must map names to strings")
    prefix = data.get("env_prefix", "")
    program = data.get("program", "")
    if not isinstance(prefix, str) or not isinstance(program, str) or not program:
        raise AdapterError(f"adapter {source}: env_prefix and program must be strings "
                           "(program non-empty)")
    setup = data.get("setup", [])
    if not isinstance(setup, list) or not all(
            isinstance(s, dict) and (("run" in s) != ("write" in s)) for s in setup):
        raise AdapterError(f"adapter {source}: each [[setup]] has either run = [...] or "
                           "write = PATH with text = ...")
    for s in setup:
        if "run" in s:
            _strings(s["run"], "setup.run", source)
        elif not isinstance(s["write"], str) or not isinstance(s.get("text", ""), str):
            raise AdapterError(f"adapter {source}: setup.write and setup.text are strings")
    if locate:
        _checks(data, source, values)
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
                   {str(k): str(v) for k, v in plain.items()}, tools=tools, server_api=api,
                   values=values, setup=tuple(setup))


def layout_of(spec: str) -> Layout:
    """The layout names of an adapter, read without locating or checking the implementation
    (the audit of a workspace it left needs no binary)."""
    return load(spec, environ=None, locate=False).layout
