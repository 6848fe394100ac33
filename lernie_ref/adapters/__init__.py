"""Model adapters: one protocol, several implementations (R-STEP-6).

A hop hands the adapter a :class:`ModelRequest` (the agent id, the transcript as
wire messages, the tool list) and gets back content blocks. The adapter is
injected; the hop never knows which one it drives. One module per job:

- :mod:`~lernie_ref.adapters.protocol`: :class:`ModelRequest`, :class:`ModelReply`,
  :class:`ModelAdapter`, the tools offered by default.
- :mod:`~lernie_ref.adapters.scripted`: :class:`ScriptedModel` (``scripted``, the
  default): deterministic, no network. It answers from the transcript alone, and
  directives in the prompt make any multi-agent scenario scriptable from the command
  line (``docs/models.md``).
- :mod:`~lernie_ref.adapters.command`: :class:`CommandModel` (``command``): any
  executable. The request JSON goes to its stdin, content-blocks JSON comes back on its
  stdout. A non-zero exit or output that is not valid content fails the hop with one
  line; nothing is committed (R-STEP-5). Its pipes: :mod:`~lernie_ref.adapters.pipes`.
- :mod:`~lernie_ref.adapters.provider`, :mod:`~lernie_ref.adapters.anthropic`,
  :mod:`~lernie_ref.adapters.openai`: the hosted models (R-STEP-8), imported only when
  chosen.
- :mod:`~lernie_ref.adapters.selection`: :func:`select_model`. Selection:
  ``lernie.toml``'s ``model`` unless the environment variable ``LERNIE_MODEL`` is set,
  which wins (``config.load``).

This package's ``__init__`` only re-exports the names callers use; its modules import
each other, never the package, so there is no import cycle.
"""

from lernie_ref.adapters.command import MAX_NESTING, CommandModel, parse_reply
from lernie_ref.adapters.protocol import (
    TOOL_SPECS,
    ModelAdapter,
    ModelReply,
    ModelRequest,
    StopCheck,
)
from lernie_ref.adapters.scripted import NOOP_TOOL, Script, ScriptedModel, parse_script
from lernie_ref.adapters.selection import select_model

__all__ = [
    "MAX_NESTING",
    "NOOP_TOOL",
    "TOOL_SPECS",
    "CommandModel",
    "ModelAdapter",
    "ModelReply",
    "ModelRequest",
    "Script",
    "ScriptedModel",
    "StopCheck",
    "parse_reply",
    "parse_script",
    "select_model",
]
