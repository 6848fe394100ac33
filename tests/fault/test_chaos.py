"""Item: chaos with real processes heals after one `lernie scan` (I-1, I-4, I-5, R-SCAN-10).

A tree of four agents (a root ``r``, its children ``a`` and ``b``, ``a``'s child
``c``) runs real detached drivers with the scripted model. Writer processes (all with
the operator's sender, so they race for the same deposit numbers) send messages to
every agent; a third of them carry a ``@message`` directive, so the agents message
each other as well. Meanwhile a chaos loop with a seeded schedule SIGKILLs drivers
(one kill mode per run: the driver's pid alone, or its whole process group with the
git it runs), and runs `lernie scan` and `lernie stop`. At every turn it samples the
kernel's view of who holds each agent's lease.

Then the chaos ends, the launched processes finish, `lernie scan` runs once (the
documented recovery, SPEC R-SCAN-10) and nothing else, and the checks read the files
on disk: every message a writer sent is delivered exactly once, byte for byte (one
whose `lernie message` failed at most once); every inbox is empty; no agent is left
with work due unless a stop parked it; no process is left; and `lernie-check audit`
(an independent reader of the workspace) finds no violation, which covers the sends
the agents made: each is delivered once or settled as died.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lernie_ref.core.frontmatter import split_frontmatter
from lernie_ref.inbox import pending
from lernie_ref.substrate.workspace import Workspace, create_workspace
from tests.support.processes import processes_naming
from tests.support.runners import CHECK_CLI, run_cli
from tests.support.waits import wait_quiescent

NAMES = ("r", "a", "b", "c")
SENDER = "user"
"""Every writer writes as the operator, so all of them race for the same deposit numbers
(a sender that is no agent: the agents' replies to it go nowhere)."""

WRITER = """
import json, random, sys, time
from lernie_ref.cli import main
ws, log, names, sender, count, seed, pause = sys.argv[1:8]
rng = random.Random(int(seed))
names = names.split(",")
with open(log, "a") as out:
    for i in range(int(count)):
        to = rng.choice(names)
        token = f"{sender}-{seed}-{i:04d}"
        body = f"msg {token}"
        if rng.random() < 1 / 3:
            other = rng.choice([n for n in names if n != to])
            body += f"\\n@message {other} relay {token}"
        code = main(["message", ws, to, body])
        out.write(json.dumps([code, to, body]) + "\\n")
        out.flush()
        time.sleep(rng.uniform(0, float(pause)))
"""


@dataclass
class Chaos:
    kills: int = 0
    scans: int = 0
    stops: int = 0
    samples: int = 0
    overlaps: list[str] = field(default_factory=list)


def advance_pids(root: Path) -> list[int]:
    """Live ``lernie advance`` processes of this workspace."""
    found = []
    for pid in processes_naming(str(root)):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"advance" in argv:
            found.append(pid)
    return found


def lease_holders(root: Path, inboxes: dict[str, Path]) -> dict[str, set[int]]:
    """For each agent, the processes whose open descriptor of its inbox carries the flock
    (read from /proc/<pid>/fdinfo: the kernel lists a lock under the descriptor that holds it).
    A child that shares its parent's description (between fork and exec) is not counted."""
    by_path = {str(p): agent for agent, p in inboxes.items()}
    holders: dict[str, set[int]] = {agent: set() for agent in inboxes}
    parent: dict[int, int] = {}
    for pid in processes_naming(str(root)):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            parent[pid] = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        for fd in fds:
            try:
                agent = by_path.get(os.readlink(f"/proc/{pid}/fd/{fd}"))
                if agent is None:
                    continue
                info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
            except OSError:
                continue
            if any(line.startswith("lock:") and "FLOCK" in line for line in info.splitlines()):
                holders[agent].add(pid)
    return {a: {p for p in pids if parent.get(p) not in pids} for a, pids in holders.items()}


def cli(*args: str) -> str:
    proc = run_cli(list(args))
    assert proc.returncode == 0, (args, proc.stderr)
    return proc.stdout.strip()


def build_tree(ws: Workspace) -> dict[str, str]:
    root = str(ws.root)
    ids = {"r": cli("prompt", root, "lead the team", "--name", "r")}
    ids["a"] = cli("dispatch", root, ids["r"], "build", "--name", "a")
    ids["b"] = cli("dispatch", root, ids["r"], "test", "--name", "b")
    ids["c"] = cli("dispatch", root, ids["a"], "help a", "--name", "c")
    wait_quiescent(ws)
    return ids


def run_chaos(
    ws: Workspace, ids: dict[str, str], mode: str, writers: int, per_writer: int, seed: int
) -> tuple[Chaos, list[list[object]]]:
    """Writers send while the chaos loop kills, scans and stops; the loop goes on after the
    writers end while drivers still run (the agents' own sends), for at most 30 more turns."""
    rng = random.Random(seed)
    logs = [ws.root.parent / f"writer-{w}.log" for w in range(writers)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(ws.root), str(log),
             ",".join(NAMES), f"w{w}", str(per_writer), str(seed * 100 + w),
             "0.1"],
            env={**os.environ, "LERNIE_CONV_BRANCH": SENDER},
        )
        for w, log in enumerate(logs)
    ]
    inboxes = {agent: ws.inbox_dir(agent) for agent in ids.values()}
    chaos = Chaos()

    def sample() -> None:
        chaos.samples += 1
        for agent, pids in lease_holders(ws.root, inboxes).items():
            if len(pids) > 1:
                chaos.overlaps.append(f"{agent}: {sorted(pids)}")

    after = 0
    while after < 30:
        if all(p.poll() is not None for p in procs):
            after += 1
            if not advance_pids(ws.root):
                break
        time.sleep(rng.uniform(0.02, 0.2))
        sample()
        action = rng.choices(["kill", "scan", "stop"], weights=[8, 2, 1])[0]
        if action == "kill":
            drivers = advance_pids(ws.root)
            if drivers:
                victim = rng.choice(sorted(drivers))
                try:
                    if mode == "group":
                        os.killpg(os.getpgid(victim), signal.SIGKILL)
                    else:
                        os.kill(victim, signal.SIGKILL)
                    chaos.kills += 1
                except ProcessLookupError:
                    pass
        elif action == "scan":
            run_cli(["scan", str(ws.root)])
            chaos.scans += 1
        else:
            run_cli(["stop", str(ws.root), ids[rng.choice(NAMES)]])
            chaos.stops += 1
    for p in procs:
        assert p.wait() == 0
    sent = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    assert len(sent) == writers * per_writer
    return chaos, sent


