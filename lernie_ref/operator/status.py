"""``lernie status``: the operator's view of every agent, read without touching anything
(R-STATUS-*).

Status is strictly read-only: it takes no lock (a held probe, however brief,
could make a writer's probe read "busy" with nobody left to launch for it), so
liveness comes from the kernel's lock table (``/proc/locks``), and it creates no
directory. "Undelivered" is not stored anywhere; it is derived: a pending deposit
under an agent that no executor drives is undelivered until the next touch
(R-STATUS-2).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from lernie_ref.actors.readings import mark_value, revivals_at, transcript_due
from lernie_ref.core.debt import READING, DebtReading
from lernie_ref.core.debt import reading as debt_reading
from lernie_ref.core.entry import Entry as _Entry
from lernie_ref.core.errors import LernieError
from lernie_ref.core.frontmatter import split_frontmatter, terminal_ref_of
from lernie_ref.core.ids import AgentId, parent_of
from lernie_ref.core.record import as_dict, record
from lernie_ref.core.sweep import REVIVE_LIMIT, Condition, at_rest_mark, condition_of
from lernie_ref.core.vocab import NAME_FILE, Epitaph, MarkKind
from lernie_ref.operator.stop import holders_in
from lernie_ref.substrate.deposit import Pending, pending
from lernie_ref.substrate.procfs import FlockHolders, LockLine, lock_table
from lernie_ref.substrate.refsnap import (
    AgentOids,
    AgentRefs,
    ObjectFacts,
    RefOids,
    names_at,
)
from lernie_ref.substrate.transcript import Transcript, is_terminal_response
from lernie_ref.substrate.workspace import Workspace

Entry = _Entry[Path]


@record(frozen=True)
class AgentStatus:
    """One row of ``lernie status`` (R-STATUS-1)."""

    id: AgentId
    name: str
    parent: str | None
    live: bool | None
    """An executor holds the lock; ``None`` when the lock table cannot be read."""
    pending: int
    undelivered: int
    """Pending deposits with no executor to drain them (R-STATUS-2)."""
    last_epitaph: str | None
    transcript_length: int | None
    """Entries in ``messages/``; ``None`` when the transcript cannot be read."""
    died_mid_work: bool
    input_tokens: int = 0
    """R-STATUS-4: input tokens reported in the ``usage`` of the agent's model entries."""
    output_tokens: int = 0
    """R-STATUS-4: output tokens reported likewise."""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


INPUT_COUNTERS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
OUTPUT_COUNTERS = ("output_tokens",)


def token_usage(entries: Sequence[Entry]) -> tuple[int, int]:
    """R-STATUS-4: (input, output) tokens summed over the ``usage`` of the model entries.

    Input counts ``input_tokens`` and the cache counters, output ``output_tokens``;
    other counters, and entries that cannot be read, count nothing.
    """
    tokens_in = tokens_out = 0
    for entry in entries:
        if entry.delivered or entry.origin == "tool":
            continue
        import json  # loaded by the first model entry: an agent with none reads no JSON

        try:
            parsed: object = json.loads(entry.path.read_bytes())
        except (OSError, ValueError):
            continue
        usage = parsed.get("usage") if isinstance(parsed, dict) else None
        if not isinstance(usage, dict):
            continue
        for names, add_in in ((INPUT_COUNTERS, True), (OUTPUT_COUNTERS, False)):
            for name in names:
                value = usage.get(name)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    if add_in:
                        tokens_in += value
                    else:
                        tokens_out += value
    return tokens_in, tokens_out


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


class _Results:
    """Every result message on disk, by sender: pending deposits and delivered entries."""

    def __init__(
        self,
        agents: Sequence[AgentId],
        mail: dict[AgentId, list[Pending]],
        entries: dict[AgentId, list[Entry]],
    ) -> None:
        self._by_sender: dict[str, list[Path]] = {}
        for agent in agents:
            for deposit in mail[agent]:
                self._by_sender.setdefault(deposit.sender, []).append(deposit.path)
            for entry in entries.get(agent, []):
                if entry.delivered:
                    self._by_sender.setdefault(entry.origin, []).append(entry.path)

    def epitaph_at(self, sender: str, terminal_ref: str) -> str | None:
        """The epitaph of ``sender``'s result whose ``terminal_ref`` is ``terminal_ref``."""
        for path in self._by_sender.get(sender, []):
            body = _read(path)
            if body is not None and terminal_ref_of(body) == terminal_ref:
                return split_frontmatter(body)[0] or None
        return None


