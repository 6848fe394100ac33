"""Guarded opening: the one way the protocol reaches a path it writes (R-WS-7).

Theory of operation. Every path the protocol writes is the workspace root
joined with fixed names and guarded ids (``inbox/<id>``, ``steps/<id>/driver.log``,
``agents/<id>/messages/NNN-x.md``, …). The root is opened once, following
symlinks (operators point a workspace path at another disk); every component
below it is opened with ``openat(dir_fd, name, O_DIRECTORY|O_NOFOLLOW)``
relative to the descriptor of the directory already verified above it, and the
final file with ``O_NOFOLLOW`` relative to its directory's descriptor.

Why this cannot race: the kernel resolves exactly one name per call, inside a
directory this process already holds open, and refuses to follow that name if
it is a symlink. Swapping a component for a link after it was opened changes
nothing for this walk (it holds the real directory), and swapping it before
makes the open fail. There is no check-then-use gap because the check *is* the
open that the write then uses (``mkdirat``, ``openat``, ``linkat``,
``renameat``, ``unlinkat`` all take the held descriptor).

A symlink below the root, or a file that is not a regular file (a FIFO, a
device) where a file belongs, is refused with a
:class:`~lernie_ref.core.errors.ContainmentError` naming the path. Any other
non-directory where a directory belongs, or a directory where a file belongs,
fails with the OS error itself (``Not a directory``, ``Is a directory``), which
the caller reports with the path, as upstream does.

Kept import-light on purpose (the ``lernie message`` path, R-CLI-5): ``os``,
``stat``, ``errno`` and the error module only.
"""

from __future__ import annotations

import errno
import os
import stat

from lernie_ref.core.errors import ContainmentError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
DIR_FLAGS = _DIR_FLAGS
"""How a directory below the root is opened relative to its parent's descriptor."""
_CREATE_NEW = os.O_CREAT | os.O_EXCL


def _is_link(parent_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _link_refused(shown: str) -> ContainmentError:
    return ContainmentError(
        f"{shown} is a symbolic link; refused: nothing below the workspace root is "
        "reached through a link (R-WS-7)"
    )


def _named(exc: OSError, path: str) -> OSError:
    """``exc`` again, its filename the full path (a bare name under a held descriptor names
    nothing a reader can find), so a caller's one line can say which path failed."""
    return type(exc)(exc.errno, exc.strerror, path)


def _check_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise ContainmentError(f"{name!r} is not one path component; refused (R-WS-7)")


class Dir:
    """A directory held open by descriptor; ``path`` is only for messages.

    Use as a context manager, or call :meth:`close`.
    """

    __slots__ = ("fd", "path")

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path

    def __enter__(self) -> Dir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def show(self, name: str) -> str:
        """``os.path.join(self.path, name)``, without its generic code (every step of a walk
        names its directory)."""
        path = self.path
        if name[:1] == "/":
            return name
        return f"{path}/{name}" if path and path[-1] != "/" else f"{path}{name}"

    def down(self, parts: tuple[str, ...], *, create: bool = False) -> Dir:
        """The directory ``parts`` below this one, one :meth:`sub` per component; this
        descriptor is handed over: closed once the next one is open, or on an error."""
        current = self
        try:
            for index, name in enumerate(parts):
                nxt = current.sub(name, create=create, last=index == len(parts) - 1)
                current.close()
                current = nxt
        except BaseException:
            current.close()
            raise
        return current

    def sub(self, name: str, *, create: bool = False, last: bool = True) -> Dir:
        """The directory ``name`` in this one (made with mode 0777 & ~umask when ``create``).

        A non-directory met while creating reads as ``mkdir -p`` reports it: ``File
        exists`` for the ``last`` component, ``Not a directory`` for one above it.
        """
        _check_name(name)
        while True:
            try:
                return Dir(os.open(name, _DIR_FLAGS, dir_fd=self.fd), self.show(name))
            except FileNotFoundError:
                if not create:
                    raise
            except OSError as exc:
                # A link is refused by name; any other non-directory keeps its OS error
                # (``Not a directory``), which the caller reports with the path.
                if exc.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link(self.fd, name):
                    raise _link_refused(self.show(name)) from None
                if exc.errno == errno.ENOTDIR and create and last:
                    raise FileExistsError(
                        errno.EEXIST, os.strerror(errno.EEXIST), self.show(name)
                    ) from None
                raise _named(exc, self.show(name)) from None
            try:
                os.mkdir(name, dir_fd=self.fd)
            except FileExistsError:
                continue  # made by someone else meanwhile: open what is there (and check it)

    def open(self, name: str, flags: int, mode: int = 0o666) -> int:
        """``openat`` of the file ``name`` here, never through a link; a descriptor.

        ``O_NONBLOCK`` is added for reads, so a FIFO planted under a file's name
        cannot hang the caller, and anything but a regular file is refused.
        """
        _check_name(name)
        extra = os.O_NOFOLLOW | os.O_CLOEXEC
        if flags & (os.O_WRONLY | os.O_RDWR) == 0:
            extra |= os.O_NONBLOCK
        try:
            fd = os.open(name, flags | extra, mode, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP and _is_link(self.fd, name):
                raise _link_refused(self.show(name)) from None
            raise _named(exc, self.show(name)) from None  # the caller reports it with the path
        try:
            # A name this open created (O_CREAT|O_EXCL fails on any name already there, a
            # link included) is a new regular file: only another open needs the check.
            if flags & _CREATE_NEW != _CREATE_NEW and not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ContainmentError(f"{self.show(name)} is not a regular file; refused (R-WS-7)")
            if extra & os.O_NONBLOCK:
                os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def read_bytes(self, name: str) -> bytes:
        """The whole regular file ``name`` (never through a link)."""
        fd = self.open(name, os.O_RDONLY)
        try:
            chunks: list[bytes] = []
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
        finally:
            os.close(fd)

    def write_new(self, name: str, data: bytes, *, replace: bool = False) -> None:
        """Write ``data`` as the file ``name``: create-only, or truncating when ``replace``."""
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if replace else os.O_EXCL)
        fd = self.open(name, flags)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)

    def replace(self, name: str, data: bytes) -> None:
        """Write ``data`` as a fresh file ``name``, first removing the name (never its target).

        A link or a hard link found under the name is unlinked, not written through;
        a directory there is refused.
        """
        _check_name(name)
        try:
            if stat.S_ISDIR(self.lstat(name).st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), self.show(name))
            self.unlink(name)
        except FileNotFoundError:
            pass
        self.write_new(name, data)

    def listdir(self) -> list[str]:
        return os.listdir(self.fd)

    def lstat(self, name: str) -> os.stat_result:
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def touch(self, name: str, ns: int) -> None:
        """``utimensat`` of ``name`` here: its access and modification times become ``ns``
        (a link is not followed)."""
        os.utime(name, ns=(ns, ns), dir_fd=self.fd, follow_symlinks=False)

    def link(self, src: str, dst: str) -> None:
        """``linkat`` within this directory; fails with ``EEXIST`` on a taken name."""
        os.link(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)

    def rename(self, src: str, target: Dir, dst: str) -> None:
        """``renameat`` of ``src`` here to ``dst`` in ``target`` (links are moved, not followed)."""
        _check_name(src)
        _check_name(dst)
        os.rename(src, dst, src_dir_fd=self.fd, dst_dir_fd=target.fd)

    def unlink(self, name: str) -> None:
        os.unlink(name, dir_fd=self.fd)

    def fsync(self) -> None:
        os.fsync(self.fd)


