"""The release rule: a release over unseen mail starts a driver (R-REL-1, R-REL-2; bl-9c8f).

The lost wakeup it closes: a writer deposits and probes while a driver still
holds the lock, so the probe reads busy and launches nothing; the driver's one
drain listed the inbox *before* that deposit landed; it releases and exits; the
deposit is stranded until some later touch. Upstream shipped exactly that.

The rule: every voluntary release re-reads the inbox **after** releasing, and if
some pending deposit is outside the releaser's seen-set and warrants a launch by
its own kind (R-REL-2: everything but a parked ``stopped``/``budget-exhausted``
result), the releaser completes the writer's launch with the writer's own
probe-and-launch. Because every writer deposits before it probes (R-PROBE-2),
either the writer's probe found the lock free and launched, or it found it held,
and then this re-read comes strictly later and sees the deposit.

Errors after the release are notices, never an exit status: the process has no
authority left to act on them (R-TERM-5). Points: ``release.released``,
``release.reread``, then the probe's points.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from lernie_ref.actors.probe import ProbeOutcome, probe_actor
from lernie_ref.core.actor import Actor, Passed
from lernie_ref.core.errors import LernieError, io_text
from lernie_ref.core.frontmatter import deposit_warrants_launch
from lernie_ref.core.ids import AgentId
from lernie_ref.core.vocab import Point
from lernie_ref.substrate.deposit import Pending, inbox_dir, pending
from lernie_ref.substrate.launcher import Launcher
from lernie_ref.substrate.lock import ExecutorLock


def notice(text: str) -> None:
    """One operator line on stderr (the driver log of a launched driver)."""
    sys.stderr.write(f"lernie: {text}\n")
    sys.stderr.flush()


def _body(item: Pending) -> str | None:
    try:
        return item.path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def owed_launch(listing: Sequence[Pending], seen: frozenset[tuple[str, int]]) -> bool:
    """R-REL-1, R-REL-2: is some pending deposit unseen and, by its own kind, worth a launch?

    The first half is what keeps a wakeup from being lost (I-7); the second is pin 2: a
    parked obituary wakes nobody (I-9).
    """
    return any(
        (item.name, item.mtime_ns) not in seen and deposit_warrants_launch(_body(item))
        for item in listing
    )


def release_actor(
    ws: Path,
    agent_id: AgentId,
    lock: ExecutorLock,
    seen: frozenset[tuple[str, int]],
    launcher: Launcher,
    *,
    unlock: Callable[[ExecutorLock], None] = ExecutorLock.release,
    reread: Callable[[Path], list[Pending]] = pending,
    owed: Callable[[Sequence[Pending], frozenset[tuple[str, int]]], bool] = owed_launch,
) -> Actor[ProbeOutcome | None]:
    """Release ``lock`` (``LOCK_UN``), re-read the inbox, probe-and-launch if owed (R-REL-1).

    Points: ``Point.RELEASE_RELEASED``, ``Point.RELEASE_REREAD``, then (when a launch is
    owed) those of the probe: ``Point.PROBE_BUSY``, ``Point.PROBE_ACQUIRED``,
    ``Point.PROBE_RELEASED``, ``Point.PROBE_LAUNCHED``.
    Always: ``Point.RELEASE_RELEASED``.

    ``unlock``, ``reread`` and ``owed`` are the hop's parts (R-STEP-10); they default to
    production's.
    """
    unlock(lock)
    yield Passed(Point.RELEASE_RELEASED, agent_id)
    try:
        listing = reread(inbox_dir(ws, agent_id))
    except OSError as exc:
        notice(
            f"post-release inbox re-read for {agent_id}: {io_text(exc)} "
            "(accepted crash class, R-TERM-5)"
        )
        return None
    yield Passed(Point.RELEASE_REREAD, agent_id, str(len(listing)))
    if not owed(listing, seen):
        return None
    try:
        return (yield from probe_actor(ws, agent_id, launcher))
    except LernieError as exc:
        notice(f"post-release launch for {agent_id}: {exc} (accepted crash class, R-TERM-5)")
        return None
