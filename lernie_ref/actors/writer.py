"""The writer verbs as actors (R-PROBE-4, R-PROBE-5, R-PROBE-6): guards, then the deposit,
then the probe.

``message``, ``dispatch`` and ``prompt`` check every guard before they write anything
(I-17), then ``yield from`` the deposit actor and then the probe actor, so a scheduler
sees one actor whose points run in R-PROBE-2's order: the deposit is published before
the lock is probed. The CLI and the model's tools run these same actors.

Each actor's docstring lists its points (``Point`` members, nested actors' included)
and the ones every run passes; ``tests/driver/test_points.py`` checks both on real runs.
"""

from __future__ import annotations

from lernie_ref.actors.probe import ProbeOutcome, writer_probe_actor
from lernie_ref.core.actor import run
from lernie_ref.core.errors import UsageError
from lernie_ref.core.names import USER_SENDER
from lernie_ref.substrate.deposit import deposit_actor

TYPE_CHECKING = False  # typing stays off the message path (R-CLI-5)
if TYPE_CHECKING:
    from collections.abc import Callable

    from lernie_ref.core.actor import Actor
    from lernie_ref.core.clock import Clock
    from lernie_ref.substrate.deposit import Stream
    from lernie_ref.substrate.launcher import Launcher
    from lernie_ref.substrate.registry import Registry
    from lernie_ref.substrate.spool import Spool
    from lernie_ref.substrate.workspace import Workspace

MESSAGE_REASON = "a message is addressed to an existing agent, by id or unique name (R-ID-6)"
DISPATCH_REASON = (
    "a dispatch forks a child of an existing agent, named by id or unique name (R-ID-6)"
)


