"""Real tool calls in the refinement machine: a bounded vocabulary and its oracle.

The model's tool step stands for every work tool (SPEC §19, "Tool calls"): the
protocol sees one tool result per call, committed with the work the call did
(R-TOOL-8), a crash in the middle of a call settled ``died`` by the next holder of
the lock after it killed what the call left running (R-STEP-2, R-TOOL-7). What a
call returns and what it does to the files is predicted here, call by call, for a
bounded vocabulary (``CALLS``): a few ``bash`` commands (success, a non-zero exit,
a command that forks a grandchild and hangs until the timeout kills the group,
output over the cap), a few ``apply_patch`` envelopes (an add, an update with
context, an envelope whose second operation does not match and must leave the
files untouched, a path that climbs out of the worktree), ``read_file`` and ``cd``.

Each call's prediction is written here by hand from SPEC R-TOOL-2 to R-TOOL-5,
over a ghost of the agent's files (``Ghost``: the files the vocabulary names, and
the current directory) that only the predictions move; the oracle then compares,
independently of the code's own bookkeeping:

- after the call (``hop.tool-ran``): the files on disk under the agent's names
  equal the ghost's, nothing was written outside the worktree, and no process
  carrying the agent's tool marks is alive (R-TOOL-4: nothing outlives a call);
- at the result's rename: the tool result entry on disk (``NNN-tool.json``: one
  ``tool_result`` block for the call) has the predicted ``is_error`` and text; a
  call whose driver died before its result is settled ``died:`` (R-STEP-2), one
  stopped before it ran ``interrupted:`` (R-STEP-4);
- at a tool result's commit: the agent's files in the worktree's git index (blob
  ids computed from the ghost's bytes) equal the ghost's (R-TOOL-8); the same at the
  next hop's stray recovery when a driver died between a result's rename and its commit,
  since that recovery commits the result with its call's work (R-DRAIN-2);
- after a ``died`` settlement (``hop.settled``): nothing the dead call started is
  still running (R-TOOL-7).

A crash in the middle of a hanging ``bash`` call is played as the machine's crash
at ``hop.assistant-committed`` of that call (the last point before the tool runs)
with the call's command started first, as the tool starts it (``sh -c`` in a
session of its own, carrying the agent's marks): what a SIGKILLed driver leaves
behind, the command still running.

The names each agent's calls use carry its model slot (``w-P/notes.txt``,
``other-P.txt``), so a child, which starts from its parent's branch (R-PROBE-6),
never sees its own names in what it inherits.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from lernie_stateful.procfs import command_line

TOOL_TIMEOUT = 1.0
"""``tool_timeout`` of the machine's workspace (R-TOOL-4): long enough for a command
that exits at once to exit on a busy machine, short enough to spend on a hang."""

TOOL_CAP = 64
"""``tool_output_cap`` of the machine's workspace (R-TOOL-3, R-TOOL-4): small, so one
command's output is cut."""

TOOLS = ("message", "dispatch", "read_file", "cd", "apply_patch", "bash")
"""The tools the machine's agents are offered (R-TOOL-1; ``bash`` enabled)."""

WS_MARK = "LERNIE_TOOL_WS"
AGENT_MARK = "LERNIE_TOOL_AGENT"
"""The marks every process of a ``bash`` call carries (R-TOOL-4), spelled here as SPEC
spells them, not imported from the code they check."""

NOTES = b"one\ntwo\nthree\n"
UPDATED = b"one\nTWO\nthree\n"
DIED = "died:"
INTERRUPTED = "interrupted:"


class Expect(NamedTuple):
    """A predicted tool result: ``is_error`` and the text (whole, or its start)."""

    is_error: bool
    text: str
    exact: bool = True

    def matches(self, is_error: object, text: str) -> bool:
        return is_error is self.is_error and (
            text == self.text if self.exact else text.startswith(self.text))


@dataclass
class Ghost:
    """One agent's files as the vocabulary's predictions leave them (worktree-relative
    path → bytes; only names the vocabulary uses), and its current directory
    (R-TOOL-3; ``""`` for the worktree's root)."""

    files: dict[str, bytes] = field(default_factory=dict)
    cwd: str = ""

    def at(self, rel: str) -> str:
        return f"{self.cwd}/{rel}" if self.cwd else rel

    def is_dir(self, path: str) -> bool:
        return any(f.startswith(path + "/") for f in self.files)


Predict = Callable[[Ghost, str], Expect]
"""A call's prediction: from the ghost and the agent's tag, the result; it moves the
ghost as the call moves the worktree."""


