"""``lernie stop``: find the executor that holds an agent's lock, and its descendants', and
SIGTERM them (R-STOP-*).

Theory of operation. An executor is the process whose open file description of
``<ws>/inbox/<id>/`` carries the agent's ``flock`` (R-LOCK-1). Many processes may
have that directory open for an instant (a writer's probe, a scan, a driver's
fork child before its exec), so an open descriptor alone proves nothing. The
kernel knows who holds the lock: ``/proc/<pid>/fdinfo/<fd>`` lists a ``lock:``
line for every lock held through that very descriptor. Discovery therefore scans
``/proc/<pid>/fd/*`` once for descriptors of the targeted inbox directories and
keeps only those whose ``fdinfo`` shows an ``FLOCK … WRITE`` lock on the
directory's inode; when a description is shared (a fork child still holding a
copy), the process that took the lock (the pid recorded in the lock line) wins.
A holder whose command line is not ``advance <ws> <agent>`` (a writer's probe, a
scan, which hold the lock for an instant) counts only if it still holds the lock
after a short grace (R-STOP-2).

The cascade is the stop (litany, bl-3114): the agent and every descendant whose
inbox directory exists are targeted, always (R-STOP-3). Nothing is signalled when
any target's process group is the caller's own (R-STOP-4). ``SIGTERM`` goes to the
holder process alone, never to its group: the executor ends its own model adapter
at its next check point, while a group signal would also fell a ``git`` it is
running mid-commit and turn the stop into a crash (D-14). ``stop`` then waits for
the signalled processes to exit; one that outlives the deadline gets ``SIGKILL``,
sent to its whole group when it leads one (its adapter dies with it), and
every process carrying the agent's tool marks is killed too (R-STOP-5, R-TOOL-7).
The stopped executor ends through its normal exit protocol
with the ``stopped`` epitaph (R-TERM-1, R-TERM-4): nobody is woken.

This module is on a light import path: no JSON, no git beyond the existence
guard, no scan machinery.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from lernie_ref.core.errors import ExternalFailure, SelfGroup
from lernie_ref.core.ids import AgentId, parent_of, require_agent_id
from lernie_ref.core.record import field, record
from lernie_ref.substrate import procfs
from lernie_ref.substrate.procfs import FlockHolders, lock_table, parse_lock_line

STOP_DEADLINE_S = 30.0
"""R-STOP-5: how long a signalled executor may take to end its exit protocol before SIGKILL."""

POLL_S = 0.05
PROBE_GRACE_S = 1.0
"""R-STOP-2: how long a holder that is not a driver must keep the lock to count as one."""
MAX_ROUNDS = 3
"""R-STOP-3: discovery is repeated after each wait, at most this many rounds in all."""


@record(frozen=True)
class Holder:
    """The process holding ``agent``'s executor lock, and the group it is signalled through."""

    agent: AgentId
    pid: int
    pgid: int
    driver: bool = True
    """Its command line is ``… advance <ws> <agent>``: an executor, signalled at once."""

    @property
    def leads_group(self) -> bool:
        """The holder leads its process group (a SIGKILL then takes the whole group)."""
        return self.pgid == self.pid


@record
class StopReport:
    """What a stop did: every holder signalled (in order) and those that needed SIGKILL."""

    signalled: list[Holder] = field(default_factory=list)
    killed: list[Holder] = field(default_factory=list)
    agent: str = ""
    """The id the stop resolved its argument to (R-ID-6)."""


# --------------------------------------------------------------------- pure parts


def is_descendant_or_self(candidate: str, agent: AgentId) -> bool:
    """R-STOP-3: ``candidate`` is ``agent`` or reaches it by repeated ``parent_of`` (R-ID-1),
    a grandchild included, so a stop reaches the whole subtree (I-22)."""
    current: str | None = candidate
    while current is not None:
        if current == agent:
            return True
        current = parent_of(current)
    return False


# ------------------------------------------ lock holders (/proc through substrate.procfs)


