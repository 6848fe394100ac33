"""The injected git runner (R-WS-6, R-WS-9).

Every git call is ``git -C <dest> <args…>`` with the repository-selecting
variables removed from the environment, so an agent's tool that exported
``GIT_DIR`` cannot redirect the harness. Output is decoded lossily and trimmed.
A non-zero exit raises :class:`~lernie_ref.core.errors.GitError` with upstream's
text, git's stderr folded into its one line.

A call that fails only because a git lock file exists (``Unable to create
'….lock': File exists``) is retried a bounded number of times with a doubling
pause (R-WS-9): a shared lock of ``repo.git`` (``packed-refs.lock``, another
agent's ref) belongs to whoever holds it, may be a live git's, and is never
removed here; when it is still there after the last try the error says so.
Nothing the protocol runs holds such a lock for long, so a short wait covers a
live owner, and a lock left by a dead one ends in one clear error.
"""

from __future__ import annotations

import os
import time
from collections import namedtuple

from lernie_ref.core import TYPE_CHECKING, Protocol
from lernie_ref.substrate.spawn import run_captured

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path
    from typing import NamedTuple

SCRUBBED_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
)

LOCK_RETRIES = 5
"""R-WS-9: tries after the first when a git lock file is in the way."""
LOCK_FIRST_PAUSE = 0.05
"""R-WS-9: the first pause in seconds; each later one doubles (0.05 … 0.8, 1.55 s in all)."""

_LOCK_EXISTS = r"Unable to create '([^']+\.lock)': File exists"


def lock_in_the_way(stderr: str) -> str | None:
    """The lock file git could not create, when that is why the call failed; else ``None``."""
    import re  # only a failed call gets here

    found = re.search(_LOCK_EXISTS, stderr)
    return found.group(1) if found else None


if TYPE_CHECKING:

    class GitResult(NamedTuple):
        returncode: int
        stdout: str
        stderr: str

else:
    GitResult = namedtuple("GitResult", ("returncode", "stdout", "stderr"))


class GitRunner(Protocol):
    def run(
        self, dest: Path, args: Sequence[str], *, check: bool = True, input: bytes | None = None
    ) -> GitResult:
        """Run ``git -C dest args``; raise GitError on failure when ``check``."""
        ...


class SubprocessGit:
    """The production runner: a real ``git`` process per call, started with
    ``posix_spawn`` (:mod:`~lernie_ref.substrate.spawn`).

    ``sleep`` is injected so a test can act between the tries of a locked call.
    """

    def __init__(
        self,
        git: str = "git",
        extra_env: Mapping[str, str] | None = None,
        *,
        lock_retries: int = LOCK_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._git = git
        env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
        if extra_env:
            env.update(extra_env)
        self._env = env
        self._lock_retries = lock_retries
        self._sleep = sleep

    def _once(self, dest: Path, args: Sequence[str], input: bytes | None) -> GitResult:
        code, out, err = run_captured([self._git, "-C", str(dest), *args], self._env, input)
        text = out.decode("utf-8", "replace").strip()
        return GitResult(code, text, err.decode("utf-8", "replace"))

    def run(
        self, dest: Path, args: Sequence[str], *, check: bool = True, input: bytes | None = None
    ) -> GitResult:
        from lernie_ref.core.errors import GitError

        result = self._once(dest, args, input)
        pause = LOCK_FIRST_PAUSE
        tries = 0
        while result.returncode != 0 and tries < self._lock_retries:
            if lock_in_the_way(result.stderr) is None:
                break
            self._sleep(pause)
            pause *= 2
            tries += 1
            result = self._once(dest, args, input)
        if check and result.returncode != 0:
            note = ""
            if tries and lock_in_the_way(result.stderr) is not None:
                note = f"the lock file was still there after {tries + 1} tries"
            raise GitError(list(args), result.returncode, result.stderr, note)
        return result
