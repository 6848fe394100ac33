"""The workspace configuration ``<ws>/lernie.toml`` and its ``LERNIE_*`` overrides.

Rules: R-WS-1, R-STEP-6.

Every field of :class:`Config` is a key of the file and has an environment
override named ``LERNIE_<FIELD>`` (upper case); a set, non-empty variable wins
over the file. Values are type-checked against the field's default; a bad value
or an unknown key is a :class:`~lernie_ref.core.errors.ConfigError`, never a silent default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lernie_ref.core.errors import ConfigError, ContainmentError
from lernie_ref.core.tooldefs import ALL_TOOLS, DEFAULT_TOOLS
from lernie_ref.substrate import guarded
from lernie_ref.substrate.configtext import CONFIG_FILE as CONFIG_FILE
from lernie_ref.substrate.configtext import DEFAULT_TEXT as DEFAULT_TEXT
from lernie_ref.substrate.configtext import MODELS, PROVIDERS

ENV_PREFIX = "LERNIE_"


DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"
DEFAULT_OPENAI_MODEL = "gpt-4.1-mini"


@dataclass(frozen=True)
class ProviderSettings:
    """A provider adapter's table, ``[anthropic]`` or ``[openai]`` (R-STEP-6, R-STEP-8).

    Each key is overridable by ``LERNIE_<TABLE>_<KEY>`` (``LERNIE_ANTHROPIC_MODEL``).
    """

    model: str
    """The provider's model name."""
    max_tokens: int = 4096
    """The most output tokens one call may produce."""
    system: str = ""
    """The system prompt; empty: the built-in one. Exclusive with ``system_file``."""
    system_file: str = ""
    """A file holding the system prompt (relative paths from the workspace directory)."""
    temperature: float | None = None
    """Sampling temperature; unset: the provider's default."""
    timeout: float = 600.0
    """Seconds one HTTP attempt may take."""
    max_retries: int = 5
    """Retries after a rate limit, an overload, a 5xx or a broken connection."""
    retry_backoff: float = 1.0
    """Seconds before the first retry; doubled for each later one (capped), with jitter."""


TABLES = (*PROVIDERS, "agent_tools")


@dataclass(frozen=True)
class Config:
    model: str = "scripted"
    """The model adapter: ``scripted`` (deterministic, default) or ``command``."""
    model_command: str = ""
    """For ``command``: a shell-free command line (split with shlex)."""
    step_budget: int = 100
    """Model calls one agent may make before it stops as ``budget-exhausted``."""
    model_timeout: float = 600.0
    """Seconds one ``command`` model call may take before its process group is killed."""
    tools: tuple[str, ...] = DEFAULT_TOOLS
    """R-TOOL-1: the tools every agent is offered (``bash`` only when listed)."""
    agent_tools: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """R-TOOL-1: the ``[agent_tools]`` table: an agent id or display name → that agent's
    tools, in place of ``tools``."""
    tool_timeout: float = 120.0
    """R-TOOL-4: seconds one ``bash`` call may run before its processes are killed."""
    tool_output_cap: int = 65536
    """R-TOOL-3, R-TOOL-4: bytes of a file (``read_file``) or of each of a command's
    stdout and stderr (``bash``) a tool result holds; the rest is cut with a marker."""
    anthropic: ProviderSettings = field(
        default_factory=lambda: ProviderSettings(model=DEFAULT_ANTHROPIC_MODEL)
    )
    """The ``[anthropic]`` table (``model = "anthropic"``)."""
    openai: ProviderSettings = field(
        default_factory=lambda: ProviderSettings(model=DEFAULT_OPENAI_MODEL)
    )
    """The ``[openai]`` table (``model = "openai"``)."""

    def tools_for(self, agent_id: str, name: Callable[[], str]) -> tuple[str, ...]:
        """R-TOOL-1: ``agent_id``'s tools: its ``[agent_tools]`` entry by id, else by its
        display name (``name`` is asked only when the table has entries), else ``tools``."""
        if not self.agent_tools:
            return self.tools
        if agent_id in self.agent_tools:
            return self.agent_tools[agent_id]
        shown = name()
        if shown and shown in self.agent_tools:
            return self.agent_tools[shown]
        return self.tools


def write_default(ws: Path) -> Path:
    """Write the default ``lernie.toml`` into ``ws`` (``lernie new``); create-only, and never
    through a link (R-WS-7)."""
    with guarded.open_root(ws) as root:
        root.write_new(CONFIG_FILE, DEFAULT_TEXT.encode("utf-8"))
    return ws / CONFIG_FILE


def _check(name: str, value: object, default: object, where: str) -> object:
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if ok and isinstance(value, int | float):
            value = float(value)
            if not 0 < value < float("inf"):
                raise ConfigError(f"{where}: {name} must be a positive number of seconds")
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
    if name == "tool_output_cap" and isinstance(value, int) and value < 1:
        raise ConfigError(f"{where}: tool_output_cap must be at least 1, not {value}")
    return value


