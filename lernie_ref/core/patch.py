"""The ``apply_patch`` envelope: its grammar and its hunks, pure (R-TOOL-5).

An envelope is text::

    *** Begin Patch
    *** Add File: <path>
    +<line>                      (every line of the new file, each after a "+")
    *** Delete File: <path>
    *** Update File: <path>
    *** Move to: <path>          (optional, right after the Update line)
    @@ [<anchor line>]           (optional before the first hunk; separates hunks)
     <context line>
    -<removed line>
    +<added line>
    *** End of File              (optional: the hunk ends at the end of the file)
    *** End Patch

:func:`parse` turns the text into operations or raises :class:`PatchError` with
the line number that broke the grammar; :func:`apply_hunks` turns a file's old
text and an update's hunks into the new text or raises :class:`PatchError` naming
the hunk whose lines the file does not hold. Neither touches a file: the tool
(``actors/tools.py``) reads every file first, runs both, and writes only when every
operation of the envelope succeeded, so a bad envelope changes nothing.

Paths are checked here as text (:func:`relative_parts`): relative, no ``..``, no
``.git`` component; where they lead on disk is the substrate's business.
"""

from __future__ import annotations

from collections.abc import Sequence

from lernie_ref.core.errors import PatchError, ToolPathError

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"
HUNK = "@@"

FORBIDDEN_PARTS = frozenset({".git"})
"""Components no file tool path may hold: the worktree's git link (R-TOOL-2)."""


def relative_parts(text: str, what: str = "path") -> tuple[str, ...]:
    """``text`` as path components relative to where it is resolved (R-TOOL-2).

    Empty components and ``.`` are dropped; an absolute path, a ``..``, a NUL or a
    ``.git`` component is refused with a :class:`ToolPathError`.
    """
    if "\0" in text:
        raise ToolPathError(f"{what} {text!r} holds a NUL byte")
    if text.startswith("/"):
        raise ToolPathError(
            f"{what} {text!r} is absolute; refused: file tools take paths relative to "
            "the current directory inside the agent's worktree"
        )
    parts = tuple(p for p in text.split("/") if p not in ("", "."))
    for part in parts:
        if part == "..":
            raise ToolPathError(
                f"{what} {text!r} climbs with `..`; refused: file tools never leave the "
                "agent's worktree and never walk upwards (cd to a shorter path instead)"
            )
        if part in FORBIDDEN_PARTS:
            raise ToolPathError(f"{what} {text!r} reaches into `{part}`; refused")
    return parts


class Hunk:
    """One ``@@`` section of an update: the lines it expects and the lines it leaves."""

    __slots__ = ("anchor", "at_end", "line", "new", "old")

    def __init__(self, anchor: str | None, line: int) -> None:
        self.anchor = anchor
        self.old: list[str] = []
        self.new: list[str] = []
        self.at_end = False
        self.line = line
        """The envelope line the hunk starts on (1-based), for messages."""

    def __repr__(self) -> str:
        return (
            f"Hunk(anchor={self.anchor!r}, old={self.old!r}, new={self.new!r}, "
            f"at_end={self.at_end})"
        )


class Op:
    """One operation of an envelope: ``add``, ``delete`` or ``update`` of ``path``."""

    __slots__ = ("hunks", "kind", "lines", "move_to", "path")

    def __init__(self, kind: str, path: str) -> None:
        self.kind = kind
        self.path = path
        self.move_to: str | None = None
        self.lines: list[str] = []
        """``add``: the new file's lines."""
        self.hunks: list[Hunk] = []
        """``update``: the hunks, in file order."""

    def __repr__(self) -> str:
        return f"Op({self.kind!r}, {self.path!r}, move_to={self.move_to!r})"


def _header_path(line: str, prefix: str, number: int) -> str:
    path = line[len(prefix):].strip()
    if not path:
        raise PatchError(f"line {number}: `{prefix.strip()}` names no path")
    return path


