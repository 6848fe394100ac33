"""The executable model of the lernie agent-inbox protocol (SPEC.md §19).

Theory of operation
-------------------
A `State` is an immutable, hashable snapshot of everything the protocol can
observe: which agents exist, each agent's inbox (pending deposit files in
publication order, i.e. mtime order: R-DEP-12), an abstract transcript, its marks
(returned; stopped or budget-exhausted), pending launches, the live processes
with their program counters, and a multiset of every deposit published and not
yet committed (for I-5).

The transcript is abstracted to the facts every decision reads (R-STEP-3,
R-ADDR-2, R-DEBT-2..4): the last prompter, whether the agent has ever answered,
whether something asking arrived since its newest terminal response, whether
the newest terminal response owed a reply, whether a model call is due, the
tool-window status and the delivered-but-uncommitted entries. This keeps the
state space finite, so an endless exchange shows up as a cycle.

Next to these fields every agent and every process carries a *ghost history*
(`Ghost`): what the steps did, in full (transcript entries, commits, result
publications, marks, listings, launches). Transitions append to it and never
read it; it takes no part in a state's equality or hash, so it does not grow
the state space. The invariants (`lernie_spec.properties`) judge the model's
decisions against this history with their own plainly written functions.

`successors(state, profile, scope)` lists every enabled step as
`(Step, State)`. Each step is one atomic action of one process, or one
external input. Each role's program is one table (`PROGRAMS`) citing the rules
it follows; every step function names its rule; a `Profile` switches
individual rules off or to a historic spelling (see `lernie_spec.variants`).
The model never imports the implementation.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Final, Generic, NamedTuple, TypeVar

from lernie_spec import vocab

USER: Final = -1  # the operator as a sender / last prompter (R-ID-7)
NOBODY: Final = -2  # no last prompter / no recipient / no parent

PLAIN: Final = "plain"
FINAL: Final = vocab.FINAL_RESPONSE  # epitaphs: the vocabulary shared with the code (R-DEP-5)
STOPPED: Final = vocab.STOPPED
BUDGET: Final = vocab.BUDGET_EXHAUSTED
DIED: Final = vocab.DIED
PARKED: Final = (STOPPED, BUDGET)


class _Enum(enum.Enum):
    """An enum hashed by identity (each member is a singleton): states are
    hashed on every visit, and `enum.Enum`'s own hash runs as Python code."""

    __hash__ = object.__hash__


class Window(_Enum):
    """The tool window of a transcript (R-STEP-2/3)."""

    CLOSED = "closed"  # every tool_use has its result
    OPEN = "open"  # the newest entries are a model entry with a tool_use and no result
    BURIED = "buried"  # an unpaired tool_use with a user-side entry after it (Unpaired)


class Role(_Enum):
    WRITER = "W"  # a writer verb (`lernie message`)
    DRIVER = "D"  # `lernie advance`: a hop and its successors, then the exit protocol
    SCANNER = "scan"  # `lernie scan`


class Pc(_Enum):
    """Program counters, named for the action the process takes next."""

    START = "start"
    PUBLISH_MESSAGE = "publish message"
    PROBE_RECIPIENT = "probe recipient"
    LAUNCH_RECIPIENT = "launch recipient"
    SETTLE_WINDOW = "settle window"
    RECOVER_STRAYS = "recover strays"
    LIST_INBOX = "list inbox"
    MOVE_DEPOSIT = "move deposit"
    COMMIT_ENTRY = "commit entry"
    DECLINE_UNPAIRED = "decline unpaired"
    MODEL_STEP = "model step"
    TOOL_LIST_INBOX = "tool: list inbox"
    TOOL_PUBLISH = "tool: publish"
    TOOL_PROBE = "tool: probe"
    TOOL_LAUNCH = "tool: launch"
    TOOL_RESULT = "tool result"
    RESULT_LIST_INBOX = "result: list inbox"
    RESULT_PUBLISH = "result: publish"
    RESULT_MARK = "result: move returned mark"
    RELEASE_LEASE = "release lease"
    REREAD_INBOX = "re-read inbox"
    RULE_PROBE = "release rule: probe"
    RULE_LAUNCH = "release rule: launch"
    SELF_LAUNCH = "self-launch"
    REVIVAL_PROBE = "revival: probe"
    REVIVAL_LAUNCH = "revival: launch"
    COMMIT_FINAL = "commit terminal entry"
    COMMIT_STEP = "commit executor entry"
    LOST_LIST = "lost reply: list inbox"
    LOST_PUBLISH = "lost reply: publish"
    LOST_MARK = "lost reply: move returned mark"
    LOST_PROBE = "lost reply: probe"
    LOST_LAUNCH = "lost reply: launch"
    SWEEP = "sweep"
    FLUSH = "flush"
    DONE = "done"


class Action(_Enum):
    """What a step did, for the invariants to classify steps by."""

    OPERATOR_MESSAGE = "operator message"
    OPERATOR_ADVANCE = "operator advance"
    OPERATOR_STOP = "operator stop"
    OPERATOR_SCAN = "operator scan"
    DRIVER_START = "driver start"
    LIST_FOR_DEPOSIT = "list for deposit"
    PUBLISH = "publish"
    MARK_RETURNED = "move returned mark"
    PROBE = "probe"
    PROBE_RELEASE_LAUNCH = "probe release and launch"
    SELF_LAUNCH = "self-launch"
    SETTLE_WINDOW = "settle window"
    RECOVER_STRAYS = "recover strays"
    LIST_INBOX = "list inbox"
    MOVE_DEPOSIT = "move deposit"
    COMMIT_ENTRY = "commit entry"
    DECLINE = "decline"
    ERROR_EXIT = "error exit"
    MODEL_FINAL = "model final response"
    COMMIT_FINAL = "commit terminal entry"
    COMMIT_STEP = "commit executor entry"
    MODEL_TOOL_USE = "model tool use"
    PARKING_EVENT = "stopped or budget-exhausted"
    TOOL_RESULT = "tool result"
    RELEASE_LEASE = "release lease"
    REREAD_INBOX = "re-read inbox"
    SWEEP = "sweep"
    FLUSH = "flush"
    CRASH = "crash"
    FORKED_CHILD_EXECS = "forked child execs"


class Funding(_Enum):
    """Why a step launches a driver (I-8)."""

    WRITER_DEPOSIT = "writer's deposit"
    RELEASE_RULE = "release rule"
    SELF_LAUNCH = "self-launch"
    REVIVAL = "revival"
    FLUSH = "flush"
    SCAN_REVIVAL = "scan revival"


T = TypeVar("T")

# `tuple.__new__` held once: the compiled model calls it directly instead of looking the
# method up on `tuple` at every record it builds.
_new: Final = tuple.__new__


class Ghost(Generic[T]):
    """A value that takes no part in equality or hashing: ghost history.

    Two states that differ only in their ghost history are one state to the
    explorer; the one kept carries the history of the first (shortest) path
    that reached it, which is the path every trace shows."""

    __slots__ = ("key", "value")

    def __init__(self, value: T) -> None:
        self.value = value
        # what the invariants read of this history, as the explorer's ghost-aware
        # search computes it (`lernie_spec.properties.ghost_key`), cached here as
        # (agent, generation of the search's table, number in that table)
        self.key: tuple[int, int, int] | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ghost)

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"Ghost({self.value!r})"

    def __reduce__(self) -> tuple[type[Ghost[T]], tuple[T]]:
        """Pickled by value: a worker of `lernie-check --jobs` sends its traces back
        (the compiled model's class has no default pickling)."""
        return (Ghost, (self.value,))


class EntryKind(_Enum):
    DELIVERED = "delivered"  # a `.md` entry: a delivered deposit
    MODEL = "model"  # an assistant entry
    TOOL_RESULT = "tool result"


class Entry(NamedTuple):
    """One transcript entry as history: what it is, from whom, with how many tool uses."""

    kind: EntryKind
    sender: int = NOBODY
    deposit_kind: str = PLAIN
    tool_uses: int = 0


class Publication(NamedTuple):
    """A result published by (or, by the sweep, for) an agent."""

    recipient: int
    kind: str
    tip: int  # the author's commit count when it was published (its terminal_ref)
    by_sweep: bool = False
    entries: int = 0  # how many entries the author's transcript held when it was published


class Death(NamedTuple):
    """A process death (a crash, or an error exit, R-STEP-5) as one agent's ghost records
    it: who died, with what it had done, and the serials of the files then pending in
    the agent's inbox."""

    role: Role
    agent: int  # the dead process's agent (driver) or target
    published: tuple[tuple[int, str], ...]
    woke: tuple[int, ...]
    pending: tuple[int, ...]


class AgentHistory(NamedTuple):
    entries: tuple[Entry, ...] = ()  # every file in messages/, strays included
    commits: int = 0  # commits on the agent's branch (the tip)
    results: tuple[Publication, ...] = ()  # results authored by the agent
    parked_at: int = -1  # commit count at which a stop/budget mark was set
    unsynced: bool = False  # a terminal entry reached messages/ and is not committed yet
    revived_at: tuple[int, ...] = ()  # commit count at each revival by a scan (R-SCAN-10)
    parkings: tuple[int, ...] = ()  # commit count at each stop / budget event
    marked_at: int = -1  # commit count the returned mark was last set to (R-DEP-8)
    serials: tuple[int, ...] = ()  # publication serial of each pending file, in inbox order
    received: int = 0  # files ever published into this inbox
    deaths: tuple[Death, ...] = ()  # every process death or error exit, as this agent saw it
    leases: tuple[str, ...] = ()  # each lease "taken", "released", or "lost" by a death


class ProcHistory(NamedTuple):
    published: tuple[tuple[int, str], ...] = ()  # (recipient, kind) of each deposit
    woke: tuple[int, ...] = ()  # each agent it probed (busy or launched) or flushed
    stop_requests: tuple[int, ...] = ()  # agents named by `lernie stop` while it lived
    launched: tuple[tuple[int, Funding], ...] = ()  # (agent, why) of each launch
    committed_final: int = -1  # index of the terminal entry this process committed
    parked_event: bool = False  # it set a stop or budget mark
    released: bool = False  # past its voluntary release (R-TERM-5)
    reread_saw: tuple[File, ...] = ()  # the inbox its release re-read saw
    listing: tuple[File, ...] = ()  # the inbox its drain listed
    moved: tuple[File, ...] = ()  # the files its drain moved


class Profile(NamedTuple):
    """Which rules a protocol version has (reference = all defaults)."""

    release_rule: bool = True  # R-REL-1 (bl-9c8f)
    exit_self_launch: bool = True  # R-TERM-2 (4) self (bl-5846)
    revival: bool = True  # R-TERM-2 (4) recipient (bl-4a6c)
    reply_debt: bool = True  # R-DEBT-4 (bl-82d8)
    reply_to_parent: bool = False  # pre-bl-a96a addressing
    create_only: bool = True  # R-DEP-6 (D-1); False = rename replaces
    stray_recovery: bool = True  # R-DRAIN-2
    crash_settlement: bool = True  # R-STEP-2 (bl-4187)
    stop_settles_window: bool = True  # R-TERM-1 stopped (bl-b98d)
    stopped_wakes_parent: bool = False  # pin 2 broken for `stopped`
    release_by_close: bool = False  # R-LOCK-2 (bl-7318)
    stop_cascade: bool = True  # R-STOP-1 descendants (bl-3114)
    scan_revival: bool = True  # R-SCAN-10 (D-24)


