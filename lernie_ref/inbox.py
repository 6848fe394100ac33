"""The inbox face (R-DEP, R-LAUNCH, R-PROBE): the names the upstream inbox substrate
exposes, gathered where users and other implementations look for them.

The code lives in the layers: deposits in :mod:`lernie_ref.substrate.deposit`, the
launchers in :mod:`lernie_ref.substrate.launcher`, probe-and-launch in
:mod:`lernie_ref.actors.probe`, the writer verbs in :mod:`lernie_ref.actors.writer`.
The library functions there take their clock and git runner as required arguments;
this face, like the CLI, is an edge, and fills in the system clock and git when a
caller passes none.

``lernie message`` goes through this face, so it loads nothing heavy: ``Epitaph``
(an ``enum``) is loaded on first use, and git only when a result is deposited
(R-CLI-5).
"""

from __future__ import annotations

from lernie_ref.actors import writer
from lernie_ref.actors.probe import ProbeOutcome, probe_actor, probe_and_launch
from lernie_ref.actors.writer import resolve_cli_sender
from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.ids import AgentId, parent_of, require_agent_id
from lernie_ref.core.names import CONV_BRANCH_ENV, INBOX_DIR, USER_SENDER
from lernie_ref.substrate import deposit as _deposit
from lernie_ref.substrate.deposit import (
    Pending,
    Stream,
    deposit_actor,
    deposit_result_actor,
    inbox_dir,
    pending,
)
from lernie_ref.substrate.launcher import AdvanceLauncher, Launcher, RecordingLauncher

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from lernie_ref.core.clock import Clock
    from lernie_ref.core.vocab import Epitaph as Epitaph
    from lernie_ref.substrate.deposit import P
    from lernie_ref.substrate.gitrun import GitRunner
    from lernie_ref.substrate.registry import Registry
    from lernie_ref.substrate.workspace import Workspace


def __getattr__(name: str) -> object:
    """``Epitaph`` (an ``enum``) is loaded on first use."""
    if name == "Epitaph":
        from lernie_ref.core.vocab import Epitaph

        return Epitaph
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "CONV_BRANCH_ENV",
    "INBOX_DIR",
    "USER_SENDER",
    "AdvanceLauncher",
    "Epitaph",
    "Launcher",
    "Pending",
    "ProbeOutcome",
    "RecordingLauncher",
    "cli_dispatch",
    "cli_message",
    "cli_prompt",
    "deposit",
    "deposit_actor",
    "deposit_child_result",
    "deposit_result",
    "deposit_result_actor",
    "inbox_dir",
    "parent_of",
    "pending",
    "probe_actor",
    "probe_and_launch",
    "resolve_cli_sender",
]


def deposit(ws: P, agent_id: str, sender: str, content: str, clock: Clock | None = None) -> P:
    """R-DEP-4: a plain message from ``sender`` into ``agent_id``'s inbox (create-only)."""
    return _deposit.deposit(ws, require_agent_id(agent_id), sender, content, clock or SystemClock())


def deposit_result(
    ws: Path,
    recipient: str,
    child: str,
    epitaph: Epitaph | str,
    terminal_ref: str,
    response: str | None,
    clock: Clock | None = None,
    git: GitRunner | None = None,
) -> Path:
    """R-DEP-5: ``child``'s result into ``recipient``'s inbox, then its returned mark."""
    return _deposit.deposit_result(
        ws, require_agent_id(recipient), require_agent_id(child), epitaph, terminal_ref, response,
        clock or SystemClock(), git or _subprocess_git(),
    )  # fmt: skip


def deposit_child_result(
    ws: Path,
    child: str,
    epitaph: Epitaph | str,
    terminal_ref: str,
    response: str | None,
    clock: Clock | None = None,
    git: GitRunner | None = None,
) -> Path | None:
    """R-ADDR-1: ``child``'s result into its parent's inbox; ``None`` for a root."""
    return _deposit.deposit_child_result(
        ws, require_agent_id(child), epitaph, terminal_ref, response, clock or SystemClock(),
        git or _subprocess_git(),
    )


def _subprocess_git() -> GitRunner:
    from lernie_ref.substrate.gitrun import SubprocessGit

    return SubprocessGit()


def cli_message(
    ws: Registry,
    agent: str,
    content: str | Stream,
    sender: str,
    launcher: Launcher,
    clock: Clock | None = None,
    preflight: Callable[[AgentId], None] | None = None,
) -> ProbeOutcome:
    """R-PROBE-4: :func:`~lernie_ref.actors.writer.message_actor` run straight through."""
    return writer.message(ws, agent, content, sender, launcher, clock or SystemClock(), preflight)


def cli_dispatch(
    ws: Workspace,
    parent: str,
    goal: str | Stream,
    name: str,
    launcher: Launcher,
    clock: Clock | None = None,
    created: Callable[[AgentId], None] | None = None,
) -> AgentId:
    """R-PROBE-6: :func:`~lernie_ref.actors.writer.dispatch_actor` run straight through."""
    return writer.dispatch(ws, parent, goal, name, launcher, clock or SystemClock(), created)


def cli_prompt(
    ws: Workspace,
    text: str | Stream,
    name: str,
    launcher: Launcher,
    clock: Clock | None = None,
    created: Callable[[AgentId], None] | None = None,
) -> AgentId:
    """R-PROBE-5: :func:`~lernie_ref.actors.writer.prompt_actor` run straight through."""
    return writer.prompt(ws, text, name, launcher, clock or SystemClock(), created)
