"""Seeded bugs on the implementation, for `lernie-check bugs`.

Each bug is a context manager that puts one plausible mistake into the real code for
the duration of a run; nothing in ``lernie_ref`` knows about them, and no name of it is
patched. Every bug is a parts object (R-STEP-10) with one collaborator replaced,
installed through the test kit's seam (:func:`lernie_ref.testing.parts_installed`) as the
process default of its kind, so every actor whose dependencies are built during the run
calls it: the hop's ``HopParts``, the writer verbs' ``WriterParts``, the sweep's
``SweepParts``, the work tools' ``ToolParts``, and the reply-debt reading
``DebtReading`` that the hop, the sweep, ``status`` and the reply faces share. The first
group repeats the model's historic variants (``lernie_spec.variants``) on the code; the
rest are implementation mistakes the model cannot make.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import lernie_ref.actors.drain as drain_module
from lernie_ref.actors.tools import TOOL_PARTS, ToolContext, ToolOutcome
from lernie_ref.core.actor import Actor, Passed
from lernie_ref.core.debt import DebtReading
from lernie_ref.core.errors import GitOpError, LernieError
from lernie_ref.core.ids import AgentId, parent_of, require_agent_id
from lernie_ref.core.vocab import MESSAGES_DIR, TOOL_ORIGIN, Epitaph, MarkKind, Point
from lernie_ref.substrate.gitrun import GitResult, GitRunner
from lernie_ref.substrate.guarded import Dir
from lernie_ref.substrate.lock import ExecutorLock, try_acquire_present
from lernie_ref.substrate.transcript import read_entries, with_body
from lernie_ref.substrate.workspace import Workspace
from lernie_ref.testing import (
    HopParts,
    SweepParts,
    ToolParts,
    WriterParts,
    parts_installed,
)
from lernie_ref.testing import Parts as _Parts

drain: Any = drain_module  # its helpers, read (not replaced) by the bugs' deliveries


def _installed(*parts: _Parts) -> Callable[[], contextlib.AbstractContextManager[object]]:
    """A bug as ``parts`` (production's with one collaborator replaced; one per kind of
    actor the mistake reaches), through the seam."""

    @contextlib.contextmanager
    def apply() -> Iterator[object]:
        with contextlib.ExitStack() as stack:
            for one in parts:
                stack.enter_context(parts_installed(one))
            yield parts

    return apply


def _part(**replaced: Any) -> Callable[[], contextlib.AbstractContextManager[object]]:
    """A bug as production's hop parts with ``replaced`` swapped in."""
    return _installed(HopParts(**replaced))


class Bug(NamedTuple):
    name: str
    summary: str
    historic: str  # the model variant it repeats, or ""
    apply: Callable[[], contextlib.AbstractContextManager[object]]


def _none_actor(*_: object, **__: object) -> Actor[None]:
    return None
    yield  # pragma: no cover - makes this a generator


_NO_PROBE: Any = _none_actor
"""A writer's probe that probes nothing and reports nothing (as a missing call would)."""


def _replacing_link(inbox: Dir, src: str, dst: str) -> None:
    """Publication that replaces a taken name instead of failing with ``EEXIST``
    (upstream's old write-in-place)."""
    with contextlib.suppress(FileNotFoundError):
        inbox.unlink(dst)
    os.link(src, dst, src_dir_fd=inbox.fd, dst_dir_fd=inbox.fd, follow_symlinks=False)


def _parent_recipient(
    worktree: Path, agent_id: str, epitaph: str, reading: DebtReading
) -> AgentId | None:
    """R-ADDR as upstream had it: a reply goes to the parent, not the last prompter."""
    parent = parent_of(agent_id)
    if str(epitaph) != Epitaph.FINAL_RESPONSE:
        return None if parent is None else require_agent_id(parent)
    if not reading.owes_a_reply([with_body(e) for e in read_entries(worktree)], agent_id):
        return None
    return None if parent is None else require_agent_id(parent)


