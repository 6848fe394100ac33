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
from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.actor import Passed, run
from lernie_ref.core.errors import UsageError, WorkspaceError, debug_quote
from lernie_ref.core.names import USER_SENDER, Point
from lernie_ref.core.parts import installed
from lernie_ref.core.record import record
from lernie_ref.substrate.deposit import deposit_actor, link_new
from lernie_ref.substrate.lock import try_acquire

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from lernie_ref.core.actor import Actor
    from lernie_ref.core.clock import Clock
    from lernie_ref.core.ids import AgentId
    from lernie_ref.substrate import guarded
    from lernie_ref.substrate.deposit import Stream
    from lernie_ref.substrate.launcher import Launcher
    from lernie_ref.substrate.registry import Registry
    from lernie_ref.substrate.spool import Spool
    from lernie_ref.substrate.workspace import Workspace


@record(frozen=True)
class WriterParts:
    """The writer verbs' replaceable collaborators (R-STEP-10), production's by default:
    ``publish``, the deposit's create-only publication (R-DEP-6), and ``probe``, the
    probe-and-launch after it (R-PROBE-1)."""

    publish: Callable[[guarded.Dir, str, str], None] = link_new
    probe: Callable[[str | Path, AgentId, Launcher], Actor[ProbeOutcome]] = writer_probe_actor


WRITER_PARTS = WriterParts()
"""Production's writer parts."""


def writer_parts() -> WriterParts:
    """The process default writer parts (production's unless a test build installed others
    through ``lernie_ref.testing.parts_installed``); read once as a writer verb starts."""
    return installed(WriterParts, WRITER_PARTS)


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
    preflight: Callable[[AgentId], None] | None = None,
    parts: WriterParts | None = None,
) -> Actor[ProbeOutcome]:
    """R-PROBE-4: id guard, name resolution, workspace and existence guards, deposit, probe.

    Nothing is written before every guard has passed (I-17), nor before ``preflight``
    (given the resolved id; the CLI's check of what a driver will need, R-CLI-8) returned.
    ``sender`` is resolved by the caller (:func:`resolve_cli_sender`, or the calling
    agent's id for a tool).
    ``content`` is text, or a stream copied straight into the deposit (R-CLI-7).
    ``parts``: the writer's collaborators (R-STEP-10; ``None``: the process default, read
    once here), as for every writer verb.

    Points: the deposit's ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_COLLIDED``, ``Point.DEPOSIT_PUBLISHED``, then the probe's
    ``Point.PROBE_BUSY``, ``Point.PROBE_ACQUIRED``, ``Point.PROBE_RELEASED``,
    ``Point.PROBE_LAUNCHED``.
    Always: ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``,
    ``Point.DEPOSIT_PUBLISHED``.
    """
    parts = writer_parts() if parts is None else parts
    if isinstance(content, str):
        _require_text("message content", content)
    target = ws.resolve_agent(agent, MESSAGE_REASON)
    if preflight is not None:
        preflight(target)
    yield from deposit_actor(ws.root, target, sender, content, clock, parts.publish)
    return (yield from parts.probe(ws.root, target, launcher))


def _spooled(ws: Workspace, text: str | Stream, what: str) -> str | Spool:
    """Text is checked in place; a stream is stored once in a spool (R-CLI-7)."""
    if isinstance(text, str):
        _require_text(what, text)
        return text
    from lernie_ref.substrate.spool import Spool

    return Spool.fill(ws.root, text)


def _found(
    ws: Workspace,
    mint: Callable[[], AgentId],
    prepare: Callable[[AgentId], str],
    sender: str,
    held: str | Spool,
    launcher: Launcher,
    clock: Clock,
    created: Callable[[AgentId], None] | None,
    parts: WriterParts,
) -> Actor[AgentId]:
    """Create a new agent in one visible step and deposit ``held`` into its inbox from
    ``sender``, then probe it: the tail that a dispatch and a prompt share (R-PROBE-5,
    R-PROBE-6). Returns the new id.

    ``mint`` makes the id; the creator then takes the new agent's executor lock (creating
    ``inbox/<id>``) and holds it until the agent exists: ``prepare`` builds its worktree,
    detached, and its creation commit; ``created`` is called with the id (the CLI records
    the agent's model there, R-STEP-9); the goal is deposited; and only then is the branch
    created at that commit, create-only (:meth:`Workspace.publish_agent`), the dispatch's
    one commit point. Before it no ref names the agent, so no name resolution, registry,
    status or scan ever sees it half-made; after it the agent is whole, its goal pending.
    A scan that finds the remains of a creation killed before its commit point takes the
    lock (free: the creator is dead) and removes them (R-SCAN-12). A failure before the
    commit point removes the remains at once. A spool is closed whatever happened.
    """
    made = False
    aid: AgentId | None = None
    creation = ""
    lock = None
    try:
        aid = mint()
        lock = try_acquire(ws.inbox_dir(aid))
        if lock is None:
            raise WorkspaceError(f"minted agent id {debug_quote(aid)} is already being created")
        yield Passed(Point.DISPATCH_LOCKED, aid)
        creation = prepare(aid)
        yield Passed(Point.DISPATCH_PREPARED, aid, creation)
        if created is not None:
            created(aid)
        content = held if isinstance(held, str) else held.reader()
        yield from deposit_actor(ws.root, aid, sender, content, clock, parts.publish)
        ws.publish_agent(aid, creation)
        made = True
    finally:
        if not isinstance(held, str):
            held.close()
        if lock is not None:
            if not made and aid is not None:
                # what is left, if anything, the next scan removes (R-SCAN-12); no
                # contextlib here: it loads collections on the message path (R-CLI-5)
                try:  # noqa: SIM105
                    ws.remove_unborn(aid)
                except OSError:
                    pass
            lock.release()
    yield Passed(Point.DISPATCH_CREATED, aid, creation)
    yield from parts.probe(ws.root, aid, launcher)
    return aid


