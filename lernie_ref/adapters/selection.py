"""Model selection (R-STEP-6): the adapter the configuration names.

``lernie.toml``'s ``model`` unless the environment variable ``LERNIE_MODEL`` is set,
which wins (``config.load``). A provider adapter's module, and with it its SDK, is
imported here and only here, when it is chosen.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from lernie_ref.adapters.command import CommandModel
from lernie_ref.adapters.protocol import ModelAdapter
from lernie_ref.adapters.scripted import ScriptedModel
from lernie_ref.core.errors import ConfigError
from lernie_ref.substrate.config import Config


def select_model(
    model: str,
    model_command: str = "",
    *,
    config: Config | None = None,
    env: Mapping[str, str] | None = None,
    root: Path | None = None,
) -> ModelAdapter:
    """R-STEP-6: the adapter named by the configuration.

    ``scripted``, ``command``, or a provider adapter (``anthropic``, ``openai``,
    R-STEP-8), whose SDK is imported here and only here; building a provider
    adapter checks its extra, key and settings before any call.
    """
    if model == "scripted":
        return ScriptedModel()
    if model == "command":
        return CommandModel(model_command, timeout=None if config is None else config.model_timeout)
    if model in ("anthropic", "openai"):
        settings = config or Config()
        where = os.environ if env is None else env
        if model == "anthropic":
            from lernie_ref.adapters.anthropic import AnthropicModel

            return AnthropicModel(settings.anthropic, where, root)
        from lernie_ref.adapters.openai import OpenAIModel

        return OpenAIModel(settings.openai, where, root)
    raise ConfigError(
        f"unknown model {model!r}: the models are `scripted`, `command`, `anthropic` and `openai`"
    )