class Call(NamedTuple):
    name: str
    tool: str
    input: Callable[[str], dict[str, str]]
    predict: Predict
    hangs: bool = False  # a crash in the middle of it leaves its command running
    programs: int = 0  # the programs a hanging command's shell starts


def _patch(*lines: str) -> dict[str, str]:
    return {"input": "\n".join(("*** Begin Patch", *lines, "*** End Patch")) + "\n"}


def _bash_ok(g: Ghost, tag: str) -> Expect:
    return Expect(False, "Exit code: 0\nhello\n")


def _bash_fail(g: Ghost, tag: str) -> Expect:
    return Expect(True, "Exit code: 3\n--- stderr ---\noops\n")


def _bash_hang(g: Ghost, tag: str) -> Expect:
    return Expect(True, f"Exit code: none (killed after {TOOL_TIMEOUT:g} s, the tool_timeout, "
                        "with every process it started)\n")


FLOOD = 100


def _bash_flood(g: Ghost, tag: str) -> Expect:
    return Expect(False, "Exit code: 0\n" + "0" * TOOL_CAP +
                  f"\n[lernie: stdout cut at {TOOL_CAP} of {FLOOD} bytes (tool_output_cap); "
                  f"{FLOOD - TOOL_CAP} bytes not shown]")


def _add(g: Ghost, tag: str) -> Expect:
    path = g.at(f"w-{tag}/notes.txt")
    if path in g.files:
        return Expect(True, "lernie tool apply_patch: ", exact=False)
    g.files[path] = NOTES
    return Expect(False, f"patch applied:\nadded {path}")


def _update(g: Ghost, tag: str) -> Expect:
    path = g.at(f"w-{tag}/notes.txt")
    old = g.files.get(path)
    if old is None or b"one\ntwo\nthree\n" not in old:
        return Expect(True, "lernie tool apply_patch: ", exact=False)
    g.files[path] = old.replace(b"one\ntwo\nthree\n", UPDATED, 1)
    return Expect(False, f"patch applied:\nupdated {path}")


def _mismatch(g: Ghost, tag: str) -> Expect:
    # the add alone would succeed; the update's context is nowhere: nothing is written
    return Expect(True, "lernie tool apply_patch: ", exact=False)


def _escape(g: Ghost, tag: str) -> Expect:
    return Expect(True, "lernie tool apply_patch: path ", exact=False)


def _read(g: Ghost, tag: str) -> Expect:
    path = g.at(f"w-{tag}/notes.txt")
    data = g.files.get(path)
    if data is None:
        return Expect(True, "lernie tool read_file: ", exact=False)
    return Expect(False, data.decode("utf-8"))


def _cd(g: Ghost, tag: str) -> Expect:
    path = g.at(f"w-{tag}")
    if not g.is_dir(path):
        return Expect(True, "lernie tool cd: ", exact=False)
    g.cwd = path
    return Expect(False, path)


CALLS: tuple[Call, ...] = (
    Call("bash-ok", "bash", lambda t: {"command": "printf 'hello\\n'"}, _bash_ok),
    Call("bash-exit-3", "bash", lambda t: {"command": "echo oops >&2; exit 3"}, _bash_fail),
    Call("bash-hang", "bash", lambda t: {"command": "sleep 30 & sleep 30"}, _bash_hang,
         hangs=True, programs=2),
    Call("bash-flood", "bash", lambda t: {"command": f"printf '%0{FLOOD}d' 0"}, _bash_flood),
    Call("patch-add", "apply_patch", lambda t: _patch(
        f"*** Add File: w-{t}/notes.txt", "+one", "+two", "+three"), _add),
    Call("patch-update", "apply_patch", lambda t: _patch(
        f"*** Update File: w-{t}/notes.txt", "@@", " one", "-two", "+TWO", " three"), _update),
    Call("patch-mismatch", "apply_patch", lambda t: _patch(
        f"*** Add File: other-{t}.txt", "+new", f"*** Update File: w-{t}/notes.txt", "@@",
        " zero", "-nope", "+yes"), _mismatch),
    Call("patch-escape", "apply_patch", lambda t: _patch(
        f"*** Add File: ../escape-{t}.txt", "+out"), _escape),
    Call("read-notes", "read_file", lambda t: {"path": f"w-{t}/notes.txt"}, _read),
    Call("cd-work", "cd", lambda t: {"path": f"w-{t}"}, _cd),
)
BY_NAME = {c.name: c for c in CALLS}
LOOK = "look"
"""The no-op call: a tool nobody offers (an error result, no protocol effect)."""
CALL_NAMES: tuple[str, ...] = (LOOK, *BY_NAME)
REFUSED: tuple[str, ...] = ("patch-mismatch", "patch-escape")
"""The calls the tool must refuse whole, leaving every file as it was (R-TOOL-5, R-TOOL-2):
the ones a tool that does part of its work before it checks the rest gets wrong, and
a wrong one shows only in the files, so the machine draws them more often."""