def _unlinking_deliver(worktree: Any, agent_id: str, item: Any, git: Any) -> Actor[str]:
    """A delivery that unlinks the deposit, then writes and commits the entry."""
    data = item.path.read_bytes()
    os.unlink(item.path)  # gone from the inbox before it is anywhere else
    yield Passed(Point.DRAIN_RENAMED, agent_id, item.name)
    seq = drain.next_seq(worktree)
    name = drain.entry_name(seq, item.sender, delivered=True)
    (worktree / MESSAGES_DIR).mkdir(parents=True, exist_ok=True)
    (worktree / MESSAGES_DIR / name).write_bytes(data)
    drain.commit(git, worktree, [f"{MESSAGES_DIR}/{name}"],
                 drain.commit_subject(seq, item.sender, agent_id), op="transcript")
    yield Passed(Point.DRAIN_COMMITTED, agent_id, name)
    return str(name)


class _NoCommits:
    """A git runner that drops ``add`` and ``commit`` and runs everything else."""

    def __init__(self, git: GitRunner) -> None:
        self.git = git

    def run(self, dest: Path, args: Sequence[str], *, check: bool = True,
            input: bytes | None = None) -> GitResult:
        if list(args[:1]) in (["add"], ["commit"]):
            return GitResult(0, "", "")
        return self.git.run(dest, args, check=check, input=input)


def _uncommitted_deliver(
    worktree: Path, agent_id: AgentId, item: Any, git: GitRunner
) -> Actor[str]:
    """The production delivery whose entry is renamed into place but never committed."""
    return (yield from drain_module.deliver_actor(worktree, agent_id, item, _NoCommits(git)))


def _leaky_release(lock: ExecutorLock) -> None:
    """A release that forgets the descriptor: the lock stays held."""
    lock._fd = None


def _tool_step_terminal(entry: Any) -> bool:
    """R-DEBT-2 without the ``tool_use`` test: any non-tool model entry is terminal."""
    return not entry.delivered and entry.origin != TOOL_ORIGIN


