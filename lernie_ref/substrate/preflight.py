"""What a driver will need, checked before a verb writes anything (R-CLI-8), and the model
each agent was started with (R-STEP-9).

``prompt``, ``dispatch`` and ``message`` launch drivers that read ``lernie.toml``, build
the model adapter and call it. Everything about that which can be known without a model
call is checked here first, so a typo fails the verb with one line and nothing deposited,
instead of failing a detached driver the operator does not watch: the file's syntax, keys
and types (:func:`lernie_ref.substrate.config.load`), the model name, the command
model's command line and executable, a hosted model's SDK, API key and system file.

**The record.** An agent's model (its name and settings, never a key or an endpoint) is
written to ``steps/<id>/model.json`` when the agent is created with a model of its own (every
root; a child created with ``--model``). A child without a record runs on its nearest
ancestor's. Every driver of the agent uses the record, whatever the environment of the
shell that launched it says; a different choice there is a warning.

This module is on the ``lernie message`` path (R-CLI-5): it imports only ``os`` and the
light parts of the package. In the common case (no record or the scripted record,
``lernie.toml`` absent or byte for byte the file ``lernie new`` wrote, or the very file
an earlier full check passed, no ``LERNIE_*`` setting in the environment) nothing needs
parsing, so neither ``tomllib`` nor ``json`` is loaded; any other case takes the full
check.
"""

from __future__ import annotations