class Scope(NamedTuple):
    """The bounded world explored: agents, inputs, faults, steps."""

    parents: tuple[int, ...] = (NOBODY, 0)  # agent i's parent; P=0 root, C=1 child
    initial: tuple[bool, ...] = (True, False)  # which agents exist at the start
    messages: int = 2  # operator `lernie message` calls
    advances: int = 1  # operator `lernie advance` runs
    stops: int = 1  # operator `lernie stop` calls
    scans: int = 1  # operator `lernie scan` calls
    crashes: int = 1  # process deaths (crash class)
    tools: int = 1  # model tool steps with no protocol effect
    sends: int = 1  # model `message` / `dispatch` tool calls
    exhaust: int = 1  # budget-exhausted events
    max_procs: int = 3  # live processes at once
    max_seq: int = 3  # deposit numbers (upstream numbering only; beyond: out of scope)
    launch_cap: int = 1  # pending launches per agent (more coalesce)
    errors: int = 0  # hop errors (a failing model adapter, R-STEP-5)
    message_to: tuple[int, ...] = ()  # agents the operator may message (empty: any)
    split_commit: bool = False  # an executor entry's rename and commit as two steps
    split_mark: bool = False  # an executor's result and its returned mark as two steps


class File(NamedTuple):
    """A pending deposit `<sender>-<n>.md` of a given kind (R-DEP-1)."""

    sender: int
    n: int
    kind: str


class Dep(NamedTuple):
    """A published deposit not yet committed by its recipient (I-5)."""

    recipient: int
    sender: int
    kind: str


_NO_AGENT_HISTORY: Ghost[AgentHistory] = Ghost(AgentHistory())
_NO_PROC_HISTORY: Ghost[ProcHistory] = Ghost(ProcHistory())


class Agent(NamedTuple):
    exists: bool
    inbox: tuple[File, ...] = ()
    last_prompter: int = NOBODY  # R-ADDR-2
    answered: bool = False  # some terminal response exists (R-DEBT-4)
    asked_since_answer: bool = False  # something asking delivered since the newest terminal
    owed_at_answer: bool = False  # the newest terminal response's window asked (R-DEBT-2)
    call_due: bool = False  # last wire message on the user/tool side (R-STEP-3)
    window: Window = Window.CLOSED
    uncommitted: tuple[Dep, ...] = ()  # moved into messages/, not committed
    returned_at_tip: bool = False  # refs/lernie/returned/<id> is at the tip (R-DEP-8)
    parked_at_tip: bool = False  # a stopped / budget-exhausted mark is at the tip
    pending_launches: int = 0  # spawned drivers not yet started (R-LAUNCH-1)
    forked_holder: bool = False  # a forked child still holds the lock (bl-7318 only)
    stray_final: bool = False  # a terminal model entry renamed into messages/, not committed
    stray_step: bool = False  # a tool-calling model entry or a tool result renamed, not committed
    revivals: int = 0  # the scan's revivals at the current tip (R-SCAN-10 crash-loop guard)
    published_at_tip: bool = False  # a result carrying the tip was published (R-SCAN-11)
    history: Ghost[AgentHistory] = _NO_AGENT_HISTORY


class Proc(NamedTuple):
    role: Role
    agent: int  # driven agent (driver) or target (writer)
    pc: Pc
    lease: bool = False  # holds its own agent's executor lock
    probe_on: int = NOBODY  # agent whose lock a probe holds for an instant
    target: int = NOBODY  # deposit / probe target
    sender: int = NOBODY
    deposit_kind: str = PLAIN  # kind of the deposit being written
    number: int = 0  # number chosen at list time (R-DEP-2)
    listing: tuple[tuple[int, int], ...] = ()  # drain listing: names (R-DRAIN-3)
    epitaph: str = ""  # terminal event of this hop
    recipient: int = NOBODY  # its recipient (R-ADDR)
    stop_flag: bool = False  # SIGTERM seen
    tool: str = ""  # "noop", "message", "dispatch"
    recovered_final: bool = False  # its stray recovery committed a terminal entry (R-DRAIN-8)
    history: Ghost[ProcHistory] = _NO_PROC_HISTORY


class Budget(NamedTuple):
    messages: int
    advances: int
    stops: int
    scans: int
    crashes: int
    tools: int
    sends: int
    exhaust: int
    errors: int


class State(NamedTuple):
    agents: tuple[Agent, ...]
    procs: tuple[Proc, ...]
    in_flight: tuple[Dep, ...]  # sorted multiset of published, uncommitted deposits
    budget: Budget


class Step(NamedTuple):
    """One edge: the rule it models, who acted, what happened, and what kind of
    step it is (`action`), which drivers it launched and why (`launched`,
    `funding`), and the further rules its decision applied (`also`)."""

    rule: str
    actor: int  # index into the pre-state's procs; -1 for an external input
    text: str
    action: Action
    external: bool = False
    launched: tuple[int, ...] = ()
    funding: Funding | None = None
    also: tuple[str, ...] = ()
    target: int = -2  # the agent a probe or an operator's `lernie stop` names, else NOBODY


Succ = list[tuple[Step, State]]

# The records the transitions build on every step, as `Final` names: the compiled model
# reads a `Final` name from a C static, where a class's own name is looked up in the
# module's dictionary each time a record is built.
_AGENT: Final = Agent
_PROC: Final = Proc
_STATE: Final = State
_BUDGET: Final = Budget
_STEP: Final = Step
_AGENT_HISTORY: Final = AgentHistory
_PROC_HISTORY: Final = ProcHistory
_DEATH: Final = Death
_ENTRY: Final = Entry
_DEP: Final = Dep
_FILE: Final = File
_PUBLICATION: Final = Publication
# records that every step of their kind builds alike, built once
_FINAL_ENTRY: Final = Entry(EntryKind.MODEL)  # a model entry without a tool use
_STEP_ENTRY: Final = Entry(EntryKind.MODEL, tool_uses=1)
_TOOL_RESULT_ENTRY: Final = Entry(EntryKind.TOOL_RESULT)
_DRIVER_AT_START: Final = Proc(Role.DRIVER, NOBODY, Pc.START, lease=True)  # its agent set


def _step(rule: str, actor: int, text: str, action: Action, external: bool = False,
          launched: tuple[int, ...] = (), funding: Funding | None = None,
          also: tuple[str, ...] = (), target: int = NOBODY) -> Step:
    """`Step(...)` as the transitions build one on every edge: the same fields and
    defaults, without NamedTuple's generated `__new__` (Python code even in the compiled
    model, and slowest with keywords). tests/model/test_explore.py checks it agrees."""
    return _new(_STEP, (rule, actor, text, action, external, launched, funding, also,
                       target))


def _fast_replace(cls: type[tuple[Any, ...]]) -> Callable[..., Any]:
    """`_replace` for a record the transitions copy on every step: the same
    result as NamedTuple's, without its generic keyword machinery."""
    index = {f: k for k, f in enumerate(cls._fields)}  # type: ignore[attr-defined]
    new = tuple.__new__

    def _replace(self: tuple[Any, ...], **kw: Any) -> Any:
        v = list(self)
        for f, x in kw.items():
            v[index[f]] = x
        return new(cls, v)

    return _replace


for _cls in (Agent, Proc, State, Budget, Step, AgentHistory, ProcHistory):
    setattr(_cls, "_replace", _fast_replace(_cls))  # noqa: B010 (a method mypy keeps typed)

# A record copied with some fields replaced, as the transitions do on every step: one
# function per record with every field as an optional keyword (None: keep), so that a
# field's name and type are checked where it is written, and the compiled model makes a
# direct call that builds the new record at once (NamedTuple's `_replace` is a method
# call with a dictionary of keywords: it took a seventh of the explorer's time). A kept
# field is read through `v`, the record as a plain tuple of objects, so that the compiled
# model passes it on as stored instead of unboxing an int or a bool and boxing it again.
# tests/model/test_explore.py checks each takes exactly its record's fields, in order.

def agent_with(
        ag: Agent, *,
        exists: bool | None = None,
        inbox: tuple[File, ...] | None = None,
        last_prompter: int | None = None,
        answered: bool | None = None,
        asked_since_answer: bool | None = None,
        owed_at_answer: bool | None = None,
        call_due: bool | None = None,
        window: Window | None = None,
        uncommitted: tuple[Dep, ...] | None = None,
        returned_at_tip: bool | None = None,
        parked_at_tip: bool | None = None,
        pending_launches: int | None = None,
        forked_holder: bool | None = None,
        stray_final: bool | None = None,
        stray_step: bool | None = None,
        revivals: int | None = None,
        published_at_tip: bool | None = None,
        history: Ghost[AgentHistory] | None = None,
) -> Agent:
    v: tuple[object, ...] = ag
    return _new(_AGENT, (
        v[0] if exists is None else exists,
        v[1] if inbox is None else inbox,
        v[2] if last_prompter is None else last_prompter,
        v[3] if answered is None else answered,
        v[4] if asked_since_answer is None else asked_since_answer,
        v[5] if owed_at_answer is None else owed_at_answer,
        v[6] if call_due is None else call_due,
        v[7] if window is None else window,
        v[8] if uncommitted is None else uncommitted,
        v[9] if returned_at_tip is None else returned_at_tip,
        v[10] if parked_at_tip is None else parked_at_tip,
        v[11] if pending_launches is None else pending_launches,
        v[12] if forked_holder is None else forked_holder,
        v[13] if stray_final is None else stray_final,
        v[14] if stray_step is None else stray_step,
        v[15] if revivals is None else revivals,
        v[16] if published_at_tip is None else published_at_tip,
        v[17] if history is None else history,
    ))

def proc_with(
        p: Proc, *,
        role: Role | None = None,
        agent: int | None = None,
        pc: Pc | None = None,
        lease: bool | None = None,
        probe_on: int | None = None,
        target: int | None = None,
        sender: int | None = None,
        deposit_kind: str | None = None,
        number: int | None = None,
        listing: tuple[tuple[int, int], ...] | None = None,
        epitaph: str | None = None,
        recipient: int | None = None,
        stop_flag: bool | None = None,
        tool: str | None = None,
        recovered_final: bool | None = None,
        history: Ghost[ProcHistory] | None = None,
) -> Proc:
    v: tuple[object, ...] = p
    return _new(_PROC, (
        v[0] if role is None else role,
        v[1] if agent is None else agent,
        v[2] if pc is None else pc,
        v[3] if lease is None else lease,
        v[4] if probe_on is None else probe_on,
        v[5] if target is None else target,
        v[6] if sender is None else sender,
        v[7] if deposit_kind is None else deposit_kind,
        v[8] if number is None else number,
        v[9] if listing is None else listing,
        v[10] if epitaph is None else epitaph,
        v[11] if recipient is None else recipient,
        v[12] if stop_flag is None else stop_flag,
        v[13] if tool is None else tool,
        v[14] if recovered_final is None else recovered_final,
        v[15] if history is None else history,
    ))

def state_with(
        st: State, *,
        agents: tuple[Agent, ...] | None = None,
        procs: tuple[Proc, ...] | None = None,
        in_flight: tuple[Dep, ...] | None = None,
        budget: Budget | None = None,
) -> State:
    v: tuple[object, ...] = st
    return _new(_STATE, (
        v[0] if agents is None else agents,
        v[1] if procs is None else procs,
        v[2] if in_flight is None else in_flight,
        v[3] if budget is None else budget,
    ))