def _require_text(what: str, value: str) -> None:
    """R-CLI-6: arguments that are not valid UTF-8 are a usage error (exit 2), as upstream's
    argument parser makes them; nothing is written."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"the {what} is not valid UTF-8") from None


def resolve_cli_sender(value: str | None) -> str:
    """R-ID-7: ``LERNIE_CONV_BRANCH`` when set and non-empty, else ``user``."""
    return value if value else USER_SENDER


def message_actor(
    ws: Registry,
    agent: str,
    content: str | Stream,
    sender: str,
    launcher: Launcher,
    clock: Clock,
    preflight: Callable[[str], None] | None = None,
) -> Actor[ProbeOutcome]:
    """R-PROBE-4: id guard, name resolution, workspace and existence guards, deposit, probe.

    Nothing is written before every guard has passed (I-17), nor before ``preflight``
    (given the resolved id; the CLI's check of what a driver will need, R-CLI-8) returned.
    ``sender`` is resolved by the caller (:func:`resolve_cli_sender`, or the calling
    agent's id for a tool).
    ``content`` is text, or a stream copied straight into the deposit (R-CLI-7).

    Points: the deposit's ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_COLLIDED``, ``Point.DEPOSIT_PUBLISHED``, then the probe's
    ``Point.PROBE_BUSY``, ``Point.PROBE_ACQUIRED``, ``Point.PROBE_RELEASED``,
    ``Point.PROBE_LAUNCHED``.
    Always: ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_PUBLISHED``.
    """
    if isinstance(content, str):
        _require_text("message content", content)
    target = ws.resolve_agent(agent, MESSAGE_REASON)
    if preflight is not None:
        preflight(target)
    yield from deposit_actor(ws.root, target, sender, content, clock)
    return (yield from writer_probe_actor(ws.root, target, launcher))


def _spooled(ws: Workspace, text: str | Stream, what: str) -> str | Spool:
    """Text is checked in place; a stream is stored once in a spool (R-CLI-7)."""
    if isinstance(text, str):
        _require_text(what, text)
        return text
    from lernie_ref.substrate.spool import Spool

    return Spool.fill(ws.root, text)


def _found(
    ws: Workspace,
    create: Callable[[], str],
    sender: str,
    held: str | Spool,
    launcher: Launcher,
    clock: Clock,
    created: Callable[[str], None] | None = None,
) -> Actor[str]:
    """Create a new agent (``create`` mints its id and makes its branch and worktree),
    call ``created`` with its id (the CLI records the agent's model there, R-STEP-9),
    deposit ``held`` into its inbox from ``sender``, then probe it: the tail that a
    dispatch and a prompt share (R-PROBE-5, R-PROBE-6). A spool is closed once the
    deposit has copied it, whatever happened. Returns the new id."""
    try:
        aid = create()
        if created is not None:
            created(aid)
        content = held if isinstance(held, str) else held.reader()
        yield from deposit_actor(ws.root, aid, sender, content, clock)
    finally:
        if not isinstance(held, str):
            held.close()
    yield from writer_probe_actor(ws.root, aid, launcher)
    return aid


def dispatch_actor(
    ws: Workspace,
    parent: str,
    goal: str | Stream,
    name: str,
    launcher: Launcher,
    clock: Clock,
    created: Callable[[str], None] | None = None,
) -> Actor[str]:
    """R-PROBE-6: fork a child of ``parent``, deposit ``goal`` as the parent's message, probe.

    Returns the child id. The branch exists before the deposit, so a dispatch never
    deposits to a missing agent.

    Points: the deposit's ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_COLLIDED``, ``Point.DEPOSIT_PUBLISHED``, then the probe's
    ``Point.PROBE_BUSY``, ``Point.PROBE_ACQUIRED``, ``Point.PROBE_RELEASED``,
    ``Point.PROBE_LAUNCHED``.
    Always: ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_PUBLISHED``.
    """
    if isinstance(goal, str):
        _require_text("goal", goal)
    parent = ws.resolve_agent(parent, DISPATCH_REASON)
    ws.check_new_name(name)
    held = _spooled(ws, goal, "goal")

    def create() -> str:
        child = ws.mint_child(parent, clock)
        ws.create_child_agent(parent, child, name, held)
        return child

    return (yield from _found(ws, create, parent, held, launcher, clock, created))


def prompt_actor(
    ws: Workspace,
    text: str | Stream,
    name: str,
    launcher: Launcher,
    clock: Clock,
    created: Callable[[str], None] | None = None,
) -> Actor[str]:
    """R-PROBE-5: mint a root, create its branch and worktree, deposit ``text`` as ``user``,
    probe. Returns the root id. ``name`` is its optional display name (R-ID-8).
    ``text`` is text, or a stream stored once in a spool and copied from there (R-CLI-7).

    Points: the deposit's ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_COLLIDED``, ``Point.DEPOSIT_PUBLISHED``, then the probe's
    ``Point.PROBE_BUSY``, ``Point.PROBE_ACQUIRED``, ``Point.PROBE_RELEASED``,
    ``Point.PROBE_LAUNCHED``.
    Always: ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_PUBLISHED``.
    """
    if isinstance(text, str):
        _require_text("prompt text", text)
    ws.check_layout()
    ws.check_new_name(name)
    held = _spooled(ws, text, "prompt text")

    def create() -> str:
        root = ws.mint_root(clock)
        ws.create_root_agent(root, name, held)
        return root

    return (yield from _found(ws, create, USER_SENDER, held, launcher, clock, created))


def message(
    ws: Registry,
    agent: str,
    content: str | Stream,
    sender: str,
    launcher: Launcher,
    clock: Clock,
    preflight: Callable[[str], None] | None = None,
) -> ProbeOutcome:
    """:func:`message_actor` run straight through."""
    return run(message_actor(ws, agent, content, sender, launcher, clock, preflight))


def dispatch(
    ws: Workspace,
    parent: str,
    goal: str | Stream,
    name: str,
    launcher: Launcher,
    clock: Clock,
    created: Callable[[str], None] | None = None,
) -> str:
    """:func:`dispatch_actor` run straight through."""
    return run(dispatch_actor(ws, parent, goal, name, launcher, clock, created))


def prompt(
    ws: Workspace,
    text: str | Stream,
    name: str,
    launcher: Launcher,
    clock: Clock,
    created: Callable[[str], None] | None = None,
) -> str:
    """:func:`prompt_actor` run straight through."""
    return run(prompt_actor(ws, text, name, launcher, clock, created))
