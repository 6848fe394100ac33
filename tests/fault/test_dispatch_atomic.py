"""A dispatch is atomic as seen from outside (R-WS-4, R-PROBE-6, R-SCAN-12, D-29).

A real process runs `lernie dispatch`'s actor and is SIGKILLed at each of its protocol
points and before and after each of its git calls; then a scan runs, and from the files
on disk: the parent answers to its name, the child exists iff the kill came after its
ref was made, and then answers to its own name with its goal pending exactly once; no
remains of a killed creation are left; nobody got a `died`; ``lernie-check audit``
finds nothing. While a dispatch is held at each of its points, the parent's name and
the child's resolve as they must (the old order, a branch made first, planted, is
shown to fail). And a fan-out of 20 children runs beside an operator messaging the
parent by name: no message is refused and none is lost.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from pathlib import Path

import pytest
from lernie_stateful.audit import audit

from lernie_ref.actors.sweep import scan
from lernie_ref.actors.writer import dispatch_actor
from lernie_ref.core.clock import SystemClock
from lernie_ref.core.errors import AmbiguousName, LernieError
from lernie_ref.core.frontmatter import split_frontmatter
from lernie_ref.core.stepper import Stepper
from lernie_ref.core.vocab import AGENT_REF_PREFIX, Point
from lernie_ref.inbox import RecordingLauncher, cli_dispatch, cli_message, cli_prompt, pending
from lernie_ref.substrate.gitrun import GitResult, SubprocessGit
from lernie_ref.substrate.workspace import Workspace, create_workspace
from lernie_ref.testing import Inline, drive

GOAL = "the child's goal"
DISPATCH_POINTS = (
    Point.DISPATCH_LOCKED,
    Point.DISPATCH_PREPARED,
    Point.DEPOSIT_LISTED,
    Point.DEPOSIT_TEMP_WRITTEN,
    Point.DEPOSIT_PUBLISHED,
    Point.DISPATCH_CREATED,
    Point.PROBE_ACQUIRED,
    Point.PROBE_RELEASED,
    Point.PROBE_LAUNCHED,
)


class CountingGit:
    """The real git runner; dies (SIGKILL) before or after its ``cut``-th call."""

    def __init__(self, cut: int | None = None, after: bool = False) -> None:
        self.git = SubprocessGit()
        self.cut = cut
        self.after = after
        self.calls: list[str] = []

    def run(
        self, dest: Path, args: Sequence[str], *, check: bool = True, input: bytes | None = None
    ) -> GitResult:
        n = len(self.calls)
        self.calls.append(" ".join(args[:2]))
        if n == self.cut and not self.after:
            os.kill(os.getpid(), signal.SIGKILL)
        result = self.git.run(dest, args, check=check, input=input)
        if n == self.cut and self.after:
            os.kill(os.getpid(), signal.SIGKILL)
        return result


def _family(root: Path) -> tuple[Workspace, str]:
    ws = create_workspace(root / "ws")
    lead = cli_prompt(ws, "lead the work", "lead", RecordingLauncher())
    drive(ws, lead)  # at rest: its goal answered
    return ws, lead


def _dispatch_in_a_process(ws: Workspace, lead: str, *, point: str | None = None,
                           git: CountingGit | None = None) -> None:
    """Fork a process that dispatches ``kid`` of ``lead`` and SIGKILLs itself right after
    ``point`` (or wherever ``git`` cuts); wait for it and require that it died so."""
    pid = os.fork()
    if pid == 0:
        try:
            here = Workspace(ws.root, git)
            stepper = Stepper(dispatch_actor(here, lead, GOAL, "kid", RecordingLauncher(),
                                             SystemClock()))
            while (passed := stepper.step()) is not None:
                if passed.name == point:
                    os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def _git_calls_of_a_dispatch(tmp_path: Path) -> list[str]:
    ws, lead = _family(tmp_path / "count")
    git = CountingGit()
    cli_dispatch(Workspace(ws.root, git), lead, GOAL, "kid", RecordingLauncher())
    return git.calls


def _settled(ws: Workspace, lead: str, label: str) -> str | None:
    """After the kill: one scan, then the checks. Returns the child's id, if it exists."""
    inline = Inline(ws)
    report = scan(ws, inline.launcher, SystemClock())
    assert report.silent_deaths == [] and report.swept == [], (label, report)
    ids = ws.agent_ids()
    children = [i for i in ids if i != lead]
    assert len(children) <= 1, (label, ids)
    child = children[0] if children else None
    # no remains: every worktree and worktree admin directory is an agent's
    assert sorted(os.listdir(ws.agents_root)) == ids, label
    assert sorted(os.listdir(ws.repo_git / "worktrees")) == ids, label
    for name in os.listdir(ws.inbox_root):
        if name not in ids:
            assert os.listdir(ws.inbox_root / name) == [], (label, name)
    assert not (ws.repo_git / f"{AGENT_REF_PREFIX}{child}.lock").exists(), label
    # names: the parent answers to its own, the child (if any) to its own
    assert ws.resolve_name("lead") == lead, label
    assert ws.resolve_name("kid") == (child or "kid"), label
    # nobody got a `died`; the parent holds no mail at all
    assert pending(ws.inbox_dir(lead)) == [], label
    if child is not None:
        mail = pending(ws.inbox_dir(child))
        assert [m.sender for m in mail] == [lead], (label, mail)
        assert split_frontmatter(mail[0].path.read_text())[1] == GOAL, label
        assert (ws.worktree(child) / "goal.md").read_text() == GOAL, label
        assert (ws.worktree(child) / "name").read_text() == "kid\n", label
        assert report.launched == [child], (label, report)
        assert inline.settle(max_hops=20), label  # the child runs, answers its parent
        first = sorted(os.listdir(ws.worktree(child) / "messages"))[0]
        assert first == f"001-{lead}.md", (label, first)
    else:
        assert report.launched == [], (label, report)
    found = audit(ws.root)
    assert found.violations() == [], (label, found.text())
    return child


