"""A child process's three pipes served at once, bounded by a stop check and a timeout.

The command model (:mod:`lernie_ref.adapters.command`) writes its request to the model's
stdin and reads stdout and stderr; each pipe has a thread of its own, so no pipe buffer
can fill up with both sides waiting on each other whatever the sizes or the model's
reading speed. A stop or the timeout kills the model's whole process group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from typing import IO

from lernie_ref.adapters.protocol import StopCheck

_POLL_S = 0.05


def _pump_in(pipe: IO[bytes], payload: bytes) -> None:
    """Write the whole request, then close stdin; a model that exits unread is not an error."""
    with contextlib.suppress(OSError):  # BrokenPipeError: the model closed its stdin
        view = memoryview(payload)
        while view:
            written = os.write(pipe.fileno(), view[: 1 << 16])
            view = view[written:]
    with contextlib.suppress(OSError):
        pipe.close()


def _pump_out(pipe: IO[bytes], sink: list[bytes]) -> None:
    with contextlib.suppress(OSError):
        while chunk := os.read(pipe.fileno(), 1 << 16):
            sink.append(chunk)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def exchange(
    proc: subprocess.Popen[bytes], payload: bytes, should_stop: StopCheck, timeout: float | None
) -> tuple[bytes, bytes] | str | None:
    """Feed ``payload`` and collect stdout and stderr concurrently until the model is done.

    Returns ``(stdout, stderr)``; ``None`` after a stop; ``"timeout"`` when ``timeout``
    seconds passed first. Either way out the model's process group is killed; the pipe
    threads then see end-of-file and finish.
    """
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out: list[bytes] = []
    err: list[bytes] = []
    threads = [
        threading.Thread(target=_pump_in, args=(proc.stdin, payload), daemon=True),
        threading.Thread(target=_pump_out, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_pump_out, args=(proc.stderr, err), daemon=True),
    ]
    for thread in threads:
        thread.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    result: str | None = ""
    # Done when the model exited and both output pipes reached end-of-file (a helper it
    # left behind holding them open keeps the call going until the deadline).
    while proc.poll() is None or threads[1].is_alive() or threads[2].is_alive():
        if should_stop():
            result = None
            break
        if deadline is not None and time.monotonic() >= deadline:
            result = "timeout"
            break
        waiting = [t for t in threads[1:] if t.is_alive()]
        if waiting:
            waiting[0].join(_POLL_S)
        else:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(_POLL_S)
    if result != "":
        _kill_group(proc)
    for thread in threads:
        thread.join()
    for pipe in (proc.stdout, proc.stderr):
        pipe.close()
    if result != "":
        return result
    return b"".join(out), b"".join(err)