def budget_with(
        b: Budget, *,
        messages: int | None = None,
        advances: int | None = None,
        stops: int | None = None,
        scans: int | None = None,
        crashes: int | None = None,
        tools: int | None = None,
        sends: int | None = None,
        exhaust: int | None = None,
        errors: int | None = None,
) -> Budget:
    v: tuple[object, ...] = b
    return _new(_BUDGET, (
        v[0] if messages is None else messages,
        v[1] if advances is None else advances,
        v[2] if stops is None else stops,
        v[3] if scans is None else scans,
        v[4] if crashes is None else crashes,
        v[5] if tools is None else tools,
        v[6] if sends is None else sends,
        v[7] if exhaust is None else exhaust,
        v[8] if errors is None else errors,
    ))


NAMES: Final = ("P", "C", "S", "G")


def name(i: int) -> str:
    return "user" if i == USER else "-" if i == NOBODY else NAMES[i]


def initial(scope: Scope) -> State:
    born = Ghost(AgentHistory(commits=1))  # the creation commit
    agents = tuple(Agent(exists=e, history=born if e else _NO_AGENT_HISTORY)
                   for e in scope.initial)
    b = Budget(scope.messages, scope.advances, scope.stops, scope.scans, scope.crashes,
               scope.tools, scope.sends, scope.exhaust, scope.errors)
    return State(agents, (), (), b)


# ---------------------------------------------------------------- helpers


def parent_of(scope: Scope, a: int) -> int:
    """R-ID-1: the dispatcher, NOBODY for a root (fixed by the scope's tree)."""
    return scope.parents[a] if a >= 0 else NOBODY


def locked(st: State, a: int) -> bool:
    """R-LOCK-1: is agent a's executor lock held by anyone?"""
    if st.agents[a].forked_holder:
        return True
    return any((p.lease and p.agent == a) or p.probe_on == a for p in st.procs)


def own_child_result(scope: Scope, a: int, f: File) -> bool:
    """R-DEP-10: a result whose sender's parent is a."""
    return f.kind != PLAIN and f.sender >= 0 and scope.parents[f.sender] == a


def warrants(f: File) -> bool:
    """R-REL-2: a deposit warrants a launch unless it is a parked obituary."""
    return f.kind not in PARKED


def _set_agent(st: State, a: int, ag: Agent) -> tuple[Agent, ...]:
    agents = list(st.agents)
    agents[a] = ag
    return tuple(agents)


def _put(st: State, i: int, p: Proc | None, agents: tuple[Agent, ...] | None = None,
         in_flight: tuple[Dep, ...] | None = None, budget: Budget | None = None) -> State:
    """Replace process i (remove it when p is None or has finished)."""
    procs = list(st.procs)
    if p is not None and p.pc is not Pc.DONE:
        procs[i] = p
    else:
        del procs[i]
    # State(...) without NamedTuple's generated `__new__` (Python code even in the
    # compiled model, and run on almost every step): the same four fields, in order
    return _new(_STATE, (st.agents if agents is None else agents, tuple(procs),
                        st.in_flight if in_flight is None else in_flight,
                        st.budget if budget is None else budget))


def _launch(st: State, scope: Scope, a: int) -> tuple[Agent, ...]:
    ag = st.agents[a]
    return _set_agent(st, a, agent_with(ag,
        pending_launches=min(scope.launch_cap, ag.pending_launches + 1)))


def _flight_add(deps: tuple[Dep, ...], d: Dep) -> tuple[Dep, ...]:
    return tuple(sorted((*deps, d)))


def _flight_remove(deps: tuple[Dep, ...], d: Dep) -> tuple[Dep, ...]:
    g = list(deps)
    g.remove(d)
    return tuple(g)


# ------------------------------------------------------------ ghost history
# Written by the transitions, read only by the invariants and the coverage.


# The ghost history is written on almost every step: `_ah` and `_ph` copy an agent's or
# a process's history with the named fields replaced, in one typed call (as `agent_with`
# above, whose note says why), for `agent_with(ag, ..., history=_ah(ag, ...))`: the
# record and its history are copied once, whatever else the step changes in the record.

def _ah(
        ag: Agent, *,
        entries: tuple[Entry, ...] | None = None,
        commits: int | None = None,
        results: tuple[Publication, ...] | None = None,
        parked_at: int | None = None,
        unsynced: bool | None = None,
        revived_at: tuple[int, ...] | None = None,
        parkings: tuple[int, ...] | None = None,
        marked_at: int | None = None,
        serials: tuple[int, ...] | None = None,
        received: int | None = None,
        deaths: tuple[Death, ...] | None = None,
        leases: tuple[str, ...] | None = None,
) -> Ghost[AgentHistory]:
    h: tuple[object, ...] = ag.history.value
    return Ghost(_new(_AGENT_HISTORY, (
        h[0] if entries is None else entries,
        h[1] if commits is None else commits,
        h[2] if results is None else results,
        h[3] if parked_at is None else parked_at,
        h[4] if unsynced is None else unsynced,
        h[5] if revived_at is None else revived_at,
        h[6] if parkings is None else parkings,
        h[7] if marked_at is None else marked_at,
        h[8] if serials is None else serials,
        h[9] if received is None else received,
        h[10] if deaths is None else deaths,
        h[11] if leases is None else leases,
    )))

def _ph(
        p: Proc, *,
        published: tuple[tuple[int, str], ...] | None = None,
        woke: tuple[int, ...] | None = None,
        stop_requests: tuple[int, ...] | None = None,
        launched: tuple[tuple[int, Funding], ...] | None = None,
        committed_final: int | None = None,
        parked_event: bool | None = None,
        released: bool | None = None,
        reread_saw: tuple[File, ...] | None = None,
        listing: tuple[File, ...] | None = None,
        moved: tuple[File, ...] | None = None,
) -> Ghost[ProcHistory]:
    h: tuple[object, ...] = p.history.value
    return Ghost(_new(_PROC_HISTORY, (
        h[0] if published is None else published,
        h[1] if woke is None else woke,
        h[2] if stop_requests is None else stop_requests,
        h[3] if launched is None else launched,
        h[4] if committed_final is None else committed_final,
        h[5] if parked_event is None else parked_event,
        h[6] if released is None else released,
        h[7] if reread_saw is None else reread_saw,
        h[8] if listing is None else listing,
        h[9] if moved is None else moved,
    )))


def _noted_entry(ag: Agent, e: Entry) -> Agent:
    return agent_with(ag, history=_ah(ag, entries=(*ag.history.value.entries, e)))


def _noted_commit(ag: Agent) -> Agent:
    return agent_with(ag, history=_ah(ag, commits=ag.history.value.commits + 1))


def _noted_launch(p: Proc, a: int, why: Funding) -> tuple[tuple[int, Funding], ...]:
    """p's history of launches with one more (for `_ph(p, launched=...)`)."""
    return (*p.history.value.launched, (a, why))


def _committed(ag: Agent) -> Agent:
    """Every commit moves the tip: no mark is at the tip any more (R-DEP-8, R-WS-5),
    and the crash-loop guard's count restarts (R-SCAN-10)."""
    ag = agent_with(ag, returned_at_tip=False, parked_at_tip=False, revivals=0,
                     published_at_tip=False)
    return _noted_commit(ag)


def _marked(ag: Agent) -> Agent:
    """R-DEP-8: the returned mark moves to the tip (ghost: the tip it was set to)."""
    return agent_with(ag, returned_at_tip=True, history=_ah(ag, marked_at=ag.history.value.commits))


def _received(ag: Agent, f: File, replaced: File | None = None) -> Agent:
    """File f lands in ag's inbox, after every file pending there: the inbox is in
    publication order, which is (mtime, name) order because a deposit is stamped at its
    publication (R-DEP-12) (ghost: its publication serial, R-DEP-6)."""
    h = ag.history.value
    serials = h.serials
    inbox = ag.inbox
    if replaced is not None:
        k = inbox.index(replaced)
        inbox = inbox[:k] + inbox[k + 1:]
        serials = serials[:k] + serials[k + 1:]
    return agent_with(ag, inbox=(*inbox, f),
                      history=_ah(ag, serials=(*serials, h.received), received=h.received + 1))


def _taken(ag: Agent, f: File) -> Agent:
    """File f leaves ag's inbox (moved into `messages/`)."""
    k = ag.inbox.index(f)
    h = ag.history.value
    return agent_with(ag, inbox=ag.inbox[:k] + ag.inbox[k + 1:],
                      history=_ah(ag, serials=h.serials[:k] + h.serials[k + 1:]))


def _noted_death(agents: tuple[Agent, ...], p: Proc) -> tuple[Agent, ...]:
    """Ghost of a process death or error exit: every agent records it, with the files
    pending in its inbox; the agent whose lease it held records a lease lost."""
    h = p.history.value
    out = []
    for a, ag in enumerate(agents):
        if ag.exists:
            ah = ag.history.value
            # Death(...) without NamedTuple's generated constructor (as `_step`): a crash
            # is a successor of every process of almost every state
            d = _new(_DEATH, (p.role, p.agent, h.published, h.woke, ah.serials))
            leases = (*ah.leases, "lost") if p.lease and p.agent == a else ah.leases
            ag = agent_with(ag, history=_ah(ag, deaths=(*ah.deaths, d), leases=leases))
        out.append(ag)
    return tuple(out)


# ------------------------------------------------------- transcript effects


def recipient_final(prof: Profile, scope: Scope, ag: Agent, a: int) -> int:
    """R-ADDR-3 with R-DEBT-4: where a final response is deposited."""
    if prof.reply_debt and not ag.owed_at_answer:
        return NOBODY
    if prof.reply_to_parent:
        return parent_of(scope, a)
    if ag.last_prompter == USER:
        return NOBODY
    return parent_of(scope, a) if ag.last_prompter == NOBODY else ag.last_prompter


def _delivered(scope: Scope, ag: Agent, a: int, d: Dep) -> Agent:
    """The abstract transcript after one delivered `.md` entry (R-DRAIN-4):
    one reading (R-DEBT-1) updates the last prompter (R-ADDR-2) and whether
    the entry asks for a reply (R-DEBT-3)."""
    plain = d.kind == PLAIN
    asks = d.sender != a and (plain or (d.sender >= 0 and scope.parents[d.sender] == a))
    ag = agent_with(ag,
        call_due=True,
        window=Window.BURIED if ag.window is Window.OPEN else ag.window,
        last_prompter=d.sender if plain and d.sender != a else ag.last_prompter,
        asked_since_answer=ag.asked_since_answer or asks,
        uncommitted=(*ag.uncommitted, d),
    )
    return _noted_entry(ag, _new(_ENTRY, (EntryKind.DELIVERED, d.sender, d.kind, 0)))


def _terminal(ag: Agent, renamed_only: bool = False) -> Agent:
    """A terminal response closes the debt window (R-DEBT-2). Committed with it, or
    (`renamed_only`) just renamed into `messages/`: its commit is a later step, and
    until then the tip (and so every mark at it) stays where it was."""
    ag = agent_with(ag, call_due=False, owed_at_answer=(not ag.answered) or ag.asked_since_answer,
                     answered=True, asked_since_answer=False)
    ag = _noted_entry(ag, _FINAL_ENTRY)
    if renamed_only:
        return agent_with(ag, stray_final=True, history=_ah(ag, unsynced=True))
    return _committed(ag)


def _executor_entry(ag: Agent, e: Entry, renamed_only: bool) -> Agent:
    """A tool-calling model entry or a tool result (R-TR-3): committed with its rename,
    or (`renamed_only`) left in `messages/` for a later commit (`commit_step`, or the
    next hop's stray recovery, R-DRAIN-2, when its driver dies first)."""
    ag = _noted_entry(ag, e)
    return agent_with(ag, stray_step=True) if renamed_only else _committed(ag)