@pytest.mark.parametrize("point", DISPATCH_POINTS)
def test_r_probe_6_dispatch_sigkilled_at_each_point_then_scan_audit_and_names(
    tmp_path: Path, point: str
) -> None:
    ws, lead = _family(tmp_path)
    _dispatch_in_a_process(ws, lead, point=point)
    child = _settled(ws, lead, point)
    created = DISPATCH_POINTS.index(point) >= DISPATCH_POINTS.index(Point.DISPATCH_CREATED)
    assert (child is not None) == created, point


def test_r_probe_6_dispatch_sigkilled_around_each_git_call_then_scan_audit_and_names(
    tmp_path: Path,
) -> None:
    """A kill before and after each git call of the dispatch (inside the worktree's
    creation, the creation commit, the ref update): the child exists exactly when the
    create-only ref update ran."""
    calls = _git_calls_of_a_dispatch(tmp_path)
    made = calls.index("update-ref " + next(c for c in calls if c.startswith("update-ref"))
                       .split(" ", 1)[1])
    for cut in range(len(calls)):
        for after in (False, True):
            label = f"{'after' if after else 'before'} git call {cut} ({calls[cut]})"
            ws, lead = _family(tmp_path / f"{cut}-{after}")
            _dispatch_in_a_process(ws, lead, git=CountingGit(cut, after))
            child = _settled(ws, lead, label)
            assert (child is not None) == (cut > made or (cut == made and after)), label


@pytest.mark.parametrize("point", DISPATCH_POINTS[:-3])
def test_r_id_6_names_resolve_while_a_dispatch_is_held_at_each_point(
    tmp_path: Path, point: str
) -> None:
    """Held (not killed) at each point up to its probe: the parent's name resolves to
    the parent, the child's to the child once it exists and to nobody before."""
    ws, lead = _family(tmp_path)
    stepper = Stepper(dispatch_actor(ws, lead, GOAL, "kid", RecordingLauncher(), SystemClock()))
    child = stepper.run_to(point).agent
    fresh = Workspace(ws.root)  # another process's view: nothing cached
    assert fresh.resolve_name("lead") == lead
    exists = fresh.agent_exists(child)
    assert exists == (point == Point.DISPATCH_CREATED)
    assert fresh.resolve_name("kid") == (child if exists else "kid")
    stepper.finish()
    assert Workspace(ws.root).resolve_name("kid") == child


def test_r_id_6_the_old_order_a_branch_made_first_is_ambiguous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted: the child's branch made at the parent's tip before its creation commit
    (upstream's order); held there, the parent's name is ambiguous."""
    original = Workspace.prepare_child_agent

    def branch_first(self: Workspace, parent: str, child: str, name: str, goal: object) -> str:
        self.git.run(self.repo_git, ["update-ref", AGENT_REF_PREFIX + child,
                                     self.branch_tip(parent)])
        return original(self, parent, child, name, goal)  # type: ignore[arg-type]

    monkeypatch.setattr(Workspace, "prepare_child_agent", branch_first)
    ws, lead = _family(tmp_path)
    stepper = Stepper(dispatch_actor(ws, lead, GOAL, "kid", RecordingLauncher(), SystemClock()))
    stepper.run_to(Point.DISPATCH_PREPARED)
    with pytest.raises(AmbiguousName):
        Workspace(ws.root).resolve_name("lead")


def test_r_id_6_a_fan_out_of_20_children_with_messages_by_name_during_it(
    tmp_path: Path,
) -> None:
    """A process dispatches 20 named children of ``lead`` while this one messages ``lead``
    by name as fast as it can: no message is refused (ambiguous or unknown) and each one
    sent is pending in the parent's inbox exactly once; every child exists whole."""
    ws, lead = _family(tmp_path)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            os.write(write_end, b"go")  # started: the messages run beside it from now
            here = Workspace(ws.root)
            for n in range(20):
                cli_dispatch(here, lead, f"goal {n}", f"kid{n}", RecordingLauncher())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    assert os.read(read_end, 2) == b"go"
    sent: list[str] = []
    refused: list[str] = []
    done = None
    while done is None or len(sent) < 40:
        if done is None:
            finished, status = os.waitpid(pid, os.WNOHANG)
            if finished:
                done = status
        text = f"note {len(sent) + len(refused)}"
        try:
            cli_message(Workspace(ws.root), "lead", text, "user", RecordingLauncher())
        except LernieError as exc:
            refused.append(f"{text}: {exc}")
            continue
        sent.append(text)
    os.close(read_end)
    assert os.WIFEXITED(done) and os.WEXITSTATUS(done) == 0
    assert refused == []
    bodies = [split_frontmatter(m.path.read_text())[1] or "" for m in pending(ws.inbox_dir(lead))]
    assert sorted(bodies) == sorted(sent)
    children = [i for i in ws.agent_ids() if i != lead]
    assert len(children) == 20
    for n in range(20):
        kid = ws.resolve_name(f"kid{n}")
        assert kid in children
        mail = pending(ws.inbox_dir(kid))
        assert [split_frontmatter(m.path.read_text())[1] for m in mail] == [f"goal {n}"]
    assert audit(ws.root).violations() == []