def blob_id(data: bytes) -> str:
    """The git blob id of ``data`` (what the index records for a file with these bytes)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def owns(path: str, tag: str) -> bool:
    """Whether the worktree-relative ``path`` is one of agent ``tag``'s names."""
    return any(part in (f"w-{tag}", f"other-{tag}.txt") for part in path.split("/"))


def worktree_files(worktree: str, tag: str) -> dict[str, bytes]:
    """The files under ``worktree`` named by agent ``tag``'s calls (``.git`` and the
    transcript left out), read from disk."""
    out: dict[str, bytes] = {}
    for top, dirs, names in os.walk(worktree):
        rel = os.path.relpath(top, worktree)
        rel = "" if rel == "." else rel
        if not rel:
            dirs[:] = [d for d in dirs if d not in (".git", "messages")]
        for name in names:
            path = f"{rel}/{name}" if rel else name
            if owns(path, tag):
                with open(os.path.join(top, name), "rb") as f:
                    out[path] = f.read()
    return out


START_WAIT = 30.0
"""Seconds a crash's leftover command may take to start its programs (a bound that only
a broken machine reaches: it is a few milliseconds)."""


def marked_alive(ws_root: str, agent_id: str | None = None) -> list[int]:
    """Live processes carrying the workspace's tool mark (and the agent's, when given),
    from ``/proc``; a zombie's environment reads empty."""
    wanted = {f"{WS_MARK}={os.path.realpath(ws_root)}".encode()}
    if agent_id is not None:
        wanted.add(f"{AGENT_MARK}={agent_id}".encode())
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = set(f.read().split(b"\0"))
        except OSError:
            continue
        if wanted <= env:
            out.append(int(name))
    return out


def tool_results(path: str) -> list[tuple[str, object, str]]:
    """(tool_use_id, is_error, text) of each ``tool_result`` block of a tool entry file."""
    with open(path, "rb") as f:
        blocks = json.loads(f.read())
    out = []
    for b in blocks if isinstance(blocks, list) else []:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            content = b.get("content")
            text = content if isinstance(content, str) else "".join(
                c.get("text", "") for c in content or [] if isinstance(c, dict))
            out.append((str(b.get("tool_use_id")), b.get("is_error"), text))
    return out


class ToolMismatch(AssertionError):
    """A tool call did something its prediction does not say."""