def last_epitaph(
    entries: Sequence[Entry] | None,
    tip: str,
    returned: str | None,
    budget: str | None,
    lookup: _Results,
    agent: AgentId,
    stopped: str | None = None,
    reading: DebtReading = READING,
) -> str | None:
    """R-STATUS-3: the agent's latest terminal event as the disk records it.

    The newest entry a terminal response → ``final-response`` (whoever it went to);
    else the budget mark at the tip → ``budget-exhausted``; else the stop mark at the tip
    → ``stopped`` (R-TERM-6; a root's stop leaves no result); else the epitaph of the
    result its returned mark points at (``stopped``, ``died``, … — the latest one
    reported); else none. What is a terminal response is ``reading``'s (R-STEP-10).
    """
    if entries:
        try:
            if is_terminal_response(entries[0], reading):
                return Epitaph.FINAL_RESPONSE.value
        except LernieError:
            pass
    if budget is not None and budget == tip:
        return Epitaph.BUDGET_EXHAUSTED.value
    if stopped is not None and stopped == tip:
        return Epitaph.STOPPED.value
    if returned is not None:
        return lookup.epitaph_at(agent, returned) or "?"
    return None


def _refs_from_git(ws: Workspace, agent: AgentId) -> AgentRefs:
    """One agent's tip and marks asked of git one by one (when the snapshot cannot say)."""
    try:
        tip = ws.branch_tip(agent)
    except LernieError:
        tip = ""
    return AgentRefs(
        tip,
        "",
        mark_value(ws, MarkKind.RETURNED, agent),
        mark_value(ws, MarkKind.BUDGET_EXHAUSTED, agent),
        mark_value(ws, MarkKind.STOPPED, agent),
    )


def _agent_refs(
    ws: Workspace, oids: AgentOids | None, facts: ObjectFacts, agent: AgentId
) -> AgentRefs:
    """The agent's tip and marks: from the snapshot's object ids (a mark peeled to its
    commit by the facts, read only when some agent has a mark), else asked of git."""
    if oids is not None:
        if oids.returned is None and oids.budget is None and oids.stopped is None:
            return AgentRefs(oids.tip, "", None, None, None)
        found = facts.refs_of(oids)
        if found is not None:
            return found
    return _refs_from_git(ws, agent)


def worktree_name(ws: Workspace, agent: AgentId) -> str | None:
    """R-STATUS-1: the trimmed ``name`` file of the agent's worktree, when it is a regular
    file (not reached through a link) of UTF-8 text; ``None`` otherwise."""
    path = f"{ws.worktree_text(agent)}/{NAME_FILE}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = [os.read(fd, 1 << 16)]
        while len(chunks[-1]) == 1 << 16:  # a regular file's read is short only at its end
            chunks.append(os.read(fd, 1 << 16))
        return b"".join(chunks).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


