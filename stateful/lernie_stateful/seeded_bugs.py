"""Seeded bugs on the implementation, for `lernie-check bugs`.

Each bug is a context manager that patches one plausible mistake into the real
code for the duration of a run (monkeypatch style, at the names the actors call
through); nothing in ``lernie_ref`` knows about them. The first group repeats the
model's historic variants (``lernie_spec.variants``) on the code; the rest are
implementation mistakes the model cannot make.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import lernie_ref.actors.drain as drain_module
import lernie_ref.actors.exit_protocol as exit_protocol
import lernie_ref.actors.hop as hop
import lernie_ref.actors.release as release
import lernie_ref.actors.sweep as sweep_module
import lernie_ref.actors.tools as tools
import lernie_ref.actors.writer as writer
import lernie_ref.core.debt as debt
import lernie_ref.reply_debt as reply_debt
import lernie_ref.substrate.guarded as guarded
import lernie_ref.substrate.shell as shell_module
import lernie_ref.substrate.transcript as transcript
from lernie_ref.core.actor import Actor, Passed
from lernie_ref.core.ids import AgentId, parent_of
from lernie_ref.core.vocab import MESSAGES_DIR, TOOL_ORIGIN, Epitaph, MarkKind, Point
from lernie_ref.substrate.lock import ExecutorLock
from lernie_ref.substrate.workspace import Workspace

drain: Any = drain_module  # patched at the names the actors call through
sweep: Any = sweep_module
shell: Any = shell_module


@contextlib.contextmanager
def _patched(target: object, name: str, value: object) -> Iterator[None]:
    old = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, old)


@contextlib.contextmanager
def _patched_item(target: dict[str, Any], key: str, value: object) -> Iterator[None]:
    old = target[key]
    target[key] = value
    try:
        yield
    finally:
        target[key] = old


class Bug(NamedTuple):
    name: str
    summary: str
    historic: str  # the model variant it repeats, or ""
    apply: Callable[[], contextlib.AbstractContextManager[None]]


def _none_actor(*_: object, **__: object) -> Actor[None]:
    return None
    yield  # pragma: no cover - makes this a generator


def _replacing_link(self: Any, src: str, dst: str) -> None:
    """``link`` that replaces a taken name instead of failing with ``EEXIST``."""
    with contextlib.suppress(FileNotFoundError):
        self.unlink(dst)
    os.link(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)


def _overwriting() -> contextlib.AbstractContextManager[None]:
    """Publication replaces a deposit of the same name (upstream's old write-in-place)."""
    return _patched(guarded.Dir, "link", _replacing_link)


def _reply_to_parent() -> contextlib.AbstractContextManager[None]:
    def recipient(worktree: Any, agent_id: str, epitaph: str) -> str | None:
        if str(epitaph) != Epitaph.FINAL_RESPONSE:
            return parent_of(agent_id)
        if not reply_debt.owes_a_reply(reply_debt.read_entries(worktree), agent_id):
            return None
        return parent_of(agent_id)

    return _patched(transcript, "recipient", recipient)


def _unlink_before_commit() -> contextlib.AbstractContextManager[None]:
    def deliver(worktree: Any, agent_id: str, item: Any, git: Any) -> Actor[str]:
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

    return _patched(drain, "deliver_actor", deliver)


@contextlib.contextmanager
def _no_stray_recovery() -> Iterator[None]:
    # the hop calls it through its own import of the name
    with _patched(drain, "recover_strays", lambda *a: False), \
            _patched(hop, "recover_strays", lambda *a: False):
        yield


def _leaky_release() -> contextlib.AbstractContextManager[None]:
    def release_(self: ExecutorLock) -> None:
        self._fd = None  # forgets the descriptor: the lock stays held

    return _patched(ExecutorLock, "release", release_)


def _tool_closes_window() -> contextlib.AbstractContextManager[None]:
    def terminal(entry: Any) -> bool:
        return not entry.delivered and entry.origin != TOOL_ORIGIN

    return _patched(debt, "is_terminal_response", terminal)


def _sweep_ignores_lock() -> contextlib.AbstractContextManager[None]:
    real = sweep.try_acquire_present

    class Unheld:
        """A descriptor of the inbox with no lock on it, taken for the held lock."""

        def __init__(self, inbox: Any) -> None:
            self.fd = os.open(os.fspath(inbox), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

        def release(self) -> None:
            os.close(self.fd)

    def try_acquire_present(inbox: Any) -> Any:
        present, lock = real(inbox)
        return present, (lock or Unheld(inbox)) if present else None

    return _patched(sweep, "try_acquire_present", try_acquire_present)


def _skip_mark(kind: str) -> Callable[[], contextlib.AbstractContextManager[None]]:
    def apply() -> contextlib.AbstractContextManager[None]:
        real = Workspace.set_mark

        def set_mark(self: Workspace, k: str, agent_id: AgentId, sha: str) -> None:
            if str(k) != kind:
                real(self, k, agent_id, sha)

        return _patched(Workspace, "set_mark", set_mark)

    return apply


def _uncommitted_delivery() -> contextlib.AbstractContextManager[None]:
    real = drain.commit

    def commit(git: Any, worktree: Any, paths: Any, subject: str, op: str) -> None:
        if not subject.startswith("transcript") or paths is None:
            real(git, worktree, paths, subject, op=op)

    return _patched(drain, "commit", commit)


_OPERATION = ("*** Add File:", "*** Delete File:", "*** Update File:")


def _patch_writes_as_it_goes() -> contextlib.AbstractContextManager[None]:
    """``apply_patch`` applies (and writes) each operation of an envelope before it has
    checked the next: an envelope that fails half way leaves its first half written."""
    real = tools.TOOLS["apply_patch"]

    def apply_patch(raw: object, ctx: Any) -> Any:
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
        return tools.ToolOutcome("\n".join(done), False)

    return _patched_item(tools.TOOLS, "apply_patch", apply_patch)


class _KillsTheShellOnly:
    """``os`` as the shell module sees it, with ``killpg`` reaching the leader only."""

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @staticmethod
    def killpg(pgid: int, sig: int) -> None:
        os.kill(pgid, sig)


@contextlib.contextmanager
def _timeout_kills_the_shell() -> Iterator[None]:
    """A ``bash`` call that ends kills the shell, not its process group or the processes
    carrying its marks: a background job outlives the call."""
    with _patched(shell, "os", _KillsTheShellOnly()), \
            _patched(shell, "kill_marked", lambda *a, **k: []):
        yield


BUGS: tuple[Bug, ...] = (
    Bug("no-release-rule", "a release never completes a writer's launch (R-REL-1)",
        "bl-9c8f-no-release-rule", lambda: _patched(release, "owed_launch", lambda *a: False)),
    Bug("no-reply-debt", "every final response owes a reply (R-DEBT-4)",
        "bl-82d8-no-reply-debt", lambda: _patched(debt, "owes_a_reply", lambda *a: True)),
    Bug("reply-to-parent", "a reply goes to the parent, not the last prompter (R-ADDR-3)",
        "bl-a96a-reply-to-parent", _reply_to_parent),
    Bug("no-recipient-revival", "the exit protocol never probes the recipient (R-TERM-2 (4))",
        "bl-4a6c-no-recipient-revival", lambda: _patched(exit_protocol, "probe_actor",
                                                          _none_actor)),
    Bug("overwriting-deposit", "publication replaces a deposit of the same name (R-DEP-6)",
        "overwriting-deposit", _overwriting),
    Bug("no-stray-recovery", "the drain never commits a crashed delivery (R-DRAIN-2)",
        "no-stray-recovery", _no_stray_recovery),
    Bug("no-crash-settlement", "a crashed tool window is never settled (R-STEP-2)", "",
        lambda: _patched(hop, "unanswered_tail", lambda *a: [])),
    Bug("release-without-reread", "the release rule reads an empty inbox (R-REL-1)", "",
        lambda: _patched(release, "pending", lambda *a: [])),
    Bug("drain-unlinks-before-commit", "a delivery unlinks the deposit, then writes and "
        "commits the entry (R-DRAIN-4)", "", _unlink_before_commit),
    Bug("lock-leaked-at-release", "a release forgets the descriptor (R-LOCK-2)", "",
        _leaky_release),
    Bug("tool-step-closes-debt-window", "a tool-calling model entry counts as a terminal "
        "response (R-DEBT-2)", "", _tool_closes_window),
    Bug("sweep-ignores-lock", "the sweep assesses agents whose lock is held (R-SCAN-6)", "",
        _sweep_ignores_lock),
    Bug("writer-never-probes", "a writer deposits and launches nobody (R-PROBE-1)", "",
        lambda: _patched(writer, "writer_probe_actor", _none_actor)),
    Bug("stop-not-marked", "a stopped exit leaves no stopped mark (R-TERM-6)", "",
        _skip_mark(MarkKind.STOPPED.value)),
    Bug("budget-not-marked", "a budget exhaustion leaves no mark (R-TERM-4)", "",
        _skip_mark(MarkKind.BUDGET_EXHAUSTED.value)),
    Bug("delivery-never-committed", "a delivered entry is renamed but never committed "
        "(R-TR-3)", "", _uncommitted_delivery),
    Bug("patch-writes-before-checking", "apply_patch writes each operation before it has "
        "checked the next (R-TOOL-5)", "", _patch_writes_as_it_goes),
)

PLANTED: tuple[Bug, ...] = (
    Bug("bash-kills-the-shell-only", "a bash call's end kills the shell, not its group "
        "(R-TOOL-4)", "", _timeout_kills_the_shell),
)
"""Bugs the hand-played tests plant (``--only`` runs them too) that the CI call of
``lernie-check bugs`` leaves out: its budget does not catch them reliably yet."""

BY_NAME = {b.name: b for b in (*BUGS, *PLANTED)}


def _stray_result_without_its_work() -> contextlib.AbstractContextManager[None]:
    """The recovery as upstream does it: a tool result whose driver died before its commit
    is committed alone under the recovery subject, its call's work left uncommitted."""
    return _patched(drain, "_lone_tool_result", lambda *a: None)


PLANTED += (
    Bug("stray-result-without-its-work", "a recovered tool result is committed without its "
        "call's work (R-DRAIN-2, R-TOOL-8)", "", _stray_result_without_its_work),
)
BY_NAME = {b.name: b for b in (*BUGS, *PLANTED)}