# ------------------------------------------------------------ transitions
# Each returns the successors of process i (or of an external input).


def ext_message(st: State, prof: Profile, scope: Scope) -> Succ:
    """R-PROBE-4 `lernie message` by the operator (sender `user`, R-ID-7):
    the existence guard (R-ID-4, I-17) admits only existing agents; the
    writer lists the inbox and takes its number (R-DEP-2) as its first step.
    Roots exist from the start, so `lernie prompt` (R-PROBE-5) is this too."""
    out: Succ = []
    b = st.budget
    if b.messages == 0 or len(st.procs) >= scope.max_procs:
        return out
    for a, ag in enumerate(st.agents):
        n = _number(prof, ag, USER)
        if ag.exists and n <= scope.max_seq and (not scope.message_to or a in scope.message_to):
            w = Proc(Role.WRITER, a, Pc.PUBLISH_MESSAGE, target=a, sender=USER, number=n)
            s = state_with(st, procs=(*st.procs, w), budget=budget_with(b, messages=b.messages - 1))
            out.append((_step("R-PROBE-4", -1, f"user: lernie message {name(a)}",
                             Action.OPERATOR_MESSAGE, True,
                             also=("R-ID-4", "R-ID-7", "R-PROBE-5", "R-DEP-2")), s))
    return out


def _number(prof: Profile, ag: Agent, sender: int) -> int:
    """R-DEP-2: one more than the sender's largest pending number. With
    create-only publication (R-DEP-6) a number carries nothing but uniqueness,
    so the model lets the publish step take the smallest free one instead
    (keeps the state space finite); the listed number is then 0."""
    if prof.create_only:
        return 0
    return 1 + max((f.n for f in ag.inbox if f.sender == sender), default=0)


def _free(ag: Agent, sender: int) -> int:
    taken = {f.n for f in ag.inbox if f.sender == sender}
    n = 1
    while n in taken:
        n += 1
    return n


def deposit_list(st: State, prof: Profile, scope: Scope, i: int, nxt: Pc) -> Succ:
    """R-DEP-2 list the inbox and take the next number (temp write folded in).
    For a `dispatch` tool (R-PROBE-6) this step first forks the child's branch
    with an empty transcript (R-WS-3, R-WS-4)."""
    p = st.procs[i]
    ags = st.agents
    also: tuple[str, ...] = ()
    if p.tool == "dispatch" and not ags[p.target].exists:
        # R-PROBE-6 / R-WS-4: fork the child's branch with an empty transcript
        ags = _set_agent(st, p.target, Agent(exists=True, history=Ghost(AgentHistory(commits=1))))
        also = ("R-PROBE-6", "R-WS-3", "R-WS-4")
    q = proc_with(p, pc=nxt, number=_number(prof, ags[p.target], p.sender))
    if q.number > scope.max_seq:
        return []
    text = f"list {name(p.target)} inbox" + (f": n={q.number}" if q.number else "")
    return [(_step("R-DEP-2", i, text, Action.LIST_FOR_DEPOSIT, also=also),
             _put(st, i, q, agents=ags))]


def deposit_publish(st: State, prof: Profile, scope: Scope, i: int, nxt: Pc) -> Succ:
    """R-DEP-1/R-DEP-6 publish under `<sender>-<n>.md`: create-only (a taken
    name takes the next number) or, upstream, a rename that replaces; stamped at
    publication, the file goes after every one pending (R-DEP-12). A result
    moves the returned mark to the tip with it (R-DEP-8). Every writer's program
    publishes before it probes (R-PROBE-2)."""
    p = st.procs[i]
    ag = st.agents[p.target]
    n = p.number
    note = ""
    old = None
    if prof.create_only:
        n = _free(ag, p.sender)
    else:
        old = next((f for f in ag.inbox if (f.sender, f.n) == (p.sender, n)), None)
        note = " REPLACING the file there" if old is not None else ""
    f = _new(_FILE, (p.sender, n, p.deposit_kind))
    agents = _set_agent(st, p.target, _received(ag, f, old))
    also: tuple[str, ...] = ("R-DEP-1", "R-DEP-12", "R-PROBE-2")
    split = False
    if p.deposit_kind != PLAIN and p.sender >= 0:  # R-DEP-8 returned mark
        c = p.sender
        split = scope.split_mark
        author = agent_with(agents[c], published_at_tip=True)
        author = author if split else _marked(author)
        h = author.history.value
        author = agent_with(author, history=_ah(author, results=(*h.results, _new(_PUBLICATION, (
            p.target, p.deposit_kind, h.commits, False, len(h.entries))))))
        agents = (*agents[:c], author, *agents[c + 1 :])
        also += () if split else ("R-DEP-8",)
        if split:  # R-DEP-8 as its own step (R-SCAN-11: a kill may land between)
            nxt = Pc.RESULT_MARK if nxt is Pc.RELEASE_LEASE else Pc.LOST_MARK
    in_flight = _flight_add(st.in_flight, _new(_DEP, (p.target, p.sender, p.deposit_kind)))
    kind = "" if p.deposit_kind == PLAIN else f" [{p.deposit_kind}]"
    text = f"publish {name(p.target)}/{name(p.sender)}-{n:03d}{kind}{note}"
    q = proc_with(p, pc=nxt, number=0, deposit_kind=PLAIN, history=_ph(
        p, published=(*p.history.value.published, (p.target, p.deposit_kind))))
    return [(_step("R-DEP-6", i, text, Action.PUBLISH, also=also),
             _put(st, i, q, agents=agents, in_flight=in_flight))]


def probe_acquire(st: State, prof: Profile, scope: Scope, i: int, nxt: Pc, busy: Pc) -> Succ:
    """R-PROBE-1 try-acquire the target's lock; busy means someone drives it."""
    p = st.procs[i]
    if locked(st, p.target):
        q = proc_with(p, pc=busy, history=_ph(p, woke=(*p.history.value.woke, p.target)))
        return [(_step("R-PROBE-1", i, f"probe {name(p.target)}: BUSY", Action.PROBE,
                      also=("R-LOCK-1",), target=p.target), _put(st, i, q))]
    return [(_step("R-PROBE-1", i, f"probe {name(p.target)}: acquired", Action.PROBE,
                  also=("R-LOCK-1",), target=p.target),
             _put(st, i, proc_with(p, pc=nxt, probe_on=p.target)))]


def probe_release_launch(st: State, prof: Profile, scope: Scope, i: int, nxt: Pc,
                         why: Funding = Funding.WRITER_DEPOSIT) -> Succ:
    """R-LAUNCH-1 (with R-PROBE-1): release the probe's lock first, then launch;
    the writer held the lock for this one step only (R-PROBE-3)."""
    p = st.procs[i]
    t = p.target
    q = proc_with(p, pc=nxt, probe_on=NOBODY, history=_ph(
        p, launched=_noted_launch(p, t, why), woke=(*p.history.value.woke, t)))
    s = _put(st, i, q, agents=_launch(st, scope, t))
    return [(_step("R-LAUNCH-1", i, f"release {name(t)}, launch driver",
                  Action.PROBE_RELEASE_LAUNCH, launched=(t,), funding=why,
                  also=("R-PROBE-3",)), s)]


def ext_advance(st: State, prof: Profile, scope: Scope) -> Succ:
    """R-STEP-1 an operator's hand-run `lernie advance` (I-8: operator)."""
    b = st.budget
    if b.advances == 0:
        return []
    out: Succ = []
    s = state_with(st, budget=budget_with(b, advances=b.advances - 1))
    for a, ag in enumerate(st.agents):
        if ag.exists and len(st.procs) < scope.max_procs:
            for step, s2 in _start(s, prof, scope, a, "operator: lernie advance"):
                out.append((step._replace(external=True, action=Action.OPERATOR_ADVANCE), s2))
    return out


def start_driver(st: State, prof: Profile, scope: Scope, a: int) -> Succ:
    """R-STEP-1 a launched driver starts: try-acquire the lease or exit 0."""
    ag = st.agents[a]
    s = state_with(st, agents=_set_agent(st, a, agent_with(ag,
        pending_launches=ag.pending_launches - 1)))
    return _start(s, prof, scope, a, "launched driver")


def _start(st: State, prof: Profile, scope: Scope, a: int, who: str) -> Succ:
    """R-STEP-1 take the lease with a try-acquire, or exit 0 as already driven; with
    the lease, R-SCAN-11 repairs a returned mark a kill left behind."""
    if locked(st, a):
        return [(_step("R-STEP-1", -1, f"{who} {name(a)}: busy, exit 0", Action.DRIVER_START), st)]
    d = proc_with(_DRIVER_AT_START, agent=a)
    ag = st.agents[a]
    ag = agent_with(ag, history=_ah(ag, leases=(*ag.history.value.leases, "taken")))
    s = state_with(st, procs=(*st.procs, d), agents=_set_agent(st, a, ag))
    also: tuple[str, ...] = ()
    if ag.published_at_tip and not ag.returned_at_tip:
        # R-SCAN-11: a returned mark a kill left behind is repaired by the next holder
        # before anything moves the tip (taken with the lease: nobody else can look)
        s = state_with(s, agents=_set_agent(s, a, _marked(ag)))
        also = ("R-SCAN-11",)
    i = len(s.procs) - 1
    text = f"{who} {name(a)}: lease taken" + ("; returned mark repaired" if also else "")
    return [(_step("R-STEP-1", -1, text, Action.DRIVER_START, also=also),
             _put(s, i, _hop_start(s, prof, scope, d)))]