def dispatch_actor(
    ws: Workspace,
    parent: str,
    goal: str | Stream,
    name: str,
    launcher: Launcher,
    clock: Clock,
    created: Callable[[AgentId], None] | None = None,
    parts: WriterParts | None = None,
) -> Actor[AgentId]:
    """R-PROBE-6: fork a child of ``parent``, deposit ``goal`` as the parent's message, probe.

    Returns the child id. The child's branch is created, at its creation commit, only
    after its goal is deposited: the dispatch is one ref update as seen from outside.

    Points: ``Point.DISPATCH_LOCKED``, ``Point.DISPATCH_PREPARED``, the deposit's
    ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``, ``Point.DEPOSIT_COLLIDED``,
    ``Point.DEPOSIT_PUBLISHED``, then ``Point.DISPATCH_CREATED`` and the probe's
    ``Point.PROBE_BUSY``, ``Point.PROBE_ACQUIRED``, ``Point.PROBE_RELEASED``,
    ``Point.PROBE_LAUNCHED``.
    Always: ``Point.DISPATCH_LOCKED``, ``Point.DISPATCH_PREPARED``,
    ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``, ``Point.DEPOSIT_PUBLISHED``,
    ``Point.DISPATCH_CREATED``.
    """
    parts = writer_parts() if parts is None else parts
    if isinstance(goal, str):
        _require_text("goal", goal)
    target = ws.resolve_agent(parent, DISPATCH_REASON)
    ws.check_new_name(name)
    held = _spooled(ws, goal, "goal")

    def prepare(child: AgentId) -> str:
        return ws.prepare_child_agent(target, child, name, held)

    return (
        yield from _found(
            ws, lambda: ws.mint_child(target, clock), prepare, target, held, launcher, clock,
            created, parts,
        )
    )


def prompt_actor(
    ws: Workspace,
    text: str | Stream,
    name: str,
    launcher: Launcher,
    clock: Clock,
    created: Callable[[AgentId], None] | None = None,
    parts: WriterParts | None = None,
) -> Actor[AgentId]:
    """R-PROBE-5: mint a root, create its branch and worktree, deposit ``text`` as ``user``,
    probe. Returns the root id. ``name`` is its optional display name (R-ID-8).
    ``text`` is text, or a stream stored once in a spool and copied from there (R-CLI-7).

    Points: ``Point.DISPATCH_LOCKED``, ``Point.DISPATCH_PREPARED``, the deposit's
    ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``, ``Point.DEPOSIT_COLLIDED``,
    ``Point.DEPOSIT_PUBLISHED``, then ``Point.DISPATCH_CREATED`` and the probe's
    ``Point.PROBE_BUSY``, ``Point.PROBE_ACQUIRED``, ``Point.PROBE_RELEASED``,
    ``Point.PROBE_LAUNCHED``.
    Always: ``Point.DISPATCH_LOCKED``, ``Point.DISPATCH_PREPARED``,
    ``Point.DEPOSIT_LISTED``, ``Point.DEPOSIT_TEMP_WRITTEN``, ``Point.DEPOSIT_PUBLISHED``,
    ``Point.DISPATCH_CREATED``.
    """
    parts = writer_parts() if parts is None else parts
    if isinstance(text, str):
        _require_text("prompt text", text)
    ws.check_layout()
    ws.check_new_name(name)
    held = _spooled(ws, text, "prompt text")

    def prepare(root: AgentId) -> str:
        return ws.prepare_root_agent(root, name, held)

    return (
        yield from _found(ws, lambda: ws.mint_root(clock), prepare, USER_SENDER, held, launcher,
                          clock, created, parts)
    )


def message(
    ws: Registry,
    agent: str,
    content: str | Stream,
    sender: str,
    launcher: Launcher,
    clock: Clock,
    preflight: Callable[[AgentId], None] | None = None,
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
    created: Callable[[AgentId], None] | None = None,
) -> AgentId:
    """:func:`dispatch_actor` run straight through."""
    return run(dispatch_actor(ws, parent, goal, name, launcher, clock, created))


def prompt(
    ws: Workspace,
    text: str | Stream,
    name: str,
    launcher: Launcher,
    clock: Clock,
    created: Callable[[AgentId], None] | None = None,
) -> AgentId:
    """:func:`prompt_actor` run straight through."""
    return run(prompt_actor(ws, text, name, launcher, clock, created))
