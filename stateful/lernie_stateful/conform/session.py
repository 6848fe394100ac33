"""One run's environment: the adapter bound to a private directory, after the kit's model
server (:func:`lernie_stateful.conform.model_server.served`) has filled in its address.

Every case of the exact-interface scenarios and every outcome program runs in a fresh
workspace ``<dir>/ws``. An adapter whose implementation keeps state outside the workspace
(a home directory, a configuration file naming its model endpoint) gets ``{run}``, the
directory ``<dir>/run`` made for this run alone, and its ``[[setup]]`` steps are carried
out there before the workspace exists: nothing leaks from one run into the next. Setup
text may name the model server's ``{model_port}`` and ``{model_url}`` (a configuration
file pointing the implementation's model client at the kit's server).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from lernie_stateful.conform.adapter import Adapter, AdapterError, fill

SETUP_TIMEOUT = 120.0


@contextlib.contextmanager
def prepared(adapter: Adapter, run_dir: Path, record: Path | None = None) -> Iterator[Adapter]:
    """For one case or program in ``run_dir``: the model server running (when the adapter
    has ``[model_server]``; its requests written to ``record`` at the end), the adapter
    bound to ``{run}`` (``run_dir/run``) and its setup done."""
    from lernie_stateful.conform.model_server import served

    private = run_dir / "run"
    with served(adapter, record) as live:
        bound = live.bound({"run": str(private)})
        if bound.setup:
            private.mkdir(parents=True, exist_ok=True)
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