def mark_returned(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-DEP-8 (`Scope.split_mark`): after the result landed, its author's returned mark
    moves to the tip the result carries; then the exit protocol (or the drain) goes on."""
    p = st.procs[i]
    c = p.sender if p.pc is Pc.LOST_MARK else p.agent
    s = state_with(st, agents=_set_agent(st, c, _marked(st.agents[c])))
    nxt = Pc.RELEASE_LEASE if p.pc is Pc.RESULT_MARK else Pc.LOST_PROBE
    return [(_step("R-DEP-8", i, f"move {name(c)}'s returned mark to its tip",
                  Action.MARK_RETURNED), _put(s, i, proc_with(p, pc=nxt)))]


def _hop_start(st: State, prof: Profile, scope: Scope, p: Proc) -> Proc:
    """Where a hop begins its work, in lernie_ref's order: R-DRAIN-2 recover
    strays, then R-STEP-2 settle a crashed tool window, then R-DRAIN-8 send a
    lost reply, then R-DRAIN-3 list."""
    ag = st.agents[p.agent]
    if (ag.uncommitted or ag.stray_final or ag.stray_step) and prof.stray_recovery:
        return proc_with(p, pc=Pc.RECOVER_STRAYS)
    if ag.window is Window.OPEN and prof.crash_settlement:
        return proc_with(p, pc=Pc.SETTLE_WINDOW)
    to = lost_reply(st, prof, scope, p.agent)
    if to != NOBODY:
        return proc_with(p, pc=Pc.LOST_LIST, target=to, sender=p.agent, deposit_kind=FINAL,
                          recovered_final=False)
    return proc_with(p, pc=Pc.LIST_INBOX)


def lost_reply(st: State, prof: Profile, scope: Scope, a: int) -> int:
    """R-DRAIN-8 (and R-SCAN-9's test): the recipient of a final response whose
    reply never left: the newest entry is a committed terminal response, the
    returned mark is not at the tip, and a reply is owed to an existing agent
    (R-ADDR-3, R-DEBT-4). NOBODY when there is none."""
    ag = st.agents[a]
    if (ag.returned_at_tip or ag.published_at_tip or not ag.answered or ag.call_due
            or ag.window is not Window.CLOSED or ag.uncommitted or ag.stray_final):
        return NOBODY
    to = recipient_final(prof, scope, ag, a)
    return to if to != NOBODY and st.agents[to].exists else NOBODY


def recover_stray(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-DRAIN-2 commit uncommitted `messages/` entries before any move: delivered
    ones, or an executor's entry whose driver died between its rename and its commit.
    A terminal entry among them leaves the rest of its exit protocol to this hop
    (R-DRAIN-8)."""
    p = st.procs[i]
    ag = st.agents[p.agent]
    in_flight = st.in_flight
    for d in ag.uncommitted:
        in_flight = _flight_remove(in_flight, d)
    ag2 = _committed(agent_with(ag, uncommitted=(), stray_final=False, stray_step=False))
    also: tuple[str, ...] = ()
    if ag.stray_final:
        ag2 = agent_with(ag2, history=_ah(ag2, unsynced=False))
        p = proc_with(p, recovered_final=True)
        also = ("R-DRAIN-8",)
    s = state_with(st, agents=_set_agent(st, p.agent, ag2), in_flight=in_flight)
    text = ("commit terminal stray" if ag.stray_final else
            "commit executor stray" if ag.stray_step else "commit delivered stray")
    return [(_step("R-DRAIN-2", i, text, Action.RECOVER_STRAYS, also=also),
             _put(s, i, _hop_start(s, prof, scope, p)))]


def lost_list(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-DRAIN-8 a lost reply leaves before the drain: list the recipient's inbox
    (then publish it, R-DEP-8 moving the mark, and probe-and-launch the recipient)."""
    return [(step._replace(also=(*step.also, "R-DRAIN-8")), s)
            for step, s in deposit_list(st, prof, scope, i, Pc.LOST_PUBLISH)]


def _drain_next(out: Succ, i: int) -> Succ:
    res = []
    for step, s in out:
        if i < len(s.procs) and s.procs[i].pc is Pc.LIST_INBOX:
            s = _put(s, i, proc_with(s.procs[i], target=NOBODY, sender=NOBODY))
        res.append((step, s))
    return res


def lost_probe(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-DRAIN-8 probe the lost reply's recipient (R-PROBE-1); busy: drain on."""
    return _drain_next(probe_acquire(st, prof, scope, i, Pc.LOST_LAUNCH, Pc.LIST_INBOX), i)


def lost_launch(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-DRAIN-8 release the probe and launch the recipient, then drain on."""
    return _drain_next(probe_release_launch(st, prof, scope, i, Pc.LIST_INBOX), i)


def settle_window(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-STEP-2 settle a trailing orphan tool window with is_error results (renamed,
    then committed: one step, or two under `Scope.split_commit`). A call whose
    executor died mid-call is settled `died` here; its tool's leftover processes
    are killed first (R-TOOL-7: processes are not protocol state, so that is all)."""
    p = st.procs[i]
    ag = agent_with(st.agents[p.agent], window=Window.CLOSED, call_due=True)
    ag = _executor_entry(ag, _TOOL_RESULT_ENTRY, scope.split_commit)
    s = state_with(st, agents=_set_agent(st, p.agent, ag))
    q = proc_with(p, pc=Pc.COMMIT_STEP) if scope.split_commit else _hop_start(s, prof, scope, p)
    return [(_step("R-STEP-2", i, "settle orphan tool_use", Action.SETTLE_WINDOW,
                  also=("R-TOOL-7",)), _put(s, i, q))]


def drain_list(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-DRAIN-3 list the pending deposits once (R-DEP-11), at the hop's step
    boundary only (R-DRAIN-1); plain mail first, then own-child results
    (R-DRAIN-4, R-DEP-10), each in mtime order."""
    p = st.procs[i]
    a = p.agent
    inbox = st.agents[a].inbox
    plain = [(f.sender, f.n) for f in inbox if not own_child_result(scope, a, f)]
    res = [(f.sender, f.n) for f in inbox if own_child_result(scope, a, f)]
    q = tuple(plain + res)
    p = proc_with(p, history=_ph(p, listing=inbox, moved=()))
    also = ("R-DRAIN-1", "R-DEP-11", "R-STEP-3") + (("R-DEP-10",) if res else ())
    if not q:
        return [(_step("R-DRAIN-3", i, "list inbox: empty", Action.LIST_INBOX, also=also),
                 _put(st, i, _warrant(st, prof, scope, p)))]
    names = ", ".join(f"{name(s)}-{n:03d}" for s, n in q)
    return [(_step("R-DRAIN-3", i, f"list inbox: {names}", Action.LIST_INBOX, also=also),
             _put(st, i, proc_with(p, pc=Pc.MOVE_DEPOSIT, listing=q)))]


def drain_move(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-DRAIN-4 move the next listed file into `messages/` (by name)."""
    p = st.procs[i]
    a = p.agent
    ag = st.agents[a]
    (snd, n), rest = p.listing[0], p.listing[1:]
    f = next((f for f in ag.inbox if (f.sender, f.n) == (snd, n)), None)
    if f is None:  # vanished: nothing to move
        q = proc_with(p, listing=rest)
        q = proc_with(q, pc=Pc.MOVE_DEPOSIT) if rest else _warrant(st, prof, scope, q)
        return [(_step("R-DRAIN-4", i, f"{name(snd)}-{n:03d} gone", Action.MOVE_DEPOSIT),
                 _put(st, i, q))]
    d = _new(_DEP, (a, f.sender, f.kind))
    ag2 = _delivered(scope, _taken(ag, f), a, d)
    s = state_with(st, agents=_set_agent(st, a, ag2))
    kind = "" if f.kind == PLAIN else f" [{f.kind}]"
    q = proc_with(p, pc=Pc.COMMIT_ENTRY, listing=rest,
                  history=_ph(p, moved=(*p.history.value.moved, f)))
    return [(_step("R-DRAIN-4", i, f"move {name(snd)}-{n:03d}{kind} into messages/",
                  Action.MOVE_DEPOSIT, also=("R-ADDR-2", "R-DEBT-1", "R-DEBT-3")),
             _put(s, i, q))]


def commit_entry(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-TR-3 commit the entry just moved, on its own."""
    p = st.procs[i]
    ag = st.agents[p.agent]
    d = ag.uncommitted[-1]
    ag2 = _committed(agent_with(ag, uncommitted=ag.uncommitted[:-1]))
    s = state_with(st, agents=_set_agent(st, p.agent, ag2),
                    in_flight=_flight_remove(st.in_flight, d))
    q = proc_with(p, pc=Pc.MOVE_DEPOSIT) if p.listing else _warrant(s, prof, scope, p)
    return [(_step("R-TR-3", i, f"commit {name(d.sender)} entry", Action.COMMIT_ENTRY),
             _put(s, i, q))]


def _warrant(st: State, prof: Profile, scope: Scope, p: Proc) -> Proc:
    """R-STEP-3 (decided from the transcript alone, folded into the step that
    ends the drain): Unpaired declines, ModelCallDue steps, NothingDue idles."""
    ag = st.agents[p.agent]
    if ag.window is Window.BURIED or (ag.window is Window.OPEN and not prof.crash_settlement):
        return proc_with(p, pc=Pc.DECLINE_UNPAIRED)
    if ag.call_due:
        return proc_with(p, pc=Pc.MODEL_STEP, recovered_final=False)
    if p.recovered_final:
        # R-DRAIN-8: the terminal entry this hop's stray recovery committed had no exit
        # protocol yet and no reply was sent for it: run that protocol now.
        r = recipient_final(prof, scope, ag, p.agent)
        r = r if r != NOBODY and st.agents[r].exists else NOBODY
        return proc_with(p, epitaph=FINAL, recipient=r, target=r, sender=p.agent,
                         deposit_kind=FINAL, recovered_final=False,
                         pc=Pc.RESULT_LIST_INBOX if r != NOBODY else Pc.RELEASE_LEASE,
                         history=_ph(p, committed_final=len(ag.history.value.entries) - 1))
    return proc_with(p, pc=Pc.RELEASE_LEASE)


def decline(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-STEP-5 an error exit: release by LOCK_UN, no release rule, no launch."""
    return [(_step("R-STEP-5", i, "Unpaired tool_use: declined, exit 1", Action.DECLINE),
             _put(st, i, None, agents=_noted_death(st.agents, st.procs[i])))]


def model_step(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-STEP-4 stop check, budget check, one model call committed as one entry;
    the call's outcome is a nondeterministic choice (R-STEP-7 tools). A failing
    model adapter is an error exit (R-STEP-5)."""
    p = st.procs[i]
    a = p.agent
    ag = st.agents[a]
    b = st.budget
    out: Succ = []
    if p.stop_flag:
        return _terminate(st, prof, scope, i, STOPPED, "stop flag seen before the call")
    if b.exhaust:
        s = state_with(st, budget=budget_with(b, exhaust=b.exhaust - 1))
        out += _terminate(s, prof, scope, i, BUDGET, "budget check: exhausted")
    if b.errors:
        s = state_with(st, budget=budget_with(b, errors=b.errors - 1))
        out.append((_step("R-STEP-5", i, "model adapter failed: lease released, exit 1",
                         Action.ERROR_EXIT), _put(s, i, None, agents=_noted_death(s.agents, p))))
    # terminal response (text or empty: no decision reads the body). Its rename and
    # its commit are one step unless the scope splits them (`Scope.split_commit`):
    # nothing but a crash of this process can observe the gap (the agent is held, so
    # a scan skips it, and nobody else reads its transcript or marks), so a crash in
    # the gap is the step `_final_then_crash` offers instead (`_step_then_crash` for a
    # tool-calling entry and a tool result, below and in `tool_result`).
    split = scope.split_commit
    ag2 = _terminal(ag, renamed_only=split)
    s = state_with(st, agents=_set_agent(st, a, ag2))
    r = recipient_final(prof, scope, ag2, a)
    after = Pc.RESULT_LIST_INBOX if r != NOBODY else Pc.RELEASE_LEASE
    q = proc_with(p, epitaph=FINAL, recipient=r, target=r, sender=a, deposit_kind=FINAL,
                  pc=Pc.COMMIT_FINAL if split else after,
                  history=_ph(p, committed_final=len(ag2.history.value.entries) - 1))
    out.append((_step("R-TERM-1", i, f"model: terminal response (reply to {name(r)})",
                     Action.MODEL_FINAL, also=("R-ADDR-3", "R-DEBT-2", "R-DEBT-4", "R-STEP-4")),
                _put(s, i, q)))
    if b.crashes and not split:
        out += _final_then_crash(st, prof, scope, i)
    # a tool-calling entry: committed with its rename, or (split) committed by the
    # next step, `commit_step`, which then runs the tool (`_after_commit`)
    tw = _executor_entry(agent_with(ag, call_due=False, window=Window.OPEN),
                         _STEP_ENTRY, split)
    run = Pc.COMMIT_STEP if split else Pc.TOOL_RESULT
    if b.tools:
        s = state_with(st, agents=_set_agent(st, a, tw), budget=budget_with(b, tools=b.tools - 1))
        out.append((_step("R-STEP-7", i, "model: tool_use (no protocol effect)",
                         Action.MODEL_TOOL_USE),
                    _put(s, i, proc_with(p, pc=run, tool="noop"))))
        if b.crashes and not split:
            out += _step_then_crash(s, i, "model: tool_use renamed; CRASH before its commit",
                                    _STEP_ENTRY, agent_with(ag,
                                        call_due=False, window=Window.OPEN))
    run = Pc.COMMIT_STEP if split else Pc.TOOL_LIST_INBOX
    if b.sends:
        s = state_with(st, agents=_set_agent(st, a, tw), budget=budget_with(b, sends=b.sends - 1))
        for t, tag in enumerate(st.agents):
            if tag.exists and t != a:
                q = proc_with(p, pc=run, tool="message", target=t, sender=a,
                               deposit_kind=PLAIN)
                out.append((_step("R-STEP-7", i, f"model: tool_use message {name(t)}",
                                 Action.MODEL_TOOL_USE), _put(s, i, q)))
        for c, par in enumerate(scope.parents):
            if par == a and not st.agents[c].exists:
                q = proc_with(p, pc=run, tool="dispatch", target=c, sender=a,
                               deposit_kind=PLAIN)
                out.append((_step("R-PROBE-6", i, f"model: tool_use dispatch {name(c)}",
                                 Action.MODEL_TOOL_USE, also=("R-STEP-7",)), _put(s, i, q)))
                break
    return out


def _step_then_crash(st: State, i: int, text: str, e: Entry, ag: Agent) -> Succ:
    """R-TR-3 / crash class: an executor's entry `e` (a tool-calling model entry, or a
    tool result) is renamed into `messages/` and its driver dies before the commit: a
    stray the next hop commits first (R-DRAIN-2). The tool never runs. `st` is the
    state the one-step successor reached (its budget charged), `ag` the agent before
    the entry."""
    p = st.procs[i]
    ag = _executor_entry(ag, e, renamed_only=True)
    b = st.budget
    s = _put(st, i, None, agents=_noted_death(_set_agent(st, p.agent, ag), p),
             budget=budget_with(b, crashes=b.crashes - 1))
    return [(_step("CRASH", i, text, Action.CRASH, also=("R-TR-3",)), s)]


def _final_then_crash(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-TR-3 / crash class: the terminal entry is renamed into `messages/` and its
    driver dies before the commit (a terminal stray, R-DRAIN-8, R-SCAN-10)."""
    p = st.procs[i]
    ag = _terminal(st.agents[p.agent], renamed_only=True)
    b = st.budget
    s = _put(st, i, None, agents=_noted_death(_set_agent(st, p.agent, ag), p),
             budget=budget_with(b, crashes=b.crashes - 1))
    return [(_step("CRASH", i, "model: terminal response renamed; CRASH before its commit",
                  Action.CRASH, also=("R-TERM-1",)), s)]


def commit_final(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-TR-3 commit the terminal entry just renamed into `messages/`, then the exit
    protocol (R-TERM-2)."""
    p = st.procs[i]
    ag = _committed(agent_with(st.agents[p.agent], stray_final=False))
    ag = agent_with(ag, history=_ah(ag, unsynced=False))
    s = state_with(st, agents=_set_agent(st, p.agent, ag))
    q = proc_with(p, pc=Pc.RESULT_LIST_INBOX if p.recipient != NOBODY else Pc.RELEASE_LEASE)
    return [(_step("R-TR-3", i, "commit terminal entry", Action.COMMIT_FINAL), _put(s, i, q))]


def commit_step(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-TR-3 (`Scope.split_commit` only) commit the executor's entry just renamed into
    `messages/`: after a tool-calling model entry, its tool runs next (R-STEP-7); after
    a tool result or a settlement, the successor hop begins (R-LOCK-3, R-STEP-2)."""
    p = st.procs[i]
    ag = _committed(agent_with(st.agents[p.agent], stray_step=False))
    s = state_with(st, agents=_set_agent(st, p.agent, ag))
    if p.tool == "noop":
        q = proc_with(p, pc=Pc.TOOL_RESULT)
    elif p.tool:
        q = proc_with(p, pc=Pc.TOOL_LIST_INBOX)
    else:
        q = _hop_start(s, prof, scope, p)
    return [(_step("R-TR-3", i, "commit executor entry", Action.COMMIT_STEP), _put(s, i, q))]


def tool_result(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-LOCK-3 commit the tool result, stop check, then exec the successor hop
    with the lease kept (the baton; adoption R-LOCK-4 is the same process).
    A stop flag seen here ends the step `stopped` (R-TERM-6, R-STOP-6).

    Every work tool's outcome is this one step: success, an error result or a
    timeout (R-TOOL-4) commit one result, the work it did riding in that commit
    (R-TOOL-8); a stop during a call commits its `interrupted:` result and takes
    the stop branch; a crash during the call is the crash class at this pc, whose
    open window the next hop settles (`settle_window`, R-TOOL-7)."""
    p = st.procs[i]
    a = p.agent
    if p.stop_flag and not prof.stop_settles_window:
        return _terminate(st, prof, scope, i, STOPPED, "stop flag in the tool window (left open)")
    split = scope.split_commit and not p.stop_flag
    ag0 = agent_with(st.agents[a], window=Window.CLOSED, call_due=True)
    ag = _executor_entry(ag0, _TOOL_RESULT_ENTRY, split)
    s = state_with(st, agents=_set_agent(st, a, ag))
    q = proc_with(p, tool="", target=NOBODY, sender=NOBODY, number=0)
    if p.stop_flag:
        return [(step._replace(also=("R-TERM-6", "R-STOP-6")), s2) for step, s2 in
                _terminate(_put(s, i, q), prof, scope, i, STOPPED, "tool result; stop flag seen")]
    out: Succ = [(_step("R-LOCK-3", i, "commit tool result; exec successor hop (lease kept)",
                       Action.TOOL_RESULT, also=("R-LOCK-4", "R-TOOL-4", "R-TOOL-8")),
                  _put(s, i, proc_with(q, pc=Pc.COMMIT_STEP) if split
                       else _hop_start(s, prof, scope, q)))]
    if st.budget.crashes and not scope.split_commit:
        out += _step_then_crash(st, i, "tool result renamed; CRASH before its commit",
                                _TOOL_RESULT_ENTRY, ag0)
    return out


def _terminate(st: State, prof: Profile, scope: Scope, i: int, ep: str, why: str) -> Succ:
    """R-TERM-1 a stopped / budget-exhausted event: its mark is set at the tip
    (R-TERM-4, R-TERM-6), then the obituary goes to the parent (R-ADDR-1), unless a
    parking event at this tip was reported already (R-TERM-7: both marks at the tip)."""
    p = st.procs[i]
    ag = st.agents[p.agent]
    repeated = ag.parked_at_tip and ag.returned_at_tip  # R-TERM-7, read before the mark
    r = NOBODY if repeated else parent_of(scope, p.agent)  # R-ADDR-1
    ag = agent_with(ag, parked_at_tip=True)
    h = ag.history.value
    ag = agent_with(ag, history=_ah(ag, parked_at=h.commits, parkings=(*h.parkings, h.commits)))
    s = state_with(st, agents=_set_agent(st, p.agent, ag))
    q = proc_with(p, epitaph=ep, recipient=r, target=r, sender=p.agent, deposit_kind=ep,
                  tool="", pc=Pc.RESULT_LIST_INBOX if r != NOBODY else Pc.RELEASE_LEASE,
                  history=_ph(p, parked_event=True))
    told = "already reported: no obituary" if repeated else f"obituary to {name(r)}"
    also = ("R-TERM-7", "R-TERM-4", "R-STEP-4") if repeated else (
        "R-ADDR-1", "R-TERM-4", "R-ID-1", "R-STEP-4")
    return [(_step("R-TERM-1", i, f"{why}: {ep} ({told})", Action.PARKING_EVENT,
                  also=also), _put(s, i, q))]


def release(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-LOCK-2 release the lease by LOCK_UN (bl-7318 variant: by close, a
    forked child may keep the lock a while). After it the process has no
    authority (R-TERM-5): only re-read, probes and launches remain."""
    p = st.procs[i]
    q = proc_with(p, lease=False, pc=Pc.REREAD_INBOX if prof.release_rule
                  else _after_reread(prof, p), history=_ph(p, released=True))
    own = st.agents[p.agent]
    own = agent_with(own, history=_ah(own, leases=(*own.history.value.leases, "released")))
    out: Succ = [(_step("R-LOCK-2", i, "release lease", Action.RELEASE_LEASE,
                       also=("R-TERM-2", "R-TERM-5")),
                  _put(st, i, q, agents=_set_agent(st, p.agent, own)))]
    if prof.release_by_close:
        ag = agent_with(own, forked_holder=True)
        s = _put(st, i, q, agents=_set_agent(st, p.agent, ag))
        out.append((_step("R-LOCK-2", i, "close lease fd; a forked child keeps the lock",
                         Action.RELEASE_LEASE), s))
    return out


def linger_ends(st: State, prof: Profile, scope: Scope, a: int) -> Succ:
    """R-LOCK-2 (bl-7318 only) the forked child execs; its copy of the fd closes."""
    s = state_with(st, agents=_set_agent(st, a, agent_with(st.agents[a], forked_holder=False)))
    return [(_step("R-LOCK-2", -1, f"forked child execs: {name(a)} lock freed",
                  Action.FORKED_CHILD_EXECS), s)]


def reread(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-REL-1 after releasing, re-read the inbox; an unseen warranted deposit
    (R-REL-2) means the releaser completes the writer's launch. The seen-set
    (R-DRAIN-5) is what the hop listed and left: the listing, empty by now."""
    p = st.procs[i]
    seen = set(p.listing)
    inbox = st.agents[p.agent].inbox
    p = proc_with(p, history=_ph(p, reread_saw=inbox))
    owed = [f for f in inbox if (f.sender, f.n) not in seen and warrants(f)]
    if owed:
        q = proc_with(p, pc=Pc.RULE_PROBE, target=p.agent)
        return [(_step("R-REL-1", i, "re-read inbox: unseen mail, probe self",
                      Action.REREAD_INBOX, also=("R-REL-2", "R-DRAIN-5")), _put(st, i, q))]
    return [(_step("R-REL-1", i, "re-read inbox: nothing unseen", Action.REREAD_INBOX,
                  also=("R-DRAIN-5",)),
             _put(st, i, proc_with(p, pc=_after_reread(prof, p))))]


def rule_probe(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-REL-1 the release rule's launch goes through the writer's probe."""
    return probe_acquire(st, prof, scope, i, Pc.RULE_LAUNCH, _after_reread(prof, st.procs[i]))


def rule_launch(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-REL-1 (R-LAUNCH-1): the release rule's probe releases, then launches."""
    return probe_release_launch(st, prof, scope, i, _after_reread(prof, st.procs[i]),
                                Funding.RELEASE_RULE)


def _after_reread(prof: Profile, p: Proc) -> Pc:
    """R-TERM-3/R-TERM-4 pins 1 and 2: only a final response launches a driver
    at itself and then its recipient (R-TERM-2 (4)); nothing else does."""
    wake = p.epitaph == FINAL or (p.epitaph == STOPPED and prof.stopped_wakes_parent)
    if not wake:
        return Pc.DONE
    if p.epitaph == FINAL and prof.exit_self_launch:
        return Pc.SELF_LAUNCH
    return Pc.REVIVAL_PROBE if p.recipient != NOBODY and prof.revival else Pc.DONE


def self_launch(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-TERM-2 (4) after a final response: launch a driver at itself, no probe."""
    p = st.procs[i]
    nxt = Pc.REVIVAL_PROBE if p.recipient != NOBODY and prof.revival else Pc.DONE
    s = state_with(st, agents=_launch(st, scope, p.agent))
    q = proc_with(p, pc=nxt, target=p.recipient, history=_ph(
        p, launched=_noted_launch(p, p.agent, Funding.SELF_LAUNCH)))
    return [(_step("R-TERM-2", i, f"launch driver at {name(p.agent)} (self)", Action.SELF_LAUNCH,
                  launched=(p.agent,), funding=Funding.SELF_LAUNCH,
                  also=("R-TERM-3", "R-LAUNCH-1")), _put(s, i, q))]


def revive(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-ADDR-3 the revival probe targets the deposit's recipient (one address)."""
    p = proc_with(st.procs[i], target=st.procs[i].recipient)
    return probe_acquire(_put(st, i, p), prof, scope, i, Pc.REVIVAL_LAUNCH, Pc.DONE)


def revival_launch(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-TERM-2 (4) the recipient probe releases, then launches (R-LAUNCH-1)."""
    return probe_release_launch(st, prof, scope, i, Pc.DONE, Funding.REVIVAL)


_STOP_SEEN: Final = (Pc.MODEL_STEP, Pc.TOOL_RESULT)  # where a driver reads its stop flag


def stop_agent(st: State, prof: Profile, scope: Scope) -> Succ:
    """R-STOP-1 `lernie stop`: set the stop flag of the lock holder of the agent
    and (cascade, R-STOP-3) of each descendant's holder."""
    b = st.budget
    if b.stops == 0 or not any(p.pc in _STOP_SEEN and p.lease for p in st.procs):
        return []  # no driver at a check point: no stop can land (see below)
    out: Succ = []
    for a, ag in enumerate(st.agents):
        if not ag.exists:
            continue
        tree = {a} | {c for c in range(len(st.agents)) if _descends(scope, c, a)}
        # The flag is read only at check points, so setting it just before one
        # is equivalent to setting it any earlier (a sound reduction): the operator
        # stops a when some driver of a's subtree is at a check point.
        if not any(p.role is Role.DRIVER and p.lease and p.agent in tree
                   and p.pc in _STOP_SEEN and not p.stop_flag for p in st.procs):
            continue
        targets = {a}
        if prof.stop_cascade:
            targets = tree
        procs = tuple(proc_with(p, stop_flag=p.stop_flag or (
            p.role is Role.DRIVER and p.lease and p.agent in targets), history=_ph(
                p, stop_requests=(*p.history.value.stop_requests, a))) for p in st.procs)
        s = state_with(st, procs=procs, budget=budget_with(b, stops=b.stops - 1))
        out.append((_step("R-STOP-1", -1, f"operator: lernie stop {name(a)}", Action.OPERATOR_STOP,
                         True, also=("R-STOP-3",) if len(targets) > 1 else (), target=a), s))
    return out


def _descends(scope: Scope, c: int, a: int) -> bool:
    p = scope.parents[c]
    while p != NOBODY:
        if p == a:
            return True
        p = scope.parents[p]
    return False


def ext_scan(st: State, prof: Profile, scope: Scope) -> Succ:
    """R-SCAN-1 `lernie scan` starts (the sweep, then the flush)."""
    b = st.budget
    if b.scans == 0 or len(st.procs) >= scope.max_procs:
        return []
    s = state_with(st, procs=(*st.procs, Proc(Role.SCANNER, NOBODY, Pc.SWEEP)),
                    budget=budget_with(b, scans=b.scans - 1))
    return [(_step("R-SCAN-1", -1, "operator: lernie scan", Action.OPERATOR_SCAN, True), s)]


def _result_by_sweep(agents: tuple[Agent, ...], c: int, to: int, kind: str) -> tuple[Agent, ...]:
    """Deposit a result into `to`'s inbox on c's behalf; the returned mark moves (R-DEP-8)."""
    rc = agents[to]
    f = _new(_FILE, (c, _free(rc, c), kind))
    agents = (*agents[:to], _received(rc, f), *agents[to + 1:])
    author = _marked(agent_with(agents[c], published_at_tip=True))
    h = author.history.value
    author = agent_with(author, history=_ah(author, results=(*h.results, _new(_PUBLICATION, (
        to, kind, h.commits, True, len(h.entries))))))
    return (*agents[:c], author, *agents[c + 1:])


REVIVE_LIMIT: Final = 3  # R-SCAN-10: revivals at one tip before the scan gives up


def revival_due(ag: Agent) -> bool:
    """R-SCAN-10 for an agent not driven with no pending mail: it died mid-work with
    work due (no stop or budget mark at the tip; a model call due with every tool
    call answered, or a trailing open tool window), or its newest entry is a
    terminal response left uncommitted (R-DRAIN-8 finishes it)."""
    if ag.stray_final:
        return True
    if ag.parked_at_tip:
        return False
    return ag.window is Window.OPEN or (ag.call_due and ag.window is Window.CLOSED)


def sweep(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-SCAN-1/R-SCAN-4/R-SCAN-5 for every agent not driven that died mid-work
    (no pending mail, no stop or budget mark at the tip, work due or a tool
    window open) whose parent is registered and whose returned mark is not at
    its tip: deposit `died` there on its behalf, moving the mark. R-SCAN-9: for
    an agent at rest whose newest entry is a final response whose deposit never
    landed (returned mark not at the tip), deposit that reply on its behalf.
    R-SCAN-10: every agent not driven, with no pending mail, that died with work
    due (or left a terminal entry uncommitted) gets a launch, unless the scan
    revived it REVIVE_LIMIT times at its current tip already.
    One atomic pass; R-SCAN-6 holds each lock while it reads and deposits."""
    agents = st.agents
    in_flight = st.in_flight
    swept = []
    sent: list[tuple[int, str]] = []
    revived: list[int] = []
    for c, ag in enumerate(st.agents):
        if not ag.exists or locked(st, c):
            continue
        if prof.scan_revival and not ag.inbox and revival_due(ag):
            if ag.revivals < REVIVE_LIMIT:
                x = agents[c]
                xh = x.history.value
                x = agent_with(x, revivals=x.revivals + 1,
                               pending_launches=min(scope.launch_cap, x.pending_launches + 1),
                               history=_ah(x, revived_at=(*xh.revived_at, xh.commits)))
                agents = (*agents[:c], x, *agents[c + 1:])
                revived.append(c)
            else:
                swept.append(f"gave up on {name(c)}")
        if ag.published_at_tip and not ag.returned_at_tip:
            # R-SCAN-11: its result carrying the tip is on disk: repair the mark, send nothing
            agents = (*agents[:c], _marked(agents[c]), *agents[c + 1:])
            swept.append(f"repaired {name(c)}'s mark")
        if ag.returned_at_tip or ag.published_at_tip or ag.stray_final:
            continue
        par = scope.parents[c]
        mid_work = ag.call_due or ag.window is not Window.CLOSED
        if mid_work and not ag.inbox and not ag.parked_at_tip:
            if par == NOBODY or not agents[par].exists:
                continue
            agents = _result_by_sweep(agents, c, par, DIED)
            in_flight = _flight_add(in_flight, _new(_DEP, (par, c, DIED)))
            sent.append((par, DIED))
            swept.append(f"died for {name(c)}")
        elif ag.answered and not mid_work:
            to = recipient_final(prof, scope, ag, c)
            if to == NOBODY or not agents[to].exists:
                continue
            agents = _result_by_sweep(agents, c, to, FINAL)
            in_flight = _flight_add(in_flight, _new(_DEP, (to, c, FINAL)))
            sent.append((to, FINAL))
            swept.append(f"re-sent {name(c)}'s reply to {name(to)}")
    swept += [f"revive {name(c)}" for c in revived]
    text = f"sweep: {', '.join(swept)}" if swept else "sweep: nothing"
    q = st.procs[i]
    q = proc_with(q, pc=Pc.FLUSH, history=_ph(q, published=(*q.history.value.published, *sent)))
    s = _put(st, i, q, agents=agents, in_flight=in_flight)
    also = ("R-SCAN-4", "R-SCAN-5", "R-SCAN-6") + (("R-SCAN-9",) if "re-sent" in text else ())
    also += ("R-SCAN-11",) if "repaired" in text else ()
    also += ("R-SCAN-10",) if revived else ()
    return [(_step("R-SCAN-1", i, text, Action.SWEEP, also=also, launched=tuple(revived),
                  funding=Funding.SCAN_REVIVAL if revived else None), s)]


def flush(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """R-SCAN-2 launch every registered agent with pending mail and a free lock."""
    s = st
    hit = []
    p = st.procs[i]
    # every inbox is visited: a held one reads busy (its holder drains it)
    p = proc_with(p, history=_ph(p, woke=(*p.history.value.woke,
                     *(a for a, ag in enumerate(st.agents) if ag.exists and ag.inbox))))
    for a, ag in enumerate(st.agents):
        if ag.exists and ag.inbox and not locked(st, a):
            s = state_with(s, agents=_launch(s, scope, a))
            p = proc_with(p, history=_ph(p, launched=_noted_launch(p, a, Funding.FLUSH)))
            hit.append(a)
    text = f"flush: launch {', '.join(map(name, hit))}" if hit else "flush: nothing"
    return [(_step("R-SCAN-2", i, text, Action.FLUSH, launched=tuple(hit),
                  funding=Funding.FLUSH if hit else None), _put(s, i, None))]


def crash(st: State, prof: Profile, scope: Scope, i: int) -> Succ:
    """Crash class (R-STEP-5, I-19): the process dies at this point;
    the kernel drops its locks; nothing else happens."""
    b = st.budget
    s = _put(st, i, None, agents=_noted_death(st.agents, st.procs[i]),
             budget=budget_with(b, crashes=b.crashes - 1))
    return [(_step("CRASH", i, "CRASH", Action.CRASH), s)]


# ---------------------------------------------------------------- programs

_Fn = Callable[[State, Profile, Scope, int], Succ]


def _sub(fn: Callable[..., Succ], *args: object) -> _Fn:
    return lambda st, prof, scope, i: fn(st, prof, scope, i, *args)


class Instruction(NamedTuple):
    pc: Pc
    run: _Fn
    rules: str  # the rules this instruction follows


# Each role's program, in order. A driver's exit (R-TERM-2) is numbered as the
# rule numbers it: (1) deposit the result, (2) release, (3) the release rule,
# (4) after a final response only: self-launch, then probe the recipient.
PROGRAMS: Final[dict[Role, tuple[Instruction, ...]]] = {
    Role.WRITER: (  # `lernie message` (R-PROBE-4): deposit, then probe (R-PROBE-2)
        Instruction(Pc.PUBLISH_MESSAGE, _sub(deposit_publish, Pc.PROBE_RECIPIENT),
                    "R-DEP-1, R-DEP-6"),
        Instruction(Pc.PROBE_RECIPIENT, _sub(probe_acquire, Pc.LAUNCH_RECIPIENT, Pc.DONE),
                    "R-PROBE-1"),
        Instruction(Pc.LAUNCH_RECIPIENT, _sub(probe_release_launch, Pc.DONE), "R-LAUNCH-1"),
    ),
    Role.DRIVER: (
        # the hop (R-STEP-1 took the lease): strays, settle, drain, warrant, step
        Instruction(Pc.RECOVER_STRAYS, recover_stray, "R-DRAIN-2"),
        Instruction(Pc.SETTLE_WINDOW, settle_window, "R-STEP-2"),
        Instruction(Pc.LIST_INBOX, drain_list, "R-DRAIN-1, R-DRAIN-3, R-STEP-3"),
        Instruction(Pc.MOVE_DEPOSIT, drain_move, "R-DRAIN-4"),
        Instruction(Pc.COMMIT_ENTRY, commit_entry, "R-TR-3, R-STEP-3"),
        Instruction(Pc.DECLINE_UNPAIRED, decline, "R-STEP-3, R-STEP-5"),
        Instruction(Pc.MODEL_STEP, model_step, "R-STEP-4, R-STEP-5, R-STEP-7, R-TERM-1"),
        Instruction(Pc.COMMIT_FINAL, commit_final, "R-TR-3"),
        Instruction(Pc.COMMIT_STEP, commit_step, "R-TR-3"),
        # R-DRAIN-8: a lost reply leaves before the drain (the writer's path)
        Instruction(Pc.LOST_LIST, lost_list, "R-DRAIN-8, R-DEP-2"),
        Instruction(Pc.LOST_PUBLISH, _sub(deposit_publish, Pc.LOST_PROBE), "R-DEP-6, R-DEP-8"),
        Instruction(Pc.LOST_MARK, mark_returned, "R-DEP-8"),
        Instruction(Pc.LOST_PROBE, lost_probe, "R-PROBE-1"),
        Instruction(Pc.LOST_LAUNCH, lost_launch, "R-LAUNCH-1"),
        # a `message` / `dispatch` tool: the writer's path (R-PROBE-4, R-PROBE-6)
        Instruction(Pc.TOOL_LIST_INBOX, _sub(deposit_list, Pc.TOOL_PUBLISH), "R-DEP-2"),
        Instruction(Pc.TOOL_PUBLISH, _sub(deposit_publish, Pc.TOOL_PROBE), "R-DEP-6"),
        Instruction(Pc.TOOL_PROBE, _sub(probe_acquire, Pc.TOOL_LAUNCH, Pc.TOOL_RESULT),
                    "R-PROBE-1"),
        Instruction(Pc.TOOL_LAUNCH, _sub(probe_release_launch, Pc.TOOL_RESULT), "R-LAUNCH-1"),
        Instruction(Pc.TOOL_RESULT, tool_result, "R-LOCK-3, R-TERM-6"),
        # the exit protocol, R-TERM-2 (1)..(4)
        Instruction(Pc.RESULT_LIST_INBOX, _sub(deposit_list, Pc.RESULT_PUBLISH),
                    "R-TERM-2 (1), R-ADDR"),
        Instruction(Pc.RESULT_PUBLISH, _sub(deposit_publish, Pc.RELEASE_LEASE),
                    "R-TERM-2 (1), R-DEP-8"),
        Instruction(Pc.RESULT_MARK, mark_returned, "R-DEP-8"),
        Instruction(Pc.RELEASE_LEASE, release, "R-TERM-2 (2), R-LOCK-2"),
        Instruction(Pc.REREAD_INBOX, reread, "R-TERM-2 (3), R-REL-1"),
        Instruction(Pc.RULE_PROBE, rule_probe, "R-TERM-2 (3), R-REL-1"),
        Instruction(Pc.RULE_LAUNCH, rule_launch, "R-TERM-2 (3), R-REL-1"),
        Instruction(Pc.SELF_LAUNCH, self_launch, "R-TERM-2 (4), R-TERM-3"),
        Instruction(Pc.REVIVAL_PROBE, revive, "R-TERM-2 (4), R-ADDR-3"),
        Instruction(Pc.REVIVAL_LAUNCH, revival_launch, "R-TERM-2 (4)"),
    ),
    Role.SCANNER: (  # `lernie scan`: one sweep, then the flush
        Instruction(Pc.SWEEP, sweep,
                    "R-SCAN-1, R-SCAN-4, R-SCAN-5, R-SCAN-6, R-SCAN-9, R-SCAN-10"),
        Instruction(Pc.FLUSH, flush, "R-SCAN-2"),
    ),
}

PC: Final[dict[Pc, _Fn]] = {ins.pc: ins.run for prog in PROGRAMS.values() for ins in prog}


def successors(st: State, prof: Profile, scope: Scope) -> Succ:
    """Every enabled step from st."""
    out: Succ = []
    for i, p in enumerate(st.procs):
        out += PC[p.pc](st, prof, scope, i)
        if st.budget.crashes:
            out += crash(st, prof, scope, i)
    room = len(st.procs) < scope.max_procs
    for a, ag in enumerate(st.agents):
        if ag.pending_launches and room:
            out += start_driver(st, prof, scope, a)
        if ag.forked_holder:
            out += linger_ends(st, prof, scope, a)
    out += ext_message(st, prof, scope)
    out += ext_advance(st, prof, scope)
    out += stop_agent(st, prof, scope)
    out += ext_scan(st, prof, scope)
    return out


# ------------------------------------------------- rules <-> transitions
# Every rule id of SPEC.md is either modelled by exactly one function here
# (a transition, or the decision helper a transition folds in) or listed,
# with the reason, in NOT_MODELLED. tests/model/test_rules.py enforces both;
# `lernie-check --coverage` counts the steps that took each.

RULES: dict[str, Callable[..., object]] = {
    "R-ID-1": parent_of,
    "R-ID-4": ext_message,  # only existing agents are messaged (I-17)
    "R-ID-7": ext_message,
    "R-WS-3": deposit_list,  # dispatch forks the child's branch
    "R-WS-4": deposit_list,
    "R-TR-3": commit_entry,
    "R-DEP-1": deposit_publish,
    "R-DEP-2": _number,
    "R-DEP-6": deposit_publish,
    "R-DEP-8": mark_returned,
    "R-DEP-10": own_child_result,
    "R-DEP-11": drain_list,
    "R-DEP-12": deposit_publish,
    "R-LOCK-1": locked,
    "R-LOCK-2": release,
    "R-LOCK-3": tool_result,
    "R-LOCK-4": tool_result,
    "R-LAUNCH-1": probe_release_launch,
    "R-PROBE-1": probe_acquire,
    "R-PROBE-2": deposit_publish,  # every writer's program publishes before it probes
    "R-PROBE-3": probe_release_launch,
    "R-PROBE-4": ext_message,
    "R-PROBE-5": ext_message,  # roots pre-exist; `prompt` is then a message
    "R-PROBE-6": deposit_list,
    "R-DRAIN-1": drain_list,
    "R-DRAIN-2": recover_stray,
    "R-DRAIN-3": drain_list,
    "R-DRAIN-4": drain_move,
    "R-DRAIN-5": reread,
    "R-DRAIN-8": lost_reply,
    "R-STEP-1": start_driver,
    "R-STEP-2": settle_window,
    "R-STEP-3": _warrant,
    "R-STEP-4": model_step,
    "R-STEP-5": decline,
    "R-STEP-7": model_step,
    "R-TERM-1": _terminate,
    "R-TERM-2": self_launch,
    "R-TERM-3": _after_reread,
    "R-TERM-4": _after_reread,
    "R-TERM-5": release,
    "R-TERM-6": tool_result,
    "R-TERM-7": _terminate,
    "R-REL-1": reread,
    "R-REL-2": warrants,
    "R-ADDR-1": _terminate,
    "R-ADDR-2": _delivered,
    "R-ADDR-3": recipient_final,
    "R-DEBT-1": _delivered,
    "R-DEBT-2": _terminal,
    "R-DEBT-3": _delivered,
    "R-DEBT-4": recipient_final,
    "R-SCAN-1": sweep,
    "R-SCAN-2": flush,
    "R-SCAN-4": sweep,
    "R-SCAN-5": sweep,
    "R-SCAN-6": sweep,
    "R-SCAN-9": sweep,
    "R-SCAN-10": revival_due,
    "R-SCAN-11": _start,
    "R-STOP-1": stop_agent,
    "R-STOP-3": stop_agent,
    "R-STOP-6": tool_result,
    "R-TOOL-4": tool_result,
    "R-TOOL-7": settle_window,
    "R-TOOL-8": tool_result,
}

NOT_MODELLED: dict[str, str] = {
    "R-ID-2": "depth feeds budgets only; budget exhaustion is a bounded choice",
    "R-ID-3": "ids are abstract indices: no string to guard",
    "R-ID-5": "ids are abstract indices: minting has no race",
    "R-ID-6": "name resolution happens before any protocol step",
    "R-ID-9": "ids are abstract indices: validated where they enter, nothing to re-check",
    "R-ID-8": "display names decide nothing in the protocol",
    "R-WS-1": "layout: the model starts from a created workspace",
    "R-WS-2": "workspace guard: a string/path check",
    "R-WS-5": "ref names: the returned mark is a field",
    "R-WS-6": "git invocation discipline",
    "R-WS-7": "path containment",
    "R-WS-8": "git lock files: a commit is one atomic step of the model",
    "R-WS-9": "git lock files: a commit is one atomic step of the model",
    "R-TR-1": "entry names: the transcript is abstracted (§19)",
    "R-TR-2": "entry numbers: one writer (I-1) makes max + 1 a local matter",
    "R-TR-4": "entry JSON bytes",
    "R-TR-5": "wire history assembly for the model adapter",
    "R-DEP-3": "number parsing",
    "R-DEP-4": "deposit bytes",
    "R-DEP-5": "result bytes",
    "R-DEP-7": "durability: the model has no power loss",
    "R-DEP-9": "name and frontmatter parsing; a deposit's kind is a field",
    "R-LAUNCH-2": "process spawning details",
    "R-DRAIN-6": "worktrees are never removed in the model",
    "R-DRAIN-7": "undecodable bytes: content is abstract",
    "R-STEP-6": "model adapters: the model call is a nondeterministic choice",
    "R-STEP-8": "provider adapters: the model call is a nondeterministic choice",
    "R-SCAN-3": "report format",
    "R-SCAN-12": "a creation is one step in the model (the child exists from the dispatch's "
    "listing); the remains of one killed before its ref are seen by no reader and are "
    "checked on the implementation (tests/fault, the refinement machine's killed creations)",
    "R-SCAN-7": "error texts",
    "R-SCAN-8": "documented residuals, not behaviour",
    "R-STATUS-5": "read-only report",
    "R-STOP-2": "holder discovery via /proc: the model flags the holder directly",
    "R-STOP-4": "signal delivery: the model sets the holder's flag",
    "R-STOP-5": "SIGKILL deadline: a kill is a crash",
    "R-TOOL-1": "which tools an agent is offered: configuration, the tool call is a choice",
    "R-TOOL-2": "path containment of the file tools",
    "R-TOOL-3": "file contents and the current directory are not protocol state",
    "R-TOOL-5": "patch grammar and file contents: one tool call, one result",
    "R-TOOL-6": "several calls in one: one tool call, one result",
    "R-STATUS-1": "read-only report",
    "R-STATUS-2": "read-only report",
    "R-STATUS-3": "read-only report",
    "R-STATUS-4": "read-only report",
    "R-LOG-1": "read-only report",
    "R-LOG-2": "`--wait` polling: a client of quiescence, not a protocol step",
    "R-CLI-1": "CLI format",
    "R-CLI-2": "CLI format",
    "R-CLI-3": "CLI format",
    "R-CLI-4": "CLI format",
    "R-CLI-5": "CLI performance",
    "R-CLI-6": "CLI argument handling",
    "R-CLI-7": "CLI content sources (stdin, --file); the deposit it makes is R-DEP-6",
    "R-CLI-8": "CLI preflight of configuration and model: a check before any write",
    "R-CLI-9": "CLI exit statuses by error group: the edge's format, not a protocol step",
    "R-STEP-9": "which adapter a driver builds: the model call is a nondeterministic choice",
    "R-STEP-10": "the parts an actor calls through: a test seam of the code, no protocol step",
}
