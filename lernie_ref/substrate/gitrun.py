"""The injected git runner (R-WS-6).

Every git call is ``git -C <dest> <args…>`` with the repository-selecting
variables removed from the environment, so an agent's tool that exported
``GIT_DIR`` cannot redirect the harness. Output is decoded lossily and trimmed.
A non-zero exit raises :class:`~lernie_ref.core.errors.GitError` with upstream's text.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

SCRUBBED_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
)


class GitResult(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


class GitRunner(Protocol):
    def run(
        self, dest: Path, args: Sequence[str], *, check: bool = True, input: bytes | None = None
    ) -> GitResult:
        """Run ``git -C dest args``; raise GitError on failure when ``check``."""
        ...


class SubprocessGit:
    """The production runner: a real ``git`` process per call."""

    def __init__(self, git: str = "git", extra_env: Mapping[str, str] | None = None) -> None:
        self._git = git
        env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
        if extra_env:
            env.update(extra_env)
        self._env = env

    def run(
        self, dest: Path, args: Sequence[str], *, check: bool = True, input: bytes | None = None
    ) -> GitResult:
        from lernie_ref.core.errors import GitError

        proc = subprocess.run(
            [self._git, "-C", str(dest), *args],
            input=input,
            capture_output=True,
            env=self._env,
            check=False,
        )
        result = GitResult(
            proc.returncode,
            proc.stdout.decode("utf-8", "replace").strip(),
            proc.stderr.decode("utf-8", "replace"),
        )
        if check and proc.returncode != 0:
            raise GitError(list(args), proc.returncode, result.stderr)
        return result