def holders_in(table: FlockHolders | None, inbox: str | Path) -> list[int] | None:
    """Pids recorded in ``table`` for an exclusive ``flock`` on ``inbox``: ``None`` when the
    table could not be read, ``[]`` when ``inbox`` does not exist."""
    try:
        st = os.stat(inbox)
    except FileNotFoundError:
        return []
    except OSError:
        return None
    if table is None:
        return None
    return table.on(st)


def lock_holder_pids(inbox: Path) -> list[int] | None:
    """Pids recorded for an exclusive ``flock`` on ``inbox`` in ``/proc/locks``.

    Read-only: takes no lock, so it can never make a writer's probe read "busy"
    (``lernie status`` uses it). ``None`` when ``/proc/locks`` cannot be read; ``[]``
    when ``inbox`` does not exist.
    """
    try:
        os.stat(inbox)
    except FileNotFoundError:
        return []
    except OSError:
        return None
    table = lock_table()
    return holders_in(None if table is None else FlockHolders(table), inbox)


def _holding_fds(
    pid: int, targets: dict[str, tuple[AgentId, os.stat_result]]
) -> list[tuple[AgentId, int]]:
    """(agent, recorded lock pid) for each descriptor of ``pid`` that holds a targeted lock."""
    found: list[tuple[AgentId, int]] = []
    for fd, link in procfs.fd_targets(pid):
        hit = targets.get(link)
        if hit is None:
            continue
        agent, st = hit
        for raw in procfs.fd_lock_lines(pid, fd) or ():
            line = parse_lock_line(raw)
            if line is not None and line.is_exclusive_flock_on(st):
                found.append((agent, line.pid))
    return found


def _is_driver(pid: int, agent: AgentId) -> bool:
    argv = procfs.cmdline(pid)
    return argv is not None and b"advance" in argv and os.fsencode(agent) in argv


def _pgid(pid: int) -> int | None:
    found = procfs.stat(pid)
    return None if found is None else found.pgid


def discover(inboxes: dict[AgentId, Path]) -> list[Holder]:
    """R-STOP-2: the lock holder of each inbox directory in ``inboxes`` (agent → path).

    One pass over ``/proc``; a directory that does not exist has no holder. The
    result is ordered by agent id and carries one holder per agent at most.
    """
    targets: dict[str, tuple[AgentId, os.stat_result]] = {}
    for agent, path in inboxes.items():
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ExternalFailure.os_error("walk inbox directory", exc) from None
        targets[os.path.realpath(path)] = (agent, st)
    if not targets:
        return []
    try:
        pids = procfs.pids()
    except OSError as exc:
        raise ExternalFailure.os_error("scan /proc", exc) from None
    seen: dict[AgentId, list[tuple[int, int]]] = {}
    for pid in pids:
        for agent, lock_pid in _holding_fds(pid, targets):
            seen.setdefault(agent, []).append((pid, lock_pid))
    holders: list[Holder] = []
    for agent in sorted(seen):
        candidates = seen[agent]
        # The process that took the lock, when it still holds a copy; else the first holder.
        chosen = next((pid for pid, lock_pid in candidates if pid == lock_pid), candidates[0][0])
        pgid = _pgid(chosen)
        if pgid is None:
            continue  # it exited meanwhile: nothing to stop
        holders.append(Holder(agent, chosen, pgid, _is_driver(chosen, agent)))
    return holders


