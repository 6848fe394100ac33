"""One run's environment: the adapter bound to a private directory and, when it asks for
one, the kit's scripted model server.

Every case of the exact-interface scenarios and every outcome program runs in a fresh
workspace ``<dir>/ws``. An adapter whose implementation keeps state outside the workspace
(a home directory, a configuration file naming its model endpoint) gets ``{run}``, the
directory ``<dir>/run`` made for this run alone, and its ``[[setup]]`` steps are carried
out there before the workspace exists: nothing leaks from one run into the next. With a
``[server]`` table the kit starts its model server for the run and ``{model_port}`` and
``{model_url}`` name it; the server stops when the run ends.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from lernie_stateful.conform.adapter import Adapter, AdapterError, fill

SETUP_TIMEOUT = 120.0


class ServerHandle(Protocol):
    port: int
    base_url: str

    def stop(self) -> None: ...


def start_server(adapter: Adapter) -> ServerHandle:
    """The kit's scripted model server for one run, as the adapter's ``[server]`` asks."""
    from lernie_stateful.conform.model_server import start_for_adapter

    return start_for_adapter(adapter)


@contextlib.contextmanager
def prepared(adapter: Adapter, run_dir: Path) -> Iterator[Adapter]:
    """The adapter bound to ``run_dir`` (``{run}`` is ``run_dir/run``), its setup done and
    its model server running for the duration."""
    private = run_dir / "run"
    if not adapter.setup and not adapter.server:
        yield adapter.bound({"run": str(private)})
        return
    private.mkdir(parents=True, exist_ok=True)
    values = {"run": str(private)}
    with contextlib.ExitStack() as stack:
        if adapter.server:
            server = start_server(adapter)
            stack.callback(server.stop)
            values |= {"model_port": str(server.port), "model_url": server.base_url}
        bound = adapter.bound(values)
        run_setup(bound)
        yield bound


def run_setup(adapter: Adapter) -> None:
    """Carry out the adapter's ``[[setup]]`` steps, in order; a failing one is an
    :class:`AdapterError` naming it."""
    base = adapter.base_values()
    env = adapter.env({}, os.environ)
    for step in adapter.setup:
        if "write" in step:
            path = Path(fill(str(step["write"]), base))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(fill(str(step.get("text", "")), base), encoding="utf-8")
            continue
        run = step["run"]
        argv = [fill(str(a), base) for a in run] if isinstance(run, list) else []
        try:
            proc = subprocess.run(argv, env=env, capture_output=True, check=False,
                                  timeout=SETUP_TIMEOUT, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AdapterError(f"adapter {adapter.source}: setup `{' '.join(argv)}`: "
                               f"{exc}") from None
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise AdapterError(f"adapter {adapter.source}: setup `{' '.join(argv)}` exited "
                               f"{proc.returncode}" + (f": {err[-1]}" if err else ""))