def delivered_bodies(ws: Workspace, ids: dict[str, str]) -> Counter[tuple[str, str]]:
    """(agent name, body) of every delivered message, counted, from the worktrees."""
    found: Counter[tuple[str, str]] = Counter()
    for name, agent in ids.items():
        messages = ws.worktree(agent) / "messages"
        for entry in sorted(messages.iterdir()):
            if entry.name.endswith(".md"):
                found[(name, split_frontmatter(entry.read_text())[1])] += 1
    return found


def chaos_run(tmp_path: Path, mode: str, writers: int, per_writer: int, seed: int) -> str:
    ws = create_workspace(tmp_path / "ws")
    ids = build_tree(ws)
    started = time.monotonic()
    chaos, sent = run_chaos(ws, ids, mode, writers, per_writer, seed)
    assert chaos.overlaps == [], chaos.overlaps  # I-1 at every sampled moment

    # The recovery: let launched processes finish, then one `lernie scan`, nothing else.
    wait_quiescent(ws, timeout=300)
    cli("scan", str(ws.root))
    wait_quiescent(ws, timeout=300)
    seconds = time.monotonic() - started

    delivered = delivered_bodies(ws, ids)
    stranded = [
        (code, to, body) for code, to, body in sent
        if delivered[(str(to), str(body))] != 1 and code == 0
    ]
    assert stranded == [], stranded[:5]
    twice = [(to, body) for code, to, body in sent if delivered[(str(to), str(body))] > 1]
    assert twice == [], twice[:5]
    for name, agent in ids.items():
        assert pending(ws.inbox_dir(agent)) == [], name
    status = json.loads(cli("status", str(ws.root), "--json"))["agents"]
    for row in status:
        assert row["live"] is False and row["pending"] == 0, row
        assert row["died_mid_work"] is False, row
        newest = max(os.listdir(ws.worktree(row["id"]) / "messages"))
        answered = newest.endswith(".json") and "tool" not in newest
        assert answered or row["last_epitaph"] == "stopped", (row, newest)
    assert processes_naming(str(ws.root)) == []
    audit = run_cli(["audit", str(ws.root)], prefix=CHECK_CLI)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    relays = sum(n for (_, body), n in delivered.items() if (body or "").startswith("relay "))
    logs = [ws.driver_log(agent) for agent in ids.values()]
    cleared = sum(
        log.read_text().count("stale git lock") for log in logs if log.exists()
    )
    figures = (
        f"chaos ({mode}): {len(sent)} messages from {writers} writers, {relays} relayed by "
        f"agents, {chaos.kills} kills, {chaos.scans} scans, {chaos.stops} stops, "
        f"{cleared} stale git locks cleared, {chaos.samples} lease samples, "
        f"{seconds:.0f} s, stranded 0"
    )
    return figures


@pytest.mark.parametrize("mode", ["pid", "group"])
def test_chaos_ci_sized_heals_after_one_scan(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = chaos_run(tmp_path, mode, writers=4, per_writer=25, seed=13)
    with capsys.disabled():
        print(f"\n  {figures}")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["pid", "group"])
def test_chaos_long_run_heals_after_one_scan(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = chaos_run(tmp_path, mode, writers=8, per_writer=50, seed=1313)
    with capsys.disabled():
        print(f"\n  {figures}")


HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
os.set_inheritable(fd, True)
if sys.argv[2] == "leak" and os.fork() == 0:  # a copy of the lease that outlives its fork
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", sys.argv[1]])
    os._exit(0)
time.sleep(60)
"""


@pytest.mark.parametrize("how", ["alone", "leak"])
def test_i_1_the_lease_sampler_counts_every_process_that_holds_a_lease(
    how: str, tmp_path: Path
) -> None:
    """The chaos check of I-1 can fail: a copy of a locked description kept by a process
    that is not the holder's child (the leak bl-7318 is about) is a second holder."""
    inbox = tmp_path / "ws" / "inbox" / "x"
    inbox.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(inbox), how])
    try:
        want = 2 if how == "leak" else 1
        deadline = time.monotonic() + 60
        while len(seen := lease_holders(tmp_path / "ws", {"x": inbox})["x"]) < want:
            assert time.monotonic() < deadline, seen
            time.sleep(0.05)
        assert holder.pid in seen and len(seen) == want
    finally:
        for pid in processes_naming(str(inbox)):
            os.kill(pid, signal.SIGKILL)
        holder.wait()