def confirm(
    holders: list[Holder],
    inboxes: dict[AgentId, Path],
    *,
    grace_s: float = PROBE_GRACE_S,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> list[Holder]:
    """R-STOP-2: keep every driver; keep any other holder only if it still holds after
    ``grace_s`` (a writer's probe or a scan holds a lock for an instant, an executor
    for its whole hop)."""
    others = {(h.agent, h.pid) for h in holders if not h.driver}
    end = monotonic() + grace_s
    while others and monotonic() < end:
        sleep(POLL_S)
        still = {(h.agent, h.pid) for h in discover(inboxes)}
        others &= still
    return [h for h in holders if h.driver or (h.agent, h.pid) in others]


def is_gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie awaiting its parent's reap counts as gone)."""
    found = procfs.stat(pid)
    return found is None or not found.alive


# --------------------------------------------------------------------- the verb


def subtree_inboxes(ws_root: Path, agent: AgentId) -> dict[AgentId, Path]:
    """R-STOP-3: ``inbox/<agent>`` and every existing ``inbox/<d>`` with ``d`` a descendant."""
    inbox_root = Path(ws_root) / "inbox"
    out = {agent: inbox_root / agent}
    try:
        names = os.listdir(inbox_root)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ExternalFailure.os_error("walk inbox directory", exc) from None
    for name in names:
        if name != agent and is_descendant_or_self(name, agent):  # a listing: an edge (R-ID-9)
            out[require_agent_id(name)] = inbox_root / name
    return out


def _send(holder: Holder, sig: signal.Signals, *, group: bool) -> None:
    try:
        if group and holder.leads_group:
            os.killpg(holder.pgid, sig)
        else:
            os.kill(holder.pid, sig)
    except ProcessLookupError:
        pass


def signal_and_wait(
    holders: Iterable[Holder],
    *,
    deadline_s: float = STOP_DEADLINE_S,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> list[Holder]:
    """R-STOP-4, R-STOP-5: SIGTERM each holder, wait for all to exit,
    SIGKILL those past the deadline.

    Refuses (:class:`SelfGroup`) before sending anything if a holder shares the
    caller's own process group: that holder is the caller's own ancestor or kin
    (say, ``lernie stop`` run by the very executor's tool), never a detached
    executor. Returns the holders that had to be killed.
    """
    batch = list(holders)
    own = os.getpgrp()
    for holder in batch:
        if holder.pgid == own:
            raise SelfGroup(own)
    for holder in batch:
        _send(holder, signal.SIGTERM, group=False)
    end = monotonic() + deadline_s
    alive = [h for h in batch if not is_gone(h.pid)]
    while alive and monotonic() < end:
        sleep(POLL_S)
        alive = [h for h in alive if not is_gone(h.pid)]
    for holder in alive:
        _send(holder, signal.SIGKILL, group=True)
    return alive


STOP_REASON = "a stop names an existing agent, by id or unique name (R-ID-6)"


def stop(
    ws_root: str | Path,
    agent: str,
    *,
    deadline_s: float = STOP_DEADLINE_S,
    sleep: Callable[[float], None] = time.sleep,
) -> StopReport:
    """R-STOP-1, R-STOP-2, R-STOP-3, R-STOP-4,
    R-STOP-5: stop ``agent``'s executor and every descendant's; guards first (``agent`` is
    an id or a unique name, resolved as every verb resolves it, R-ID-6).

    Discovery is repeated after each wait (at most :data:`MAX_ROUNDS` rounds), so a
    descendant's reply that revived an already-stopped ancestor is stopped too; a
    round that finds nobody new ends the stop.
    """
    from lernie_ref.substrate.workspace import Workspace

    ws = Workspace(ws_root)
    target = ws.resolve_agent(agent, STOP_REASON)
    report = StopReport(agent=target)
    signalled_pids: set[int] = set()
    for _ in range(MAX_ROUNDS):
        inboxes = subtree_inboxes(ws.root, target)
        found = [h for h in discover(inboxes) if h.pid not in signalled_pids]
        fresh = confirm(found, inboxes, sleep=sleep)
        if not fresh:
            break
        killed = signal_and_wait(fresh, deadline_s=deadline_s, sleep=sleep)
        if killed:  # R-TOOL-7: a killed executor's tool processes go with it
            from lernie_ref.substrate.shell import kill_marked

            for holder in killed:
                kill_marked(ws.root, holder.agent)
        report.killed.extend(killed)
        report.signalled.extend(fresh)
        signalled_pids.update(h.pid for h in fresh)
    return report