class _Background:
    """``read()`` run on a thread of its own; :meth:`result` waits for it and returns its
    value, or raises what it raised."""

    def __init__(self, read: Callable[[], list[LockLine] | None]) -> None:
        import threading  # the one thread of the status path

        self._read = read
        self._value: list[LockLine] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._read()
        except BaseException as exc:  # handed to the caller's thread by result()
            self._error = exc

    def result(self) -> list[LockLine] | None:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def status(ws: Workspace, reading: DebtReading | None = None) -> list[AgentStatus]:
    """R-STATUS-1: one row per registered agent, in registry order.

    Every tip and mark comes from one ``for-each-ref`` (names and object ids; a second
    one tells what the marks' objects are, only when there are marks), the lock table from
    one read of ``/proc/locks``, each transcript from one listing; a name from the
    worktree's ``name`` file, and from one ``cat-file`` for the agents whose file cannot
    say (R-STATUS-1); the rest is read from the files. ``reading``: the reply-debt reading
    (R-STEP-10; ``None``: the process default, read once here).
    """
    reading = debt_reading() if reading is None else reading
    # The lock table is read beside everything else: the kernel makes its first reader
    # in a process wait for a grace period (7-12 ms measured), time it sleeps rather
    # than works, so the ref read and the listings fill it. Which executors are live is
    # a snapshot of one moment, as every other column is.
    table_reader = _Background(lock_table)
    snapshot = RefOids.read(ws.git, ws.repo_git)
    agents = snapshot.agent_ids()
    registry = frozenset(agents)
    facts = ObjectFacts(ws.git, ws.repo_git)
    refs = {a: _agent_refs(ws, snapshot.agent_oids(a), facts, a) for a in agents}
    listed = {agent: Transcript(ws.worktree_text(agent)) for agent in agents}
    entries: dict[AgentId, list[Entry]] = {}
    for agent in agents:
        with contextlib.suppress(LernieError):
            entries[agent] = listed[agent].everything()
    inboxes = {agent: ws.inbox_text(agent) for agent in agents}  # text: no path objects
    deposits = {agent: pending(inboxes[agent]) for agent in agents}  # one listing per inbox
    lookup = _Results(agents, deposits, entries)
    table = table_reader.result()
    held = None if table is None else FlockHolders(table)  # one walk of the table
    lives: dict[str, bool | None] = {}
    for agent in agents:
        holders = holders_in(held, inboxes[agent])
        lives[agent] = None if holders is None else bool(holders)
    # A live executor's tool step may be changing its worktree: its committed name counts.
    names: dict[str, str | None] = {
        agent: None if lives[agent] is not False else worktree_name(ws, agent)
        for agent in agents
    }
    unsure: dict[str, str] = {a: refs[a].tip for a in agents if names[a] is None}
    if unsure:
        names.update(names_at(ws.git, ws.repo_git, unsure))
    rows: list[AgentStatus] = []
    for agent in agents:
        parent = parent_of(agent)
        live = lives[agent]
        mail = len(deposits[agent])
        agent_refs = refs[agent]
        tip = agent_refs.tip
        returned = agent_refs.returned
        budget = agent_refs.budget
        stop_mark = agent_refs.stopped
        try:
            due = transcript_due(ws, agent, listed[agent])
            condition = condition_of(
                driven=bool(live),
                pending_count=mail,
                due=due,
                budget_at_tip=at_rest_mark(tip, budget, stop_mark),
            )
        except LernieError:
            condition = Condition.AT_REST
        own = entries.get(agent)
        tokens_in, tokens_out = token_usage(own or [])
        epitaph = last_epitaph(own, tip, returned, budget, lookup, agent, stop_mark, reading)
        # A stop leaves the same disk state as a death, but its mark (and, for a child, its
        # obituary) sits at the tip.
        stopped_at_tip = stop_mark == tip or (returned == tip and epitaph == Epitaph.STOPPED)
        name = names.get(agent)
        rows.append(
            AgentStatus(
                id=agent,
                name=ws.agent_name(agent) if name is None else name,
                parent=parent if parent in registry else None,
                live=live,
                pending=mail,
                undelivered=0 if live else mail,
                last_epitaph=epitaph,
                transcript_length=None if own is None else len(own),
                died_mid_work=condition is Condition.DIED_MID_WORK and not stopped_at_tip,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
            )
        )
    return rows


HEADERS = ("ID", "NAME", "PARENT", "EXECUTOR", "PENDING", "LAST EPITAPH", "ENTRIES")


def _cells(row: AgentStatus) -> tuple[str, ...]:
    executor = "?" if row.live is None else ("live" if row.live else "-")
    if row.died_mid_work:
        executor = "dead"
    mail = f"{row.undelivered} undelivered" if row.undelivered else str(row.pending)
    entries = "?" if row.transcript_length is None else str(row.transcript_length)
    return (
        row.id,
        row.name or "-",
        row.parent or "-",
        executor,
        mail,
        row.last_epitaph or "-",
        entries,
    )


