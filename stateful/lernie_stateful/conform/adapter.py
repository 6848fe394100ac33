"""The implementation adapter file: how the kit drives an implementation (TOML).

An adapter names the program, one argv template per verb, the environment
prefix, the deterministic model's settings and the workspace layout names.
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

REQUIRED_VERBS = ("new", "prompt", "dispatch", "message", "scan", "stop")
OPTIONAL_VERBS = ("scan_json", "log", "message_file")
_FIELD = re.compile(r"\{(\w+)\}")

Template = list[str | list[str]]


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
                "kit_model": f"{sys.executable} -m lernie_stateful.conform.kit_model"}

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
    """``lernie`` (the installed reference adapter) or a path to an adapter TOML file."""
    if spec == "lernie":
        text = resources.files("lernie_stateful.conform").joinpath(
            "adapters", "lernie.toml").read_text(encoding="utf-8")
        source = "lernie"
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
    return Adapter(str(name), source, tuple(command), program, prefix,
                   {str(k): str(v) for k, v in model.items()}, verbs, layout,
                   {str(k): str(v) for k, v in plain.items()})
