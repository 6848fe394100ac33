"""The workspace configuration ``<ws>/lernie.toml`` and its ``LERNIE_*`` overrides.

Rules: R-WS-1, R-STEP-6.

Every field of :class:`Config` is a key of the file and has an environment
override named ``LERNIE_<FIELD>`` (upper case); a set, non-empty variable wins
over the file. Values are type-checked against the field's default; a bad value
or an unknown key is a :class:`~lernie_ref.core.errors.ConfigError`, never a silent default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lernie_ref.core.errors import ConfigError, ContainmentError
from lernie_ref.substrate import guarded

CONFIG_FILE = "lernie.toml"
ENV_PREFIX = "LERNIE_"


@dataclass(frozen=True)
class Config:
    model: str = "scripted"
    """The model adapter: ``scripted`` (deterministic, default) or ``command``."""
    model_command: str = ""
    """For ``command``: a shell-free command line (split with shlex)."""
    step_budget: int = 100
    """Model calls one agent may make before it stops as ``budget-exhausted``."""


DEFAULT_TEXT = """\
# lernie workspace configuration. Each key can be overridden by the
# environment variable LERNIE_<KEY> (upper case), e.g. LERNIE_MODEL=command.

# The model adapter: "scripted" (deterministic, no network) or "command"
# (an executable that reads the request as JSON on stdin and answers on stdout).
model = "scripted"

# For model = "command": the command line to run (no shell; split like a shell would).
model_command = ""

# Model calls an agent may make before it stops with epitaph budget-exhausted.
step_budget = 100
"""


def write_default(ws: Path) -> Path:
    """Write the default ``lernie.toml`` into ``ws`` (``lernie new``); create-only, and never
    through a link (R-WS-7)."""
    with guarded.open_root(ws) as root:
        root.write_new(CONFIG_FILE, DEFAULT_TEXT.encode("utf-8"))
    return ws / CONFIG_FILE


def _check(name: str, value: object, default: object, where: str) -> object:
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise ConfigError(
            f"{where}: {name} must be {type(default).__name__}, not {type(value).__name__}"
        )
    if name == "step_budget" and isinstance(value, int) and value < 1:
        raise ConfigError(f"{where}: step_budget must be at least 1, not {value}")
    if name == "model" and value == "":
        raise ConfigError(f"{where}: model must not be empty")
    return value


def _from_env(name: str, raw: str, default: object) -> object:
    var = ENV_PREFIX + name.upper()
    if isinstance(default, bool):
        if raw not in ("true", "false"):
            raise ConfigError(f"{var}={raw!r}: expected true or false")
        return raw == "true"
    if isinstance(default, int):
        digits = raw[1:] if raw[:1] in "+-" else raw
        if not digits.isascii() or not digits.isdigit():
            raise ConfigError(f"{var}={raw!r}: expected an integer")
        return int(raw)
    return raw


def load(ws: Path, env: Mapping[str, str]) -> Config:
    """Read ``<ws>/lernie.toml`` (absent → defaults), then apply ``LERNIE_<FIELD>`` overrides."""
    import tomllib

    path = ws / CONFIG_FILE
    fields = {f.name: f.default for f in dataclasses.fields(Config)}
    values: dict[str, object] = {}
    try:  # a regular file directly under the root, never read through a link (R-WS-7)
        with guarded.open_root(ws) as root:
            data = root.read_bytes(CONFIG_FILE)
        table = tomllib.loads(data.decode("utf-8"))
    except FileNotFoundError:
        table = {}
    except OSError as exc:
        raise ConfigError(f"read {path}: {exc.strerror}") from None
    except ContainmentError as exc:
        raise ConfigError(str(exc)) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    for key, value in table.items():
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise ConfigError(f"{path}: unknown key {key!r} (known keys: {known})")
        values[key] = _check(key, value, fields[key], str(path))
    for name, default in fields.items():
        raw = env.get(ENV_PREFIX + name.upper())
        if raw:
            values[name] = _check(
                name, _from_env(name, raw, default), default, ENV_PREFIX + name.upper()
            )
    return Config(**values)  # type: ignore[arg-type]