def _tools(value: object, where: str) -> tuple[str, ...]:
    """R-TOOL-1: a list of known tool names, each once."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: tools must be a list of tool names")
    names = tuple(str(v) for v in value)
    for name in names:
        if name not in ALL_TOOLS:
            raise ConfigError(
                f"{where}: unknown tool {name!r} (the tools are {', '.join(ALL_TOOLS)})"
            )
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: a tool is listed twice")
    return names


def _from_env(name: str, raw: str, default: object) -> object:
    var = ENV_PREFIX + name.upper()
    if name == "tools":
        return [part.strip() for part in raw.split(",") if part.strip()]
    if isinstance(default, bool):
        if raw not in ("true", "false"):
            raise ConfigError(f"{var}={raw!r}: expected true or false")
        return raw == "true"
    return _env_value(var, raw, default)


def _provider_value(name: str, value: object, default: object, where: str) -> object:
    if name == "temperature":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: temperature must be a number, not {type(value).__name__}")
        if not 0 <= value < float("inf"):
            raise ConfigError(f"{where}: temperature must be a number from 0 up")
        return float(value)
    value = _check(name, value, default, where)
    if name in ("max_tokens", "max_retries") and isinstance(value, int):
        low = 1 if name == "max_tokens" else 0
        if value < low:
            raise ConfigError(f"{where}: {name} must be at least {low}, not {value}")
    if name == "model" and value == "":
        raise ConfigError(f"{where}: model must not be empty")
    return value


def _provider(
    table_name: str, table: object, env: Mapping[str, str], path: Path
) -> ProviderSettings:
    """One ``[<provider>]`` table: known keys only, typed, then ``LERNIE_<TABLE>_<KEY>``."""
    base: ProviderSettings = getattr(Config(), table_name)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {table_name} must be a table ([{table_name}])")
    defaults = {f.name: getattr(base, f.name) for f in dataclasses.fields(ProviderSettings)}
    values: dict[str, object] = {}
    for key, value in table.items():
        if key not in defaults:
            known = ", ".join(sorted(defaults))
            raise ConfigError(
                f"{path}: unknown setting {key!r} in [{table_name}] (known settings: {known})"
            )
        values[key] = _provider_value(key, value, defaults[key], f"{path} [{table_name}]")
    for key, default in defaults.items():
        var = f"{ENV_PREFIX}{table_name.upper()}_{key.upper()}"
        raw = env.get(var)
        if raw:
            kind = 0.0 if key == "temperature" else default
            values[key] = _provider_value(key, _env_value(var, raw, kind), default, var)
    if values.get("system") and values.get("system_file", base.system_file):
        raise ConfigError(f"[{table_name}]: set system or system_file, not both")
    return dataclasses.replace(base, **values)  # type: ignore[arg-type]


def _env_value(var: str, raw: str, default: object) -> object:
    """``raw`` parsed like the default's type (the message names ``var``)."""
    if isinstance(default, float):
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(f"{var}={raw!r}: expected a number") from None
    if isinstance(default, int) and not isinstance(default, bool):
        digits = raw[1:] if raw[:1] in "+-" else raw
        if not digits.isascii() or not digits.isdigit():
            raise ConfigError(f"{var}={raw!r}: expected an integer")
        return int(raw)
    return raw


def load(ws: Path, env: Mapping[str, str]) -> Config:
    """Read ``<ws>/lernie.toml`` (absent → defaults), then apply ``LERNIE_<FIELD>`` overrides.

    The provider tables (``[anthropic]``, ``[openai]``) are read by :func:`_provider`.
    """
    import tomllib

    path = ws / CONFIG_FILE
    fields = {f.name: f.default for f in dataclasses.fields(Config) if f.name not in TABLES}
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
        if key in PROVIDERS:
            continue
        if key == "agent_tools":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: agent_tools must be a table ([agent_tools])")
            values[key] = {
                str(who): _tools(listed, f"{path} [agent_tools] {who}")
                for who, listed in value.items()
            }
            continue
        if key not in fields:
            known = ", ".join(sorted([*fields, *(f"[{p}]" for p in TABLES)]))
            raise ConfigError(f"{path}: unknown key {key!r} (known keys: {known})")
        if key == "tools":
            values[key] = _tools(value, str(path))
            continue
        values[key] = _check(key, value, fields[key], str(path))
    for name, default in fields.items():
        raw = env.get(ENV_PREFIX + name.upper())
        if raw and name == "tools":
            values[name] = _tools(_from_env(name, raw, default), ENV_PREFIX + "TOOLS")
        elif raw:
            values[name] = _check(
                name, _from_env(name, raw, default), default, ENV_PREFIX + name.upper()
            )
    model = values.get("model", fields["model"])
    if model not in MODELS:
        where = "LERNIE_MODEL" if env.get("LERNIE_MODEL") else str(path)
        raise ConfigError.unknown_model(str(model), where)
    for provider in PROVIDERS:
        values[provider] = _provider(provider, table.get(provider, {}), env, path)
    return Config(**values)  # type: ignore[arg-type]
