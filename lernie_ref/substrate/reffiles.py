"""The one reader of git's ref files: a ref's value read from the loose ref file, else
from ``packed-refs``, without a git process (R-WS-5, R-ID-4, R-SCAN-6).

Only a plain answer is given: a full object id, or "no such ref" when neither the loose
file nor ``packed-refs`` names it. Anything else (another ref storage, a symbolic or
malformed ref, a name that is not plain, replace refs for an object's type) answers
``None``, and the caller asks git, as git would answer. ``packed-refs`` is re-read
whenever its inode, size or mtime changed, as git itself does.

Callers: the registry's existence guard on the ``lernie message`` path (R-ID-4; this
module therefore imports nothing but ``os`` and the id rules, R-CLI-5), a hop's tip and
marks (:meth:`RefFiles.resolve`, :meth:`RefFiles.commit_of`, :meth:`RefFiles.subject`),
and the sweep's confirmation of its snapshot under an agent's lock
(:mod:`lernie_ref.substrate.refsnap`).
"""

from __future__ import annotations

import os

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.ids import is_agent_id

if TYPE_CHECKING:
    from pathlib import Path

_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
_HEX = frozenset("0123456789abcdef")


class RefFiles:
    """Reads refs from git's files (loose ref, then ``packed-refs``) of one bare repository."""

    def __init__(self, repo_git: str | Path) -> None:
        self._repo = str(repo_git)
        self._packed_key: tuple[int, int, int, int] | None = None
        self._packed: dict[str, str] = {}
        # Another ref storage (reftable) keeps no loose files: never guess there.
        self._usable = not os.path.isdir(os.path.join(self._repo, "reftable"))

    def value(self, refname: str) -> str | None:
        """The object id ``refname`` holds, ``''`` when the files say it does not exist.

        ``None`` when the files do not answer plainly (ask git instead).
        """
        return self.values((refname,))[0]

    def values(self, refnames: tuple[str, ...]) -> list[str | None]:
        """:meth:`value` of each ref: every loose file first, then one look at
        ``packed-refs`` for those that had none (read after all of them, so it holds their
        current values, as for one ref)."""
        if not self._usable:
            return [None] * len(refnames)
        found = [self._loose(name) for name in refnames]
        if _ABSENT in found:
            packed = self._packed_refs()
            for i, name in enumerate(refnames):
                if found[i] is _ABSENT:
                    found[i] = None if packed is None else _packed_oid(packed, name)
        return found

    def resolve(self, refname: str) -> str | None:
        """What ``git rev-parse --verify <refname>`` prints for a full ref name (``refs/…``),
        read from the files: the value of the first name git's lookup rules try that exists
        (the name itself, then ``refs/<name>``, ``refs/tags/<name>``, ``refs/heads/<name>``,
        ``refs/remotes/<name>``, ``refs/remotes/<name>/HEAD``), ``''`` when none does.

        ``None`` when the files do not answer plainly (ask git instead). Git prints a ref's
        value without opening the object, so neither is opened here."""
        if not refname.startswith("refs/") or not _plain_ref_name(refname):
            return None
        names = (refname, *(rule.format(refname) for rule in _LOOKUP_RULES))
        for value in self.values(names):
            if value != "":
                return value
        return ""

    def commit_of(self, refname: str) -> tuple[bool, str | None]:
        """``(known, value)``: what ``git rev-parse --verify --quiet <refname>^{commit}``
        answers (``None``: no such ref, or an object that is no commit), when the files
        say so plainly: the ref's value (:meth:`resolve`) and the type of that loose
        object. A tag (peeling needs git), an object not stored loose, or anything odd:
        ``(False, None)``."""
        oid = self.resolve(refname)
        if oid is None:
            return False, None
        if oid == "":
            return True, None
        return self.peeled(oid)

    def peeled(self, oid: str) -> tuple[bool, str | None]:
        """``(known, value)``: what ``<oid>^{commit}`` names (``None``: an object that is no
        commit), when the loose object's type says so plainly; a tag (peeling needs git),
        an object not stored loose, or anything odd: ``(False, None)``."""
        kind = self.object_kind(oid)
        if kind == "commit":
            return True, oid
        if kind in ("tree", "blob"):
            return True, None
        return False, None

    def object_kind(self, oid: str) -> str | None:
        """The type of object ``oid`` read from its loose object file (its inflated bytes
        start with the type, a space, the size and a NUL); ``None`` when it is not stored
        loose, cannot be read, or replace refs could make git see another object there."""
        head = self._loose_object(oid, 64)
        if head is None:
            return None
        header, nul, _ = head.partition(b"\0")
        kind, _, size = header.partition(b" ")
        if not nul or not size.isdigit() or kind not in _KINDS:
            return None
        return kind.decode("ascii")

    def subject(self, oid: str) -> str | None:
        """What ``git log -1 --format=%s <oid>`` prints for a loose commit whose message's
        first paragraph is one plain line of printable ASCII (no ``encoding`` header, no
        leading or trailing blanks); ``None`` for anything else (ask git instead)."""
        data = self._loose_object(oid, None)
        if data is None:
            return None
        header, nul, content = data.partition(b"\0")
        kind, _, size = header.partition(b" ")
        if not nul or kind != b"commit" or not size.isdigit() or int(size) != len(content):
            return None
        headers, blank, message = content.partition(b"\n\n")
        if not blank or headers.startswith(b"encoding ") or b"\nencoding " in headers:
            return None
        line, _, rest = message.partition(b"\n")
        if not line or line != line.strip() or (rest and not rest.startswith(b"\n")):
            return None
        if not all(0x20 <= c < 0x7F for c in line):
            return None
        return line.decode("ascii")

    def _loose_object(self, oid: str, size: int | None) -> bytes | None:
        """The first ``size`` bytes (all for ``None``) of loose object ``oid``, inflated."""
        if not self._usable or not is_oid(oid) or self._replaced():
            return None
        import zlib  # only these reads need it

        path = os.path.join(self._repo, "objects", oid[:2], oid[2:])
        try:
            with open(path, "rb") as handle:
                raw = handle.read() if size is None else handle.read(4096)
        except OSError:
            return None
        try:
            if size is None:
                return zlib.decompress(raw)
            return zlib.decompressobj().decompress(raw, size)
        except zlib.error:
            return None

    def _replaced(self) -> bool:
        """Replace refs may exist: git may show another object for an object id."""
        if os.environ.get("GIT_REPLACE_REF_BASE") is not None:
            return True
        if os.path.lexists(os.path.join(self._repo, "refs", "replace")):
            return True
        packed = self._packed_refs()
        return packed is None or any(name.startswith("refs/replace/") for name in packed)

    def _loose(self, refname: str) -> str | None:
        try:  # three system calls: no buffered file object (scan reads four per agent)
            fd = os.open(os.path.join(self._repo, refname), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return _ABSENT
        except OSError:
            return None
        try:
            data = os.read(fd, 128)
        except OSError:  # a directory, for one
            return None
        finally:
            os.close(fd)
        return _object_id(data)

    def _packed_refs(self) -> dict[str, str] | None:
        """``packed-refs`` as names to values (``{}`` when there is none); ``None`` when it
        cannot be read. Re-read whenever its inode, size or mtime changed."""
        # The loose file was absent: git writes packed-refs before it deletes a loose ref,
        # so a packed-refs read from here on holds the ref's current value, if any.
        path = os.path.join(self._repo, "packed-refs")
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._packed_key, self._packed = None, {}
            return self._packed
        except OSError:
            return None
        key = (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)
        if key != self._packed_key:
            try:
                with open(path, "rb") as handle:
                    text = handle.read().decode("ascii")
            except (OSError, UnicodeDecodeError):
                return None
            packed: dict[str, str] = {}
            for line in text.splitlines():
                if not line or line[0] in "#^":
                    continue
                oid, _, name = line.partition(" ")
                packed[name] = oid
            self._packed_key, self._packed = key, packed
        return self._packed


_ABSENT = "\0absent"
"""No loose file: ``packed-refs`` decides (a value no ref file can hold)."""


_LOOKUP_RULES = (
    "refs/{}",
    "refs/tags/{}",
    "refs/heads/{}",
    "refs/remotes/{}",
    "refs/remotes/{}/HEAD",
)
"""Git's ref lookup rules after the name itself (``rev-parse``'s order)."""

_KINDS = frozenset((b"commit", b"tree", b"blob", b"tag"))


def _plain_ref_name(refname: str) -> bool:
    """Components that are each a plain file name (no ``.``-leading part, no ``.lock``)."""
    return all(
        part and all(c in _PLAIN for c in part) and not part.startswith(".")
        and ".." not in part and not part.endswith(".lock")
        for part in refname.split("/")
    )


def _packed_oid(packed: dict[str, str], refname: str) -> str | None:
    found = packed.get(refname)
    if found is None:
        return ""
    return found if is_oid(found) else None


def is_oid(text: str) -> bool:
    return len(text) in (40, 64) and all(c in _HEX for c in text)


def _object_id(data: bytes) -> str | None:
    line = data[:-1] if data.endswith(b"\n") else data
    try:
        text = line.decode("ascii")
    except UnicodeDecodeError:
        return None
    return text if is_oid(text) else None


def plain_ref_component(agent: str) -> bool:
    """An id whose ref file name is the id itself: plain characters (a child's ``.``
    included), no leading ``.``, no ``..``, no ``.lock`` ending."""
    return (
        is_agent_id(agent)
        and all(c in _PLAIN for c in agent)
        and not agent.startswith(".")
        and ".." not in agent
        and not agent.endswith(".lock")
    )