@dataclass
class Oracle:
    """The predictions of one run: calls given out, run, died; ghosts per agent slot."""

    ws_root: str
    ghosts: dict[int, Ghost] = field(default_factory=dict)
    issued: dict[str, tuple[int, str]] = field(default_factory=dict)  # call → (slot, name)
    state: dict[str, str] = field(default_factory=dict)  # issued | ran | dead | resulted
    expected: dict[str, Expect] = field(default_factory=dict)
    leftovers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    unsaved: set[int] = field(default_factory=set)  # slots with a result renamed, uncommitted

    def issue(self, call_id: str, slot: int, name: str) -> None:
        self.issued[call_id] = (slot, name)
        self.state[call_id] = "issued"

    def ran(self, call_id: str, tag: str, agent_id: str, worktree: str) -> None:
        """``hop.tool-ran``: predict, then compare the files and the processes."""
        if call_id not in self.issued:
            return
        slot, name = self.issued[call_id]
        self.state[call_id] = "ran"
        call = BY_NAME.get(name)
        if call is None:
            return
        ghost = self.ghosts.setdefault(slot, Ghost())
        self.expected[call_id] = call.predict(ghost, tag)
        real = worktree_files(worktree, tag)
        if real != ghost.files:
            raise ToolMismatch(f"after {name} ({call_id}) the files of {tag} are "
                               f"{sorted(real.items())}, predicted {sorted(ghost.files.items())}")
        outside = [p for p in (Path(worktree).parent / f"escape-{tag}.txt",
                               Path(self.ws_root) / f"escape-{tag}.txt") if p.exists()]
        if outside:
            raise ToolMismatch(f"{name} ({call_id}) wrote outside the worktree: {outside}")
        if call.tool == "bash":
            alive = marked_alive(self.ws_root, agent_id)
            if alive:
                raise ToolMismatch(f"{name} ({call_id}) left processes running: {alive} "
                                   "(R-TOOL-4)")

    def result(self, entry: str, slot: int | None = None) -> None:
        """A tool entry of ``slot`` renamed into ``messages/``: each result as predicted;
        its commit is still to come."""
        if slot is not None:
            self.unsaved.add(slot)
        for call_id, is_error, text in tool_results(entry):
            st = self.state.get(call_id)
            if st is None:
                continue
            if st == "dead":
                want = Expect(True, DIED, exact=False)  # R-STEP-2
            elif st == "issued":
                want = Expect(True, INTERRUPTED, exact=False)  # R-STEP-4
            elif call_id in self.expected:
                want = self.expected[call_id]
            else:
                continue  # message, dispatch, the no-op: the protocol's own checks
            if not want.matches(is_error, text):
                raise ToolMismatch(
                    f"result of {self.issued[call_id][1]} ({call_id}): is_error={is_error} "
                    f"{text!r}; predicted is_error={want.is_error} {want.text!r}"
                    + ("" if want.exact else " (start)"))
            self.state[call_id] = "resulted"

    def committed(self, slot: int, tag: str, index: Mapping[str, str]) -> None:
        """A tool entry committed (R-TOOL-8): the agent's files in the index as predicted."""
        self.unsaved.discard(slot)
        ghost = self.ghosts.get(slot, Ghost())
        staged = {p: sha for p, sha in index.items() if owns(p, tag)}
        want = {p: blob_id(data) for p, data in ghost.files.items()}
        if staged != want:
            raise ToolMismatch(f"the commit of a tool result of {tag} holds {staged}, "
                               f"predicted {want} (R-TOOL-8)")

    def recovered(self, slot: int, tag: str, index: Mapping[str, str]) -> None:
        """A hop's stray recovery (R-DRAIN-2): when a driver of ``slot`` died between a
        tool result's rename and its commit, the recovery's commit is that result's, so it
        holds the call's files as predicted (R-TOOL-8)."""
        if slot in self.unsaved:
            self.committed(slot, tag, index)

    def crashed(self, slot: int, mid_call: bool, agent_id: str, worktree: str) -> None:
        """A driver of ``slot`` crashed: its calls without a result are dead; a crash at
        ``hop.assistant-committed`` of a hanging call is a crash in its middle."""
        live = [c for c, (s, _) in self.issued.items()
                if s == slot and self.state[c] in ("issued", "ran")]
        if mid_call and live:
            newest = max(live, key=lambda c: int(c.lstrip("t")))
            call = BY_NAME.get(self.issued[newest][1])
            if call is not None and call.hangs and self.state[newest] == "issued":
                env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                       WS_MARK: os.path.realpath(self.ws_root), AGENT_MARK: agent_id}
                cwd = os.path.join(worktree, self.ghosts.get(slot, Ghost()).cwd)
                shell = subprocess.Popen(
                    ["/bin/sh", "-c", call.input("")["command"]], cwd=cwd, env=env,
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
                self.leftovers.append(shell)
                self._started(shell.pid, call.programs, agent_id)
        for c in live:
            self.state[c] = "dead"

    def _started(self, shell: int, programs: int, agent_id: str) -> None:
        """Wait until the shell ``shell`` has started its ``programs`` programs, each past
        its exec. A process in the middle of its exec shows no environment in ``/proc``, so
        a kill by mark (the settlement's, R-TOOL-7) or a check of what is left could miss
        it: the crash's leftovers are in place only once every one of them shows."""
        # a command line reads empty while its process execs, and as the shell's before
        own = command_line(shell)
        deadline = time.monotonic() + START_WAIT
        while len([p for p in marked_alive(self.ws_root, agent_id)
                   if p != shell and command_line(p) not in (None, [""], own)]) < programs:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the hanging command's shell {shell} did not start its "
                                   f"{programs} programs within {START_WAIT:g} s")
            time.sleep(0.001)

    def none_left(self, agent_id: str | None, what: str) -> None:
        """Nothing a call started is still running (R-TOOL-7)."""
        alive = marked_alive(self.ws_root, agent_id)
        if alive:
            raise ToolMismatch(f"{what}: tool processes still running: {alive} (R-TOOL-7)")

    def close(self) -> None:
        """Kill and reap whatever is left (a failing run's leftovers included)."""
        for pid in marked_alive(self.ws_root):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for proc in self.leftovers:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