import os

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.errors import ConfigError, ContainmentError
from lernie_ref.core.ids import AgentId, parent_id
from lernie_ref.core.names import STEPS_DIR
from lernie_ref.substrate import guarded
from lernie_ref.substrate.configtext import (
    CONFIG_FILE,
    DEFAULT_TEXT,
    MODELS,
    PROVIDERS,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from lernie_ref.substrate.config import Config

KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
RECORD_FILE = "model.json"
"""R-STEP-9: ``steps/<id>/model.json``, the model an agent was created with."""
SCRIPTED_RECORD = b'{"model": "scripted"}\n'
NOT_SETTINGS = frozenset({"LERNIE_CONV_BRANCH", "LERNIE_LOCK_FD", "LERNIE_AGENT",
                          "LERNIE_TOOL_WS", "LERNIE_TOOL_AGENT"})
"""``LERNIE_*`` variables that are not configuration (R-ID-7, R-LOCK-4, the command model's,
a tool process's marks, R-TOOL-4)."""

Spec = dict[str, object]
"""A model and its settings: ``{"model": <name>, …}`` (see :func:`spec_of`)."""



def settings_in(env: Mapping[str, str]) -> list[str]:
    """The ``LERNIE_*`` configuration variables set (non-empty) in ``env``, sorted (only
    their values are read: ``lernie message`` asks on every run)."""
    return sorted(k for k in env if k.startswith("LERNIE_") and k not in NOT_SETTINGS and env[k])


def model_settings_in(env: Mapping[str, str]) -> list[str]:
    """Those of :func:`settings_in` that choose a model or its settings."""
    return [
        k
        for k in settings_in(env)
        if k.startswith(("LERNIE_MODEL", "LERNIE_ANTHROPIC_", "LERNIE_OPENAI_"))
    ]


CHECKED_FILE = ".config-checked"
"""``steps/.config-checked``: the identity of a ``lernie.toml`` that passed the full check
and chooses the scripted model (a cache: any change of the file changes its identity)."""


def _identity(root: str) -> str | None:
    try:
        st = os.lstat(os.path.join(root, CONFIG_FILE))
    except OSError:
        return None
    return f"{st.st_mode} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}\n"


def _known_good(root: str) -> bool:
    """``lernie.toml`` is absent, holds :data:`DEFAULT_TEXT` byte for byte, or is the very
    file a full check found good and scripted (:data:`CHECKED_FILE`)."""
    try:
        with guarded.open_root(root) as top:
            data = top.read_bytes(CONFIG_FILE)
    except FileNotFoundError:
        return True
    except (OSError, ContainmentError):
        return False  # the full check reports it
    if data == DEFAULT_TEXT.encode("utf-8"):
        return True
    identity = _identity(root)
    try:
        with guarded.walk(root, (STEPS_DIR,)) as steps:
            return identity is not None and steps.read_bytes(CHECKED_FILE).decode() == identity
    except (OSError, ContainmentError, UnicodeDecodeError):
        return False


def _remember_good(root: str) -> None:
    """Record the identity of a ``lernie.toml`` that just passed (best effort: a cache)."""
    identity = _identity(root)
    if identity is None:
        return
    try:
        with guarded.walk(root, (STEPS_DIR,)) as steps:
            steps.write_new(CHECKED_FILE, identity.encode(), replace=True)
    except (OSError, ContainmentError):
        pass


# ---------------------------------------------------------------- the record (R-STEP-9)


def _read_record(root: str, agent: AgentId) -> bytes | None:
    try:
        with guarded.walk(root, (STEPS_DIR, agent)) as steps:
            return steps.read_bytes(RECORD_FILE)
    except FileNotFoundError:
        return None
    except OSError as exc:
        where = f"{root}/{STEPS_DIR}/{agent}/{RECORD_FILE}"
        raise ConfigError(f"read {where}: {exc.strerror}") from None


def recorded(root: str, agent: AgentId) -> tuple[str, bytes] | None:
    """The record that rules ``agent``: its own, else its nearest ancestor's, as
    ``(owner, bytes)``; ``None`` when no agent of its line has one (created before records
    were kept: the configuration rules, as it did then)."""
    current: AgentId | None = agent
    while current is not None:
        raw = _read_record(root, current)
        if raw is not None:
            return current, raw
        current = parent_id(current)
    return None


def parse_record(owner: str, raw: bytes) -> Spec:
    if raw == SCRIPTED_RECORD:
        return {"model": "scripted"}
    import json

    try:
        spec = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        spec = None
    if not isinstance(spec, dict) or spec.get("model") not in MODELS:
        raise ConfigError(
            f"{STEPS_DIR}/{owner}/{RECORD_FILE} is not a model record; write "
            f"{SCRIPTED_RECORD.decode().strip()} or another model's record there (R-STEP-9)"
        )
    return spec


def write_record(root: str, agent: AgentId, spec: Spec) -> None:
    """Record ``spec`` as ``agent``'s model, before its first deposit (R-STEP-9)."""
    if spec == {"model": "scripted"}:
        data = SCRIPTED_RECORD
    else:
        import json

        data = (json.dumps(spec, sort_keys=True) + "\n").encode("utf-8")
    with guarded.walk(root, (STEPS_DIR, agent), create=True) as steps:
        # whole or not at all: a kill mid-write leaves the temp, never half a record
        temp = f".{RECORD_FILE}.tmp"
        steps.write_new(temp, data, replace=True)
        steps.rename(temp, steps, RECORD_FILE)


def spec_of(config: Config, model: str | None = None) -> Spec:
    """The model ``model`` (default: the configuration's) with the settings ``config`` gives it."""
    name = model or config.model
    if name not in MODELS:
        raise ConfigError.unknown_model(name)
    if name == "command":
        return {
            "model": "command",
            "model_command": config.model_command,
            "model_timeout": config.model_timeout,
        }
    if name in PROVIDERS:
        import dataclasses

        return {"model": name, name: dataclasses.asdict(getattr(config, name))}
    return {"model": "scripted"}


def apply(config: Config, spec: Spec) -> Config:
    """``config`` running the recorded model: the record's name and settings replace the
    configuration's; everything else (the step budget) stays."""
    import dataclasses

    from lernie_ref.substrate.config import ProviderSettings

    name = str(spec["model"])
    if name == "command":
        return dataclasses.replace(
            config,
            model=name,
            model_command=str(spec.get("model_command", config.model_command)),
            model_timeout=float(spec.get("model_timeout", config.model_timeout)),  # type: ignore[arg-type]
        )
    if name in PROVIDERS:
        table = spec.get(name)
        base = getattr(config, name)
        if isinstance(table, dict):
            known = {f.name for f in dataclasses.fields(ProviderSettings)}
            base = dataclasses.replace(base, **{k: v for k, v in table.items() if k in known})
        return dataclasses.replace(config, model=name, **{name: base})
    return dataclasses.replace(config, model=name)


def describe(spec: Spec) -> str:
    """``command (/usr/bin/model)``, ``openai (gpt-4.1-mini)``, ``scripted``."""
    name = str(spec["model"])
    if name == "command":
        return f"command ({spec.get('model_command', '')})"
    table = spec.get(name)
    if isinstance(table, dict) and table.get("model"):
        return f"{name} ({table['model']})"
    return name


# ---------------------------------------------------------------- the checks (R-CLI-8)


def load_config(root: str, env: Mapping[str, str]) -> Config:
    """``lernie.toml`` and the ``LERNIE_*`` overrides, fully checked."""
    from pathlib import Path

    from lernie_ref.substrate.config import load

    return load(Path(root), env)


def _on_path(program: str, env: Mapping[str, str]) -> bool:
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return True
    return False


def check_spec(spec: Spec, env: Mapping[str, str], root: str) -> None:
    """What a driver running ``spec`` in environment ``env`` needs, short of a model call."""
    name = str(spec.get("model"))
    if name not in MODELS:
        raise ConfigError.unknown_model(name)
    if name == "command":
        import shlex

        line = str(spec.get("model_command", ""))
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise ConfigError(f"model command {line!r} cannot be split into words: {exc}") from None
        if not argv:
            raise ConfigError(
                "model `command` needs a command line: set model_command in lernie.toml "
                "or LERNIE_MODEL_COMMAND"
            )
        program = argv[0]
        if "/" not in program:
            if not _on_path(program, env):
                raise ConfigError(
                    f"model command {program!r} is not an executable on PATH; give its "
                    "absolute path in model_command or LERNIE_MODEL_COMMAND"
                )
        elif not os.path.isabs(program):
            raise ConfigError(
                f"model command {program!r} is a relative path, but the command runs in the "
                "agent's worktree; give its absolute path"
            )
        elif not (os.path.isfile(program) and os.access(program, os.X_OK)):
            what = "is not executable" if os.path.exists(program) else "does not exist"
            raise ConfigError(f"model command {program!r} {what}")
        return
    if name in PROVIDERS:
        import importlib.util

        if importlib.util.find_spec(name) is None:
            raise ConfigError(
                f"model `{name}` needs the {name} SDK, an optional extra: "
                f"pip install 'lernie_ref[{name}]'"
            )
        var = KEY_VARS[name]
        if not env.get(var):
            raise ConfigError(f"model `{name}` needs an API key: set {var}")
        table = spec.get(name)
        system_file = table.get("system_file") if isinstance(table, dict) else None
        if isinstance(system_file, str) and system_file:
            path = system_file if os.path.isabs(system_file) else os.path.join(root, system_file)
            try:
                with open(path, "rb") as handle:
                    handle.read(1)
            except OSError as exc:
                raise ConfigError(
                    f"[{name}] system_file {path!r}: {exc.strerror or exc}"
                ) from None


def env_differs(spec: Spec, config: Config, env: Mapping[str, str]) -> list[str]:
    """The model settings of ``env`` that choose something else than ``spec`` (the record);
    empty when they agree or set nothing."""
    chosen = model_settings_in(env)
    if not chosen:
        return []
    try:
        other = spec_of(config)
    except ConfigError:
        return chosen
    # the record as a driver runs it: settings it leaves out come from the configuration
    return [] if other == spec_of(apply(config, spec)) else chosen


def warning(
    agent: AgentId, owner: str, spec: Spec, chosen: list[str], env: Mapping[str, str]
) -> str:
    whose = "" if owner == agent else f" (inherited from {owner})"
    shown = ", ".join(f"{k}={env.get(k, '')}" for k in chosen)
    return (
        f"warning: {agent} runs on the model it was started with, {describe(spec)}{whose}; "
        f"this environment's {shown} is not used for it (R-STEP-9)"
    )


def for_agent(root: str, agent: AgentId, env: Mapping[str, str]) -> str | None:
    """R-CLI-8 for a verb that may launch ``agent``'s driver (``message``): the
    configuration and the model that driver will run. Returns a warning line when the
    environment chooses another model than the agent's record (R-STEP-9), else ``None``.
    Cheap in the common case (see the module docstring)."""
    found = recorded(root, agent)
    light = (found is None or found[1] == SCRIPTED_RECORD) and not settings_in(env)
    if light and _known_good(root):
        return None
    config = load_config(root, env)
    if light and (found is not None or config.model == "scripted"):
        _remember_good(root)  # nothing else was checked: the file alone decided
        return None
    if found is None:
        check_spec(spec_of(config), env, root)
        return None
    owner, raw = found
    spec = parse_record(owner, raw)
    check_spec(spec, env, root)
    chosen = env_differs(spec, config, env)
    return warning(agent, owner, spec, chosen, env) if chosen else None


def for_new(
    root: str, env: Mapping[str, str], model: str | None, parent: AgentId | None = None
) -> tuple[Spec, bool, str | None]:
    """R-CLI-8 for a verb that creates an agent (``prompt``, or ``dispatch`` under
    ``parent``): the configuration, then the new agent's model: ``model`` (``--model``)
    with the configuration's settings for it; else, for a child, its parent's record
    (nothing is written: it inherits); else the configuration's. Returns the spec, whether
    it is to be recorded for the new agent (not when it inherits), and a warning line or
    ``None``."""
    config = load_config(root, env)
    if model is not None:
        spec = spec_of(config, model)
        check_spec(spec, env, root)
        return spec, True, None
    if parent is not None:
        found = recorded(root, parent)
        if found is not None:
            owner, raw = found
            spec = parse_record(owner, raw)
            check_spec(spec, env, root)
            chosen = env_differs(spec, config, env)
            note = None
            if chosen:
                shown = ", ".join(f"{k}={env.get(k, '')}" for k in chosen)
                note = (
                    f"warning: the child runs on its parent's model, {describe(spec)}; this "
                    f"environment's {shown} is not used for it (pass --model to choose; R-STEP-9)"
                )
            return spec, False, note
        spec = spec_of(config)
        check_spec(spec, env, root)
        return spec, False, None
    spec = spec_of(config)
    check_spec(spec, env, root)
    return spec, True, None
