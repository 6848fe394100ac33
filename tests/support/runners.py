"""The real ``lernie`` and ``lernie-check`` commands as processes: one runner (text or
bytes), and its checks.

The child gets this process's environment without any ``LERNIE_*`` variable (a
setting of the shell running the tests never leaks into a test), plus ``env``; its
stdin is empty unless given.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

RECORDING_CLI = str(Path(__file__).with_name("recording_cli.py"))
"""A script that runs the real CLI with the launcher replaced by a recorder
(``[sys.executable, RECORDING_CLI]`` as ``prefix``; launches go to ``$LAUNCH_LOG``)."""


def _env(env: Mapping[str, str] | None) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("LERNIE_")}
    full.update(env or {})
    return full


def _argv(args: Sequence[str], prefix: Sequence[str] | None) -> list[str]:
    return [*(prefix or [sys.executable, "-m", "lernie_ref"]), *args]


def run_cli(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    prefix: Sequence[str] | None = None,
    stdin: str = "",
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m lernie_ref <args>`` (or ``<prefix> <args>``) as a real process; text."""
    return subprocess.run(
        _argv(args, prefix), input=stdin, capture_output=True, text=True, env=_env(env),
        timeout=timeout, check=False,
    )  # fmt: skip


CHECK_CLI = [sys.executable, "-m", "lernie_stateful.cli"]
"""``lernie-check`` as this interpreter runs it (a ``prefix`` for :func:`run_cli`)."""


def run_check(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``lernie-check <args>`` as a real process; text."""
    return run_cli(list(args), prefix=CHECK_CLI, timeout=timeout)


def run_cli_bytes(
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: bytes = b"",
    pass_fds: tuple[int, ...] = (),
    timeout: float = 120,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m lernie_ref <args>`` as a real process; bytes in and out."""
    return subprocess.run(
        _argv(args, None), input=stdin, capture_output=True, env=_env(env), timeout=timeout,
        check=False, pass_fds=pass_fds,
    )  # fmt: skip


def cli_ok(*args: str) -> str:
    """Run the CLI, assert it succeeded, return its stdout."""
    proc = run_cli(list(args))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def one_line(
    proc: subprocess.CompletedProcess[bytes] | subprocess.CompletedProcess[str],
    verb: str,
    code: int = 1,
) -> str:
    """Assert a declined verb: exit ``code``, nothing on stdout, one ``lernie <verb>:`` line
    (text or bytes)."""
    raw_err, raw_out = proc.stderr, proc.stdout
    err = raw_err.decode("utf-8", "replace") if isinstance(raw_err, bytes) else raw_err
    out = raw_out.decode("utf-8", "replace") if isinstance(raw_out, bytes) else raw_out
    assert proc.returncode == code, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"lernie {verb}: "), err
    return lines[0]
