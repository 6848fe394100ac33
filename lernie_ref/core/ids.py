"""Agent ids: the id guard, the :data:`AgentId` type, descent (``parent_of``, depth) and
minting (R-ID-*).

An agent id is its branch name and its inbox directory name, so the guard's one
job is that an id stays a single path component (R-ID-3). The guard runs once, where
an id enters, and its result travels as :data:`AgentId` (R-ID-9); this module is the
only one that makes one. The shape of an id is its descent: a child's id is its
parent's id plus ``-<compact>-<short>``.
"""

from __future__ import annotations

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.clock import Clock, compact_stamp, short_id
from lernie_ref.core.errors import NotAnAgentId

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import NewType

    AgentId = NewType("AgentId", str)
else:
    AgentId = str  # at run time a plain ``str``: ``typing`` stays off the light paths (R-CLI-5)
"""R-ID-9: an id that passed the guard (R-ID-3) where it entered; trusted from there on.

Only :func:`require_agent_id` (the guard) and the minting functions, whose results are
guarded by construction, produce one; every function that builds a path from an id takes an
``AgentId``, so ``mypy --strict`` proves each such path went through the guard once. At run
time it is a plain ``str`` (no cost on the ``lernie message`` path).
"""

"""R-ID-7: the sender token of an operator deposit; never an agent id."""


def is_agent_id(agent_id: str) -> bool:
    """R-ID-3: an id is accepted iff it is non-empty, not ``.``/``..``, and has no ``/ \\ NUL``.

    Contract (R-ID-3, both directions; chr(47) is ``/``, chr(92) ``\\``, chr(0) NUL):

    post: not __return__ or agent_id not in ("", ".", "..")
    post: not __return__ or all(c not in agent_id for c in (chr(47), chr(92), chr(0)))
    post: __return__ or agent_id in ("", ".", "..") or bool(set(agent_id) & {"/", chr(92), chr(0)})
    """
    if agent_id in ("", ".", ".."):
        return False
    return "/" not in agent_id and "\\" not in agent_id and "\0" not in agent_id


def require_agent_id(agent_id: str) -> AgentId:
    """R-ID-3, R-ID-9: return ``agent_id`` unchanged as an :data:`AgentId` or raise; never sanitize.

    The one constructor of :data:`AgentId`: the edges (CLI arguments, name resolution,
    directory listings, environment, argv) call it; code inside trusts the type.

    Contract (R-ID-3: an accepted id comes back unchanged, a declined one raises). CrossHair
    checks it through ``tests/support/bounded.py`` (an exception text built from a symbolic
    string cannot be printed by CrossHair itself):

    post: __return__ == agent_id and is_agent_id(agent_id)
    raises: NotAnAgentId
    """
    # crosshair: off
    if not is_agent_id(agent_id):
        raise NotAnAgentId(agent_id)
    return AgentId(agent_id)


def as_agent_id(text: str) -> AgentId | None:
    """R-ID-3, R-ID-9: ``text`` as an :data:`AgentId` when it passes the guard, else ``None``
    (for a name met in a listing, where a non-id is no agent rather than an error)."""
    return AgentId(text) if is_agent_id(text) else None


_NOT_IDS = frozenset(("", ".", ".."))


def agent_ids_among(names: Iterable[str]) -> list[AgentId]:
    """R-ID-3, R-ID-9: the names of a listing (directory entries, refs) that pass the guard,
    as :data:`AgentId`; the others are no agent's (the listing edge's form of the guard).

    The guard is applied to the whole listing at once first (a thousand refs are a
    thousand agents, nearly always): when no name is ``""``, ``.`` or ``..`` and their
    concatenation holds no ``/``, ``\\`` or NUL, every name passes; otherwise each is
    judged alone."""
    listed = list(names)
    joined = "".join(listed)
    if "/" in joined or "\\" in joined or "\0" in joined or not _NOT_IDS.isdisjoint(listed):
        return [AgentId(name) for name in listed if is_agent_id(name)]
    return list(map(AgentId, listed))


def parent_of(agent_id: str) -> str | None:
    """R-ID-1: drop the last two ``-`` tokens; two tokens or fewer is a root (``None``).

    Contract (R-ID-1: a root has at most one ``-``; a parent is the id minus its last two tokens):

    post: (__return__ is None) == (agent_id.count("-") < 2)
    post: __return__ is None or agent_id.startswith(__return__ + "-")
    post: __return__ is None or agent_id[len(__return__) + 1 :].count("-") == 1
    """
    tokens = agent_id.split("-")
    if len(tokens) <= 2:
        return None
    return "-".join(tokens[:-2])


def parent_id(agent_id: AgentId) -> AgentId | None:
    """R-ID-1, R-ID-9: :func:`parent_of` as an :data:`AgentId`, guarded where it is derived
    (the parent of the id ``..-a-b`` is ``..``, no id: :class:`NotAnAgentId`); ``None`` for a
    root."""
    parent = parent_of(agent_id)
    return None if parent is None else require_agent_id(parent)


def depth(agent_id: str) -> int:
    """R-ID-2: ``count('-') // 2``; a root is depth 0.

    Contract (R-ID-2, R-ID-1: a root is depth 0, a child is one deeper than its parent):

    post: __return__ >= 0
    post: (__return__ == 0) == (parent_of(agent_id) is None)
    post: parent_of(agent_id) is None or depth(parent_of(agent_id) or "") == __return__ - 1
    """
    return agent_id.count("-") // 2


def mint_root_id(clock: Clock) -> AgentId:
    """R-ID-5: ``<compact>-<short>``, e.g. ``20260422T065432Z-0a1b2c3d``.

    Guarded by construction (digits, ``T``, ``Z``, hex and ``-`` only), hence an AgentId.
    """
    now = clock.now_ns()
    return AgentId(f"{compact_stamp(now)}-{short_id(now)}")


def mint_child_id(parent_id: AgentId, clock: Clock) -> AgentId:
    """R-ID-5: ``<parent>-<compact>-<short>``; a guarded parent plus safe tokens stays guarded."""
    now = clock.now_ns()
    return AgentId(f"{parent_id}-{compact_stamp(now)}-{short_id(now)}")


def is_timestamp_token(token: str) -> bool:
    """R-ID-6: the 16-byte ``YYYYMMDDTHHMMSSZ`` shape (used to keep names apart from ids)."""
    b = token.encode()
    return (
        len(b) == 16
        and b[8:9] == b"T"
        and b[15:16] == b"Z"
        and b[0:8].isdigit()
        and b[9:15].isdigit()
    )
