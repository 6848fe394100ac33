"""Streamed content stored once, on disk, for a verb that writes it twice (R-CLI-7).

``prompt`` and ``dispatch`` write their text both as the agent's ``goal.md`` and as
its first deposit. Content from standard input or ``--file`` can be read only once
and may be larger than memory, so it is first copied (checked as UTF-8 on the way,
before anything else is created) into an unnamed file under ``<ws>/steps/``
(``O_TMPFILE``: it has no name, so nothing is left behind whatever happens), then
copied from there to each place it goes.
"""

from __future__ import annotations

import errno
import os

from lernie_ref.core.vocab import STEPS_DIR
from lernie_ref.substrate import guarded
from lernie_ref.substrate.deposit import CHUNK, Stream, copy_text
from lernie_ref.substrate.guarded import write_all


class Spool:
    """An unnamed file holding checked UTF-8 content; :meth:`reader` reads it from the start."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def fill(cls, root: str | os.PathLike[str], source: Stream) -> Spool:
        with guarded.walk(root, (STEPS_DIR,), create=True) as steps:
            try:
                fd = os.open(".", os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600, dir_fd=steps.fd)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                    raise
                name = f".spool-{os.urandom(6).hex()}.tmp"  # no O_TMPFILE here: unlink at once
                fd = steps.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
                steps.unlink(name)
        try:
            copy_text(source, fd)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd)

    def read(self, size: int, /) -> bytes:
        return os.read(self.fd, size)

    def reader(self) -> Spool:
        """This spool, rewound: a :class:`~lernie_ref.substrate.deposit.Stream` of its bytes."""
        os.lseek(self.fd, 0, os.SEEK_SET)
        return self

    def copy_to(self, fd: int) -> None:
        """Copy every byte to ``fd`` in pieces."""
        self.reader()
        while chunk := os.read(self.fd, CHUNK):
            write_all(fd, chunk)

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
