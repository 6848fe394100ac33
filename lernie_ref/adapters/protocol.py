"""The model adapters' one protocol (R-STEP-6): what a hop hands a model and gets back.

A hop hands the adapter a :class:`ModelRequest` (the agent id, the transcript as wire
messages, the tool list) and gets back a :class:`ModelReply` (content blocks). The
adapter is injected; the hop never knows which one it drives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from lernie_ref.core.entry import Block, Entry
from lernie_ref.core.tooldefs import DEFAULT_TOOLS, tool_specs
from lernie_ref.substrate.transcript import WireMessage

StopCheck = Callable[[], bool]

TOOL_SPECS: list[dict[str, object]] = tool_specs(DEFAULT_TOOLS)
"""R-STEP-7, R-TOOL-1: the tools offered when the configuration says nothing."""




@dataclass(frozen=True)
class ModelRequest:
    agent_id: str
    entries: Sequence[Entry[object]]
    messages: list[WireMessage]
    tools: list[dict[str, object]] = field(default_factory=lambda: list(TOOL_SPECS))
    worktree: Path | None = None

    def to_json(self) -> dict[str, object]:
        """The request a ``command`` model reads on stdin (docs/models.md)."""
        return {
            "agent": self.agent_id,
            "messages": [m.to_json() for m in self.messages],
            "tools": self.tools,
        }


@dataclass(frozen=True)
class ModelReply:
    blocks: list[Block]
    usage: dict[str, int] | None = None


class ModelAdapter(Protocol):
    @property
    def model_id(self) -> str:
        """The origin token of this model's transcript entries (``NNN-<model_id>.json``)."""
        ...

    def call(self, request: ModelRequest, should_stop: StopCheck) -> ModelReply:
        """One model call. May return early when ``should_stop()``; the hop then discards it."""
        ...