def parse(text: str) -> list[Op]:
    """The operations of one envelope, or :class:`PatchError` naming the offending line.

    Blank lines before ``*** Begin Patch`` and after ``*** End Patch`` are ignored, and
    so is a ``\\r`` ending a line. Inside a hunk an empty line is an empty context line.
    """
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    stop = len(lines)
    while stop > start and not lines[stop - 1].strip():
        stop -= 1
    if start == stop:
        raise PatchError("the patch is empty: it must start with `*** Begin Patch`")
    if lines[start].strip() != BEGIN:
        raise PatchError(f"line {start + 1}: the patch must start with `{BEGIN}`")
    if lines[stop - 1].strip() != END:
        raise PatchError(f"the patch must end with `{END}` (its last line is "
                         f"{lines[stop - 1][:60]!r})")
    ops: list[Op] = []
    current: Op | None = None
    hunk: Hunk | None = None
    index = start + 1
    body_end = stop - 1
    while index < body_end:
        line = lines[index]
        number = index + 1
        index += 1
        if line.startswith(ADD):
            current, hunk = Op("add", _header_path(line, ADD, number)), None
            ops.append(current)
        elif line.startswith(DELETE):
            current, hunk = Op("delete", _header_path(line, DELETE, number)), None
            ops.append(current)
        elif line.startswith(UPDATE):
            current, hunk = Op("update", _header_path(line, UPDATE, number)), None
            ops.append(current)
            if index < body_end and lines[index].startswith(MOVE):
                current.move_to = _header_path(lines[index], MOVE, index + 1)
                index += 1
        elif line.startswith(MOVE):
            raise PatchError(
                f"line {number}: `*** Move to:` must follow an `*** Update File:` line"
            )
        elif line.strip() == END_OF_FILE:
            if current is None or current.kind != "update" or hunk is None or not (
                hunk.old or hunk.new
            ):
                raise PatchError(f"line {number}: `{END_OF_FILE}` must close a hunk of an update")
            hunk.at_end = True
            hunk = None
        elif line.startswith("***"):
            raise PatchError(f"line {number}: unknown patch header {line[:60]!r}")
        elif current is None:
            raise PatchError(
                f"line {number}: text before the first `*** Add/Delete/Update File:` header"
            )
        elif current.kind == "add":
            if not line.startswith("+"):
                raise PatchError(
                    f"line {number}: every line of an added file starts with `+` "
                    f"({current.path})"
                )
            current.lines.append(line[1:])
        elif current.kind == "delete":
            raise PatchError(f"line {number}: a deleted file takes no lines ({current.path})")
        else:  # update
            if line.startswith(HUNK):
                anchor = line[len(HUNK):].strip() or None
                hunk = Hunk(anchor, number)
                current.hunks.append(hunk)
                continue
            if hunk is None:
                if current.hunks:
                    raise PatchError(
                        f"line {number}: a new hunk after `{END_OF_FILE}` starts with `@@`"
                    )
                hunk = Hunk(None, number)
                current.hunks.append(hunk)
            mark, rest = line[:1], line[1:]
            if mark in (" ", ""):
                hunk.old.append(rest)
                hunk.new.append(rest)
            elif mark == "-":
                hunk.old.append(rest)
            elif mark == "+":
                hunk.new.append(rest)
            else:
                raise PatchError(
                    f"line {number}: a hunk line starts with ' ', '-' or '+', not {mark!r} "
                    f"({current.path})"
                )
    for op in ops:
        if op.kind == "update":
            empty = [h for h in op.hunks if not (h.old or h.new)]
            if empty:
                raise PatchError(f"line {empty[0].line}: an empty hunk ({op.path})")
            if not op.hunks and op.move_to is None:
                raise PatchError(f"`*** Update File: {op.path}` has no hunk")
    if not ops:
        raise PatchError("the patch holds no operation")
    return ops


def split_lines(text: str) -> list[str]:
    """A file's lines without their ``\\n`` (a final newline ends the last line)."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def join_lines(lines: Sequence[str]) -> str:
    """A file of ``lines``, each ended by ``\\n`` (nothing for no lines)."""
    return "".join(line + "\n" for line in lines)


def _find(lines: Sequence[str], wanted: Sequence[str], start: int, at_end: bool) -> int | None:
    """The first index from ``start`` where ``wanted`` matches: exactly, then ignoring
    trailing blanks, then ignoring blanks at both ends. ``at_end``: only at the end."""
    size = len(wanted)
    if at_end:
        candidates: Sequence[int] = [len(lines) - size] if len(lines) - size >= start else []
    else:
        candidates = range(start, len(lines) - size + 1)
    for norm in (lambda s: s, str.rstrip, str.strip):
        want = [norm(w) for w in wanted]
        for at in candidates:
            if all(norm(lines[at + k]) == want[k] for k in range(size)):
                return at
    return None


def apply_hunks(text: str, hunks: Sequence[Hunk], path: str) -> str:
    """The new text of a file whose old text is ``text`` after ``hunks`` (R-TOOL-5).

    Hunks match in order, each after the previous one: an anchor (``@@ <line>``)
    first moves past the first line equal to it; the hunk's old lines (context and
    removed) must then appear as a block (compared exactly, else ignoring trailing,
    else surrounding blanks), at the file's end for ``*** End of File``. A hunk with
    no old lines adds its lines after the anchor, else at the end of the file. The
    result ends with a newline.
    """
    lines = split_lines(text)
    cursor = 0
    edits: list[tuple[int, int, list[str]]] = []
    for number, hunk in enumerate(hunks, 1):
        if hunk.anchor is not None:
            found = _find(lines, [hunk.anchor], cursor, False)
            if found is None:
                raise PatchError(
                    f"{path}: hunk {number} (line {hunk.line}): anchor {hunk.anchor!r} not found"
                )
            cursor = found + 1
        if not hunk.old:
            at = cursor if hunk.anchor is not None and not hunk.at_end else len(lines)
        else:
            located = _find(lines, hunk.old, cursor, hunk.at_end)
            if located is None:
                first = hunk.old[0]
                raise PatchError(
                    f"{path}: hunk {number} (line {hunk.line}): its {len(hunk.old)} context "
                    f"and removed line(s) do not match the file (first: {first[:60]!r})"
                )
            at = located
        edits.append((at, len(hunk.old), list(hunk.new)))
        cursor = at + len(hunk.old)
    for at, size, new in reversed(edits):
        lines[at : at + size] = new
    return join_lines(lines)