class _Unheld:
    """A descriptor of the inbox with no lock on it, taken for the held lock."""

    def __init__(self, inbox: Any) -> None:
        self.fd = os.open(os.fspath(inbox), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def release(self) -> None:
        os.close(self.fd)


def _acquire_ignoring_holders(inbox: Any) -> tuple[bool, Any]:
    """The sweep's lock try that takes a held lock for a free one."""
    present, lock = try_acquire_present(inbox)
    return present, (lock or _Unheld(inbox)) if present else None


def _skip_mark(kind: str) -> Callable[[], contextlib.AbstractContextManager[object]]:
    def set_mark(ws: Workspace, k: str, agent_id: AgentId, sha: str) -> None:
        if str(k) != kind:
            ws.set_mark(k, agent_id, sha)

    return _part(terminal_mark=set_mark)


_OPERATION = ("*** Add File:", "*** Delete File:", "*** Update File:")


def _patch_as_it_goes(raw: object, ctx: ToolContext) -> ToolOutcome:
    """``apply_patch`` that applies (and writes) each operation of an envelope before it
    has checked the next: an envelope that fails half way leaves its first half written."""
    real = TOOL_PARTS.apply_patch
    text = raw.get("input") if isinstance(raw, dict) else None
    if not isinstance(text, str):
        return real(raw, ctx)
    sections: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith(_OPERATION):
            sections.append([line])
        elif sections and not line.startswith("*** End Patch"):
            sections[-1].append(line)
    if len(sections) < 2:
        return real(raw, ctx)
    done = []
    for section in sections:
        one = "\n".join(["*** Begin Patch", *section, "*** End Patch"]) + "\n"
        outcome = real({"input": one}, ctx)  # raises at the first failing operation
        done.append(outcome.text)
    return ToolOutcome("\n".join(done), False)


def _kill_the_shell_only(pid: int, ws_root: str | Path, agent_id: str) -> None:
    """A ``bash`` call that ends kills the shell, not its process group or the processes
    carrying its marks: a background job outlives the call."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _kill_nothing(ws_root: str | Path, agent_id: str) -> list[int]:
    """The marks never looked for: a dead executor's tool processes are left running
    (by the hop's settlement and by the sweep alike, R-TOOL-7)."""
    return []


BUGS: tuple[Bug, ...] = (
    Bug("no-release-rule", "a release never completes a writer's launch (R-REL-1)",
        "bl-9c8f-no-release-rule", _part(owed_launch=lambda *a: False)),
    Bug("no-reply-debt", "every final response owes a reply (R-DEBT-4)",
        "bl-82d8-no-reply-debt", _installed(DebtReading(owes=lambda *a: True))),
    Bug("reply-to-parent", "a reply goes to the parent, not the last prompter (R-ADDR-3)",
        "bl-a96a-reply-to-parent", _part(recipient=_parent_recipient)),
    Bug("no-recipient-revival", "the exit protocol never probes the recipient (R-TERM-2 (4))",
        "bl-4a6c-no-recipient-revival", _part(recipient_probe=_none_actor)),
    Bug("overwriting-deposit", "publication replaces a deposit of the same name (R-DEP-6)",
        "overwriting-deposit", _installed(WriterParts(publish=_replacing_link))),
    Bug("no-stray-recovery", "the drain never commits a crashed delivery (R-DRAIN-2)",
        "no-stray-recovery", _part(recover_strays=lambda *a: False)),
    Bug("no-crash-settlement", "a crashed tool window is never settled (R-STEP-2)", "",
        _part(unanswered_tail=lambda *a: [])),
    Bug("release-without-reread", "the release rule reads an empty inbox (R-REL-1)", "",
        _part(reread=lambda *a: [])),
    Bug("drain-unlinks-before-commit", "a delivery unlinks the deposit, then writes and "
        "commits the entry (R-DRAIN-4)", "", _part(deliver_actor=_unlinking_deliver)),
    Bug("lock-leaked-at-release", "a release forgets the descriptor (R-LOCK-2)", "",
        _part(release_lock=_leaky_release)),
    Bug("tool-step-closes-debt-window", "a tool-calling model entry counts as a terminal "
        "response (R-DEBT-2)", "", _installed(DebtReading(terminal=_tool_step_terminal))),
    Bug("sweep-ignores-lock", "the sweep assesses agents whose lock is held (R-SCAN-6)", "",
        _installed(SweepParts(acquire=_acquire_ignoring_holders))),
    Bug("writer-never-probes", "a writer deposits and launches nobody (R-PROBE-1)", "",
        _installed(WriterParts(probe=_NO_PROBE))),
    Bug("stop-not-marked", "a stopped exit leaves no stopped mark (R-TERM-6)", "",
        _skip_mark(MarkKind.STOPPED.value)),
    Bug("budget-not-marked", "a budget exhaustion leaves no mark (R-TERM-4)", "",
        _skip_mark(MarkKind.BUDGET_EXHAUSTED.value)),
    Bug("delivery-never-committed", "a delivered entry is renamed but never committed "
        "(R-TR-3)", "", _part(deliver_actor=_uncommitted_deliver)),
    Bug("patch-writes-before-checking", "apply_patch writes each operation before it has "
        "checked the next (R-TOOL-5)", "", _installed(ToolParts(apply_patch=_patch_as_it_goes))),
)

PLANTED: tuple[Bug, ...] = (
    Bug("bash-kills-the-shell-only", "a bash call's end kills the shell, not its group "
        "(R-TOOL-4)", "", _installed(
        ToolParts(end_call=_kill_the_shell_only, kill_leftovers=_kill_nothing),
        SweepParts(kill_leftovers=_kill_nothing))),
)
"""Bugs the hand-played tests plant (``--only`` runs them too) that the CI call of
``lernie-check bugs`` leaves out: its budget does not catch them reliably yet."""

BY_NAME = {b.name: b for b in (*BUGS, *PLANTED)}


def _recover_without_the_work(worktree: Path, agent_id: AgentId, git: GitRunner) -> bool:
    """The recovery as upstream does it: whatever is uncommitted under ``messages/`` (a
    tool result whose driver died before its commit included) is committed alone under the
    recovery subject, the call's work left uncommitted."""
    try:
        status = git.run(
            worktree, ["status", "--porcelain", "--untracked-files=all", "--", MESSAGES_DIR]
        ).stdout
        if not status.strip():
            return False
        git.run(worktree, ["add", "--", MESSAGES_DIR])
        git.run(worktree, ["commit", "-q", "--no-verify", "-m",
                           drain.STRAY_SUBJECT.format(agent=agent_id)])
    except LernieError as exc:
        raise GitOpError("drain recover", exc) from None
    return True


PLANTED += (
    Bug("stray-result-without-its-work", "a recovered tool result is committed without its "
        "call's work (R-DRAIN-2, R-TOOL-8)", "", _part(recover_strays=_recover_without_the_work)),
)
BY_NAME = {b.name: b for b in (*BUGS, *PLANTED)}
