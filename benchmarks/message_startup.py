"""Benchmark: start-up cost of ``lernie message`` against the bare interpreter (R-CLI-5).

Runs, N times each, (a) ``python -c pass``, (b) ``python -m lernie_ref message``
into a real workspace while the recipient's executor lock is held (so the verb
takes its whole path — guards, git existence check, durable deposit, probe —
and launches nothing), and prints the medians, the overhead and the modules the
message path imports beyond the bare interpreter. A benchmark measures; no test
times anything.

    python benchmarks/message_startup.py [-n 30]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _time(cmd: list[str], n: int, env: dict[str, str]) -> list[float]:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=30, help="runs per command (default 30)")
    args = parser.parse_args()

    from lernie_ref.substrate.lock import try_acquire
    from lernie_ref.substrate.workspace import create_workspace

    env = {k: v for k, v in os.environ.items() if k != "LERNIE_CONV_BRANCH"}
    with tempfile.TemporaryDirectory() as tmp:
        ws = create_workspace(Path(tmp) / "ws")
        agent = "20260101T000000Z-00000001"
        ws.create_root_agent(agent, "bench", "benchmark agent")
        lock = try_acquire(ws.inbox_dir(agent))
        assert lock is not None
        try:
            bare = _time([sys.executable, "-c", "pass"], args.n, env)
            msg_cmd = [sys.executable, "-m", "lernie_ref", "message", str(ws.root), agent, "hi"]
            message = _time(msg_cmd, args.n, env)
            probe = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import sys, json; before = set(sys.modules); "
                    "from lernie_ref.cli import main; "
                    f"main(['message', {str(ws.root)!r}, {agent!r}, 'x']); "
                    "print(json.dumps(sorted(set(sys.modules) - before)))",
                ],
                check=True,
                env=env,
                capture_output=True,
                text=True,
            )
        finally:
            lock.release()
    extra = json.loads(probe.stdout.strip().splitlines()[-1])
    b, m = statistics.median(bare), statistics.median(message)
    print(f"bare interpreter      median {b:7.1f} ms  (n={args.n})")
    print(f"lernie message (busy) median {m:7.1f} ms  (n={args.n})")
    print(f"overhead              {m - b:7.1f} ms  ({m / b:.1f}x the bare interpreter)")
    print(f"modules imported by the message path: {len(extra)}")
    print("  lernie_ref: " + ", ".join(x for x in extra if x.startswith("lernie_ref")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