def write_all(fd: int, data: bytes) -> None:
    """``write`` until every byte is out (a short write is not an error)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def open_root(root: str | os.PathLike[str]) -> Dir:
    """The workspace root itself, which may be (or sit below) a symlink."""
    shown = os.fspath(root)
    return Dir(os.open(shown, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), shown)


def walk(root: str | os.PathLike[str], parts: tuple[str, ...], *, create: bool = False) -> Dir:
    """Open ``root/parts…`` as a directory, no component below ``root`` followed as a link.

    ``create`` makes missing components (``mkdirat``). Raises ContainmentError on a link
    or a non-directory, ``FileNotFoundError`` for a missing one when not creating.
    """
    first = _open_first(root, parts)
    if first is None:
        return open_root(root).down(parts, create=create)
    return first.down(parts[1:], create=create)


def _open_first(root: str | os.PathLike[str], parts: tuple[str, ...]) -> Dir | None:
    """``root/parts[0]`` opened by one ``open``, or ``None``: the kernel follows links in
    the root's own path, as :func:`open_root` does, and refuses one at the last component
    (``O_NOFOLLOW``), as :meth:`Dir.sub` does; the same directory, one call instead of two
    and a close. On any failure (missing, a link, not a directory) the step by step walk
    runs instead, so every outcome and error is its own."""
    if not parts:
        return None
    name = parts[0]
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        return None  # the walk refuses it by name
    shown = os.fspath(root)
    if not shown:
        return None  # no root: open_root's error
    shown = f"{shown}/{name}" if shown[-1] != "/" else f"{shown}{name}"
    try:
        return Dir(os.open(shown, _DIR_FLAGS), shown)
    except (OSError, ValueError):
        return None


def walk_tail(path: str | os.PathLike[str], depth: int, *, create: bool = False) -> Dir:
    """:func:`walk` where the last ``depth`` components of ``path`` lie below the root.

    Protocol paths have a fixed shape (``<ws>/inbox/<id>`` is depth 2,
    ``<ws>/agents/<id>/messages`` depth 3), so the root is what precedes them.
    """
    text = os.fspath(path).rstrip("/") or "/"
    parts: list[str] = []
    for _ in range(depth):
        head, name = os.path.split(text)
        parts.append(name)
        text = head or "."
    return walk(text, tuple(reversed(parts)), create=create)


def require_dirs(root: str | os.PathLike[str], *paths: tuple[str, ...]) -> None:
    """Each ``root/parts…`` that exists is a real directory (no link below the root).

    Used before handing a path to a program that resolves it itself (git): what it is
    given was verified just before, with the window that leaves stated in SPEC R-WS-7.
    """
    for parts in paths:
        try:
            walk(root, parts).close()
        except FileNotFoundError:
            continue


def require_file(root: str | os.PathLike[str], parts: tuple[str, ...]) -> None:
    """``root/parts…`` (if present) is a regular file reached through real directories."""
    try:
        with walk(root, parts[:-1]) as where:
            fd = where.open(parts[-1], os.O_RDONLY)
    except FileNotFoundError:
        return
    os.close(fd)
