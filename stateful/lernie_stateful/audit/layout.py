"""The names a workspace's files and refs wear (SPEC §0, R-WS-1..5), as the audit reads them.

The defaults are this protocol's names; another implementation may rename them through its
conformance adapter file (:func:`lernie_stateful.conform.adapter.layout_of`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    repo: str = "repo.git"
    inbox: str = "inbox"
    steps: str = "steps"
    agents: str = "agents"
    messages: str = "messages"
    agent_ref_prefix: str = "refs/heads/agents/"
    mark_ref_prefix: str = "refs/lernie/"
    staging: str = "staging.json"
    goal: str = "goal.md"
    name: str = "name"
    user: str = "user"
    tool_origin: str = "tool"
    model_origin: str = "scripted"  # the origin of the kit model's entries (NNN-<origin>.json)
    other_marks: tuple[str, ...] = ()  # mark kinds beyond R-WS-5 the implementation keeps
