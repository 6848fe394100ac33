"""The file tools' view of an agent's worktree, through the guarded walk (R-TOOL-2, R-WS-7).

Every path a file tool (``read_file``, ``cd``, ``apply_patch``) reaches is the
worktree ``<ws>/agents/<id>/`` joined with components checked as text first
(:func:`lernie_ref.core.patch.relative_parts`: relative, no ``..``, no ``.git``)
and then opened one component at a time with the guarded walk of
:mod:`lernie_ref.substrate.guarded` (``openat`` with ``O_NOFOLLOW`` under the
descriptor of the directory above): a symbolic link anywhere on the way, or a
file that is not a regular file, is refused; nothing outside the worktree can be
read or written, whatever the links inside it point at.

The agent's current directory (R-TOOL-3) is kept off-tree, in
``<ws>/steps/<id>/cwd`` (one line: the directory relative to the worktree, empty
for its root), written by rename. A missing, unreadable or no longer reachable
record reads as the worktree's root.

Writes (``apply_patch``) are all-or-nothing as far as the file system lets them
be: :meth:`AgentFiles.write_all` first writes every new content to a temporary
file beside its target (creating missing directories), and only when every one
of them is written renames them over their targets and unlinks the deleted files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from lernie_ref.core.errors import ContainmentError, ToolError, ToolPathError, io_text
from lernie_ref.core.ids import AgentId
from lernie_ref.core.patch import relative_parts
from lernie_ref.core.vocab import MESSAGES_DIR
from lernie_ref.substrate import guarded

CWD_FILE = "cwd"
"""``steps/<id>/cwd``: the agent's current directory, relative to its worktree (R-TOOL-3)."""

Parts = tuple[str, ...]


def shown(parts: Sequence[str]) -> str:
    """A path as the agent sees it: relative to its worktree, ``.`` for the root."""
    return "/".join(parts) or "."


class AgentFiles:
    """The worktree of ``agent_id`` in the workspace ``root``, for the file tools."""

    def __init__(self, root: str | Path, agent_id: AgentId, steps_dir: str | Path) -> None:
        self.root = root
        self.agent_id = agent_id
        self.steps_dir = steps_dir

    # ------------------------------------------------------------------ walking

    @contextlib.contextmanager
    def _dir(self, parts: Parts, *, create: bool = False) -> Iterator[guarded.Dir]:
        """The directory ``parts`` below the worktree, held open; refusals name the path."""
        current = self._open_dir(parts, create=create)
        try:
            yield current
        finally:
            current.close()

    def _open_dir(self, parts: Parts, *, create: bool = False) -> guarded.Dir:
        """:meth:`_dir` without the context: the caller closes the directory."""
        current = guarded.walk(self.root, ("agents", self.agent_id))
        try:
            for depth, name in enumerate(parts):
                try:
                    nxt = current.sub(name, create=create, last=depth == len(parts) - 1)
                except ContainmentError:
                    raise ToolPathError(
                        f"{shown(parts[: depth + 1])} is a symbolic link; refused: file tools "
                        "never follow a link"
                    ) from None
                except FileNotFoundError:
                    raise ToolError(f"{shown(parts[: depth + 1])}: no such directory") from None
                except NotADirectoryError:
                    raise ToolError(f"{shown(parts[: depth + 1])}: not a directory") from None
                except FileExistsError:
                    raise ToolError(f"{shown(parts[: depth + 1])}: not a directory") from None
                except OSError as exc:
                    raise ToolError(f"{shown(parts[: depth + 1])}: {io_text(exc)}") from None
                current.close()
                current = nxt
        except BaseException:
            current.close()
            raise
        return current

    def _open_file(self, where: guarded.Dir, parts: Parts, flags: int) -> int:
        try:
            return where.open(parts[-1], flags)
        except ContainmentError as exc:
            if "symbolic link" in str(exc):
                raise ToolPathError(
                    f"{shown(parts)} is a symbolic link; refused: file tools never follow a link"
                ) from None
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(where.lstat(parts[-1]).st_mode):
                    raise ToolError(f"{shown(parts)}: is a directory") from None
            raise ToolPathError(f"{shown(parts)} is not a regular file; refused") from None
        except FileNotFoundError:
            raise ToolError(f"{shown(parts)}: no such file") from None
        except IsADirectoryError:
            raise ToolError(f"{shown(parts)}: is a directory") from None
        except OSError as exc:
            raise ToolError(f"{shown(parts)}: {io_text(exc)}") from None

    def require_dir(self, parts: Parts) -> None:
        """``parts`` is a real directory of the worktree (no link on the way)."""
        with self._dir(parts):
            pass

    # --------------------------------------------------------------- the cwd

    def cwd(self) -> Parts:
        """R-TOOL-3: the agent's current directory; its worktree root when there is no
        usable record (missing, unreadable, or no longer a real directory)."""
        try:
            with guarded.walk_tail(self.steps_dir, 2) as steps:
                raw = steps.read_bytes(CWD_FILE)
            parts = relative_parts(raw.decode("utf-8").rstrip("\n"))
            self.require_dir(parts)
        except (OSError, UnicodeDecodeError, ToolError, ContainmentError):
            return ()
        return parts

    def set_cwd(self, parts: Parts) -> None:
        """Record ``parts`` as the current directory (written aside, then renamed)."""
        data = (shown(parts) if parts else "").encode("utf-8") + b"\n"
        try:
            with guarded.walk_tail(self.steps_dir, 2, create=True) as steps:
                temp = f".{CWD_FILE}.{os.urandom(6).hex()}.tmp"
                steps.write_new(temp, data)
                try:
                    steps.rename(temp, steps, CWD_FILE)
                except BaseException:
                    with contextlib.suppress(OSError):
                        steps.unlink(temp)
                    raise
        except (OSError, ContainmentError) as exc:
            raise ToolError(f"record the current directory: {exc}") from None

    def resolve(self, text: str, what: str = "path") -> Parts:
        """``text`` (relative to the current directory) as components below the worktree."""
        return self.cwd() + relative_parts(text, what)

    # --------------------------------------------------------------- reading

    def read(self, parts: Parts, cap: int) -> tuple[bytes, int]:
        """The first ``cap`` bytes of the regular file ``parts`` and its whole size."""
        if not parts:
            raise ToolError(". is a directory")
        with self._dir(parts[:-1]) as where:
            fd = self._open_file(where, parts, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            chunks: list[bytes] = []
            left = cap
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
        except OSError as exc:
            raise ToolError(f"{shown(parts)}: {io_text(exc)}") from None
        finally:
            os.close(fd)
        data = b"".join(chunks)
        return data, max(size, len(data))

    def current(self, parts: Parts) -> tuple[bytes, int] | None:
        """The whole file ``parts`` and its permission bits, ``None`` when nothing is there."""
        if not parts:
            raise ToolError(". is a directory")
        try:
            with self._dir(parts[:-1]) as where:
                try:
                    info = where.lstat(parts[-1])
                except FileNotFoundError:
                    return None
                except OSError as exc:
                    raise ToolError(f"{shown(parts)}: {io_text(exc)}") from None
                if stat.S_ISDIR(info.st_mode):
                    raise ToolError(f"{shown(parts)}: is a directory")
                fd = self._open_file(where, parts, os.O_RDONLY)
        except ToolError as exc:
            if str(exc).endswith("no such directory"):
                return None
            raise
        try:
            chunks: list[bytes] = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks), stat.S_IMODE(os.fstat(fd).st_mode)
        except OSError as exc:
            raise ToolError(f"{shown(parts)}: {io_text(exc)}") from None
        finally:
            os.close(fd)

    # --------------------------------------------------------------- writing

    @staticmethod
    def check_writable(parts: Parts) -> None:
        """R-TOOL-2: the transcript is the harness's: no file tool writes under ``messages/``."""
        if not parts:
            raise ToolError(". is a directory")
        if parts[0] == MESSAGES_DIR:
            raise ToolPathError(
                f"{shown(parts)} is in the transcript ({MESSAGES_DIR}/), which only the "
                "harness writes; refused"
            )

    def write_all(
        self, writes: Mapping[Parts, tuple[bytes, int] | None]
    ) -> None:
        """Give every path of ``writes`` its new bytes and mode (``None``: delete it).

        Every new content is first written to a temporary file beside its target; only
        when all are written are they renamed into place and the deletions made. A failure
        while writing removes the temporary files written so far and changes nothing else
        (directories it created stay, empty).
        """
        held: list[tuple[guarded.Dir, str, str | None]] = []  # (dir, name, temp or None)
        try:
            for parts, content in writes.items():
                self.check_writable(parts)
                where = self._open_dir(parts[:-1], create=content is not None)
                if content is None:
                    held.append((where, parts[-1], None))
                    continue
                data, mode = content
                temp = f".{parts[-1][:100]}.{os.urandom(6).hex()}.patch.tmp"
                try:
                    fd = where.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                except OSError as exc:
                    where.close()
                    raise ToolError(f"{shown(parts)}: {io_text(exc)}") from None
                held.append((where, parts[-1], temp))
                try:
                    guarded.write_all(fd, data)
                    os.fchmod(fd, mode)
                except OSError as exc:
                    raise ToolError(f"{shown(parts)}: {io_text(exc)}") from None
                finally:
                    os.close(fd)
        except BaseException:
            for where, _, leftover in held:
                if leftover is not None:
                    with contextlib.suppress(OSError):
                        where.unlink(leftover)
                where.close()
            raise
        try:
            for where, name, staged in held:
                try:
                    if staged is None:
                        where.unlink(name)
                    else:
                        where.rename(staged, where, name)
                except OSError as exc:
                    if staged is None and exc.errno == errno.ENOENT:
                        continue
                    raise ToolError(f"{name}: {io_text(exc)}") from None
        finally:
            for where, _, staged in held:
                if staged is not None:
                    with contextlib.suppress(OSError):
                        where.unlink(staged)
                where.close()


def new_file_mode() -> int:
    """The mode a new file gets: 0666 less the process's umask."""
    try:  # read, not set and restored: another thread may be creating files meanwhile
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o644