def render_table(rows: Sequence[AgentStatus]) -> str:
    """R-STATUS-1: a plain table, columns padded to their widest cell, two spaces apart.

    R-STATUS-4: once some model entry reported usage, a ``TOKENS`` column (input plus
    output per agent) and a closing ``tokens: <total> (input <i>, output <o>)`` line.
    """
    with_tokens = any(r.tokens for r in rows)
    headers = (*HEADERS, "TOKENS") if with_tokens else HEADERS
    body = [(*_cells(r), str(r.tokens)) if with_tokens else _cells(r) for r in rows]
    table = [headers, *body]
    widths = [max(len(line[i]) for line in table) for i in range(len(headers))]
    text = "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in table
    )
    if with_tokens:
        tokens_in = sum(r.input_tokens for r in rows)
        tokens_out = sum(r.output_tokens for r in rows)
        text += f"\ntokens: {tokens_in + tokens_out} (input {tokens_in}, output {tokens_out})"
    return text


def render_json(rows: Sequence[AgentStatus]) -> str:
    """R-STATUS-4: each row carries its counters and ``tokens``; ``tokens`` at the top sums them."""
    tokens_in = sum(r.input_tokens for r in rows)
    tokens_out = sum(r.output_tokens for r in rows)
    import json

    return json.dumps(
        {
            "agents": [{**as_dict(r), "tokens": r.tokens} for r in rows],
            "tokens": {"input": tokens_in, "output": tokens_out, "total": tokens_in + tokens_out},
        },
        sort_keys=True,
    )


DISK_LOW_BYTES = 1 << 20
"""Below this many free bytes on the workspace's file system, status says the disk is full."""
DISK_FULL_TEXT = "No space left on device"


def advice(ws: Workspace, row: AgentStatus) -> str | None:
    """R-STATUS-5: what the operator can do for an agent that is dead, or whose mail has no
    driver (``None`` for any other row). Reads the driver log of those rows only."""
    if row.died_mid_work:
        try:
            tip = ws.branch_tip(row.id)
        except LernieError:
            tip = ""
        said = _log_said(ws, row.id)
        if revivals_at(ws, row.id, tip) >= REVIVE_LIMIT:
            return (
                f"{row.id} died mid-work {REVIVE_LIMIT} times after `lernie scan` revived it "
                f"with no progress, so the crash-loop guard stopped reviving it{said}; read "
                f"{ws.driver_log(row.id)}, fix the cause, then run "
                f"`lernie advance {ws.root} {row.id}` by hand (R-SCAN-10)"
            )
        return (
            f"{row.id} died mid-work with work due{said}; `lernie scan {ws.root}` relaunches "
            "it (R-SCAN-10)"
        )
    if row.undelivered and row.live is False:
        said = _log_said(ws, row.id)
        return (
            f"{row.id} has {row.undelivered} undelivered message(s) and no driver{said}; "
            f"`lernie scan {ws.root}` launches one (R-SCAN-2)"
        )
    return None


def _log_said(ws: Workspace, agent: AgentId) -> str:
    """``; its driver log ends: <line>`` (naming a full disk), or nothing."""
    from lernie_ref.operator.driverlog import last_log_line  # read for the flagged rows alone

    line = last_log_line(ws, agent)
    if line is None:
        return ""
    full = " (the disk is full: free space first)" if DISK_FULL_TEXT in line else ""
    return f"; its driver log ends: {line}{full}"


def disk_advice(ws: Workspace, free_bytes: int | None) -> str | None:
    """R-STATUS-5: a full disk, where deposits, commits and driver logs fail."""
    if free_bytes is None or free_bytes >= DISK_LOW_BYTES:
        return None
    return (
        f"the disk holding {ws.root} is full ({free_bytes} bytes free): deposits, commits and "
        f"driver logs fail until space is freed; then `lernie scan {ws.root}` relaunches what "
        "died (R-SCAN-10)"
    )


def free_bytes(path: str | Path) -> int | None:
    """Bytes an unprivileged writer may still use on ``path``'s file system."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize
