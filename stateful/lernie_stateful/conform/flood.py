"""The same-sender flood: message accounting under many concurrent writers (SPEC I-5, R-DEP-6).

``writers`` threads each run ``per_writer`` ``message`` commands one after another, all from
the user into one agent, every body distinct; the agent's driver drains while they write.
After quiescence the kit accounts for every message from the files alone: each body a
writer accepted (exit 0) must be delivered or pending exactly once, byte for byte, and every
writer must have exited 0. Nothing here asks the model: the number of messages is far
beyond what its search can list, and the kit knows what it sent.

Whether a same-sender race loses anything is a matter of timing: a loss reported here is a
real one (the bytes are gone), and a clean run proves nothing about the next.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from lernie_stateful.conform.adapter import Adapter
from lernie_stateful.conform.outcome import accounting_faults, agent_ids, body_faults, user_bodies
from lernie_stateful.conform.quiescence import Failed, wait_quiescent

FLOOD_QUIESCENCE = 300.0


@dataclass
class FloodResult:
    writers: int
    per_writer: int
    accepted: int = 0
    found: int = 0
    landed_anyway: int = 0  # messages found although their writer exited non-zero
    failures: list[str] = field(default_factory=list)  # writer exits other than 0
    faults: list[str] = field(default_factory=list)  # lost, duplicated, torn
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.failures and not self.faults

    def one_line(self) -> str:
        sent = self.writers * self.per_writer
        head = (f"{sent} messages from {self.writers} concurrent writers: {self.accepted} "
                f"accepted, {self.found} found in the transcript or the inbox"
                + (f" ({self.landed_anyway} of them from writers that failed)"
                   if self.landed_anyway else ""))
        return "; ".join([head, *self.faults, *self.failures[:3]]
                         + ([f"... {len(self.failures) - 3} more writer failures"]
                            if len(self.failures) > 3 else []))


def flood(adapter: Adapter, ws: Path, writers: int = 8, per_writer: int = 25) -> FloodResult:
    """Run the flood in a fresh workspace ``ws`` through the adapter (already bound to its
    run, :func:`lernie_stateful.conform.session.prepared`)."""
    t0 = time.monotonic()
    out = FloodResult(writers, per_writer)
    env = adapter.env({}, os.environ)

    def run(verb: str, values: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(adapter.argv(verb, {"ws": str(ws), **values}), env=env,
                              capture_output=True, check=False, timeout=120,
                              stdin=subprocess.DEVNULL)

    for verb, values in (("new", {}), ("prompt", {"text": "the flood's target", "name": "P"})):
        proc = run(verb, values)
        if proc.returncode != 0:
            out.failures.append(f"`{verb}` exited {proc.returncode}: "
                                + proc.stderr.decode("utf-8", "replace").strip()[:200])
            return out
    try:
        wait_quiescent(ws, adapter.layout)
    except Failed as exc:
        out.failures.append(f"before the flood: {exc}")
        return out
    aid = agent_ids(ws, adapter).get("P", "P")
    accepted: list[bytes] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        for k in range(per_writer):
            body = f"flood message {k + 1} of writer {w + 1}"
            try:
                proc = run("message", {"agent": aid, "content": body})
            except subprocess.TimeoutExpired:
                with lock:
                    out.failures.append(f"writer {w + 1}, message {k + 1}: no exit in 120s")
                continue
            with lock:
                if proc.returncode == 0:
                    accepted.append(body.encode())
                else:
                    err = proc.stderr.decode("utf-8", "replace").strip()
                    out.failures.append(f"writer {w + 1}, message {k + 1}: exit "
                                        f"{proc.returncode} ({err[:200]})")

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        wait_quiescent(ws, adapter.layout, FLOOD_QUIESCENCE)
    except Failed as exc:
        out.faults.append(f"after the flood: {exc}")
    prompt = b"the flood's target"
    out.accepted = len(accepted)
    found = [b for b in user_bodies(ws, adapter, aid) if b != prompt]
    out.found = len(found)
    out.landed_anyway = len(set(found) - set(accepted))
    out.faults += accounting_faults(ws, adapter, {"P": [prompt, *accepted]})
    out.faults += body_faults(ws, adapter, {"P": [prompt, *(
        f"flood message {k + 1} of writer {w + 1}".encode()
        for w in range(writers) for k in range(per_writer))]})
    out.seconds = time.monotonic() - t0
    return out
