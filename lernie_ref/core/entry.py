"""Transcript entries: the one entry value (R-TR-1), and the bytes of model and tool entries
with their one reader (R-TR-4).

Writers reproduce serde_json's compact output: no whitespace, non-ASCII kept
raw, block keys in the block's own field order, and the keys of free-form JSON
values (a tool call's ``input``, ``usage``) sorted, as a ``BTreeMap`` prints them.
The reader accepts both on-disk shapes: an object with a ``content`` array
(other keys ignored) and a bare array; a bare string element reads as text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from lernie_ref.core import TYPE_CHECKING
from lernie_ref.core.errors import EntryError, LernieError, TranscriptError
from lernie_ref.core.vocab import MESSAGES_DIR, TOOL_ORIGIN, Role

if TYPE_CHECKING:
    from typing import Generic, TypeVar

    Where = TypeVar("Where", covariant=True)
    """Where an entry lives: a file path for an entry read from disk, its file name in memory."""
else:

    class Generic:
        """At run time an entry's parameter is only a name: ``Entry[Path]`` is ``Entry``."""

        __slots__ = ()

        def __class_getitem__(cls, item: object) -> type:
            return cls

    Where = None

Block = dict[str, object]

# Keys whose values are free-form JSON (serde_json::Value): printed with sorted keys.
_FREE_FORM = frozenset({"input"})


def _dump(value: object, *, sort: bool) -> str:
    """Compact JSON; ``sort`` sorts object keys in this value and everything below it."""
    import json
    if isinstance(value, Mapping):
        items = sorted(value.items()) if sort else list(value.items())
        inner = ",".join(
            json.dumps(str(k), ensure_ascii=False) + ":" + _dump(v, sort=sort or k in _FREE_FORM)
            for k, v in items
        )
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_dump(v, sort=sort) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def render_model_entry(blocks: Sequence[Block], usage: Mapping[str, int] | None) -> bytes:
    """``{"content":[…]}`` plus ``,"usage":{sorted}`` when a counter was reported; no newline."""
    out = '{"content":[' + ",".join(_dump(b, sort=False) for b in blocks) + "]"
    if usage:
        out += ',"usage":' + _dump(dict(usage), sort=True)
    return _bytes(out + "}")


def render_tool_entry(block: Block) -> bytes:
    """A tool entry: a bare one-element array holding the ``tool_result`` block."""
    return _bytes("[" + _dump(block, sort=False) + "]")


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def tool_use_block(block_id: str, name: str, input: object) -> Block:
    return {"type": "tool_use", "id": block_id, "name": name, "input": input}


def tool_result_block(tool_use_id: str, text: str, is_error: bool) -> Block:
    """The tool result the harness writes: one text block of content."""
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": [text_block(text)],
        "is_error": is_error,
    }


def thinking_block(text: str, signature: str | None = None) -> Block:
    """``signature`` is always written, as ``null`` when absent."""
    return {"type": "thinking", "text": text, "signature": signature}


def entry_blocks(data: bytes) -> list[Block]:
    """Read an entry's blocks; :class:`EntryError` on anything that is not entry JSON."""
    import json

    try:
        parsed: object = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EntryError(f"transcript entry is not JSON: {exc}") from None
    if isinstance(parsed, dict) and isinstance(parsed.get("content"), list):
        items: list[object] = parsed["content"]
    elif isinstance(parsed, list):
        items = parsed
    else:
        raise EntryError('transcript entry is neither {"content":[…]} nor an array of blocks')
    blocks: list[Block] = []
    for item in items:
        if isinstance(item, str):
            blocks.append(text_block(item))
        elif isinstance(item, dict) and isinstance(item.get("type"), str):
            blocks.append({str(k): v for k, v in item.items()})
        else:
            raise EntryError(
                f"transcript entry holds a block that is not a content block: {item!r}"
            )
    return blocks


def _is_tool_use(block: Block) -> bool:
    return (
        block.get("type") == "tool_use"
        and isinstance(block.get("id"), str)
        and isinstance(block.get("name"), str)
        and "input" in block
    )


def has_tool_use(blocks: Sequence[Block]) -> bool:
    """A model entry is a terminal response iff this is false (R-DEBT-2, R-STEP-4)."""
    return any(_is_tool_use(b) for b in blocks)


def tool_use_ids(blocks: Sequence[Block]) -> list[str]:
    return [str(b["id"]) for b in blocks if _is_tool_use(b)]


def tool_result_ids(blocks: Sequence[Block]) -> list[str]:
    return [
        str(b["tool_use_id"])
        for b in blocks
        if b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)
    ]


def text_of(blocks: Sequence[Block]) -> str | None:
    """Every text block's text concatenated with no separator; ``None`` if that is empty."""
    text = "".join(
        str(b["text"]) for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
    )
    return text or None


Body = bytes | Callable[[], bytes] | None
"""An entry's bytes, or a function that reads them when they are first needed."""


class Entry(Generic[Where]):
    """One transcript entry (R-TR-1): the one entry value of the whole package.

    ``delivered`` marks a ``.md`` entry (a delivered deposit); otherwise it is a model
    entry, or a tool result when ``origin`` is ``tool``. ``path`` says where the entry
    lives; the decisions use only its last component (:attr:`name`) and its text in
    error messages. ``body`` carries the bytes, or a function that reads them: the
    transcript reader supplies one, so a decision reads only the files it looks at
    (R-DEBT-1), while values built in memory carry their bytes. The body is read at most
    once and takes no part in equality. An entry is immutable (its body once read aside).
    """

    __slots__ = ("body", "delivered", "origin", "path", "seq")

    seq: int
    origin: str
    delivered: bool
    path: Where
    body: Body

    def __init__(
        self, seq: int, origin: str, delivered: bool, path: Where, body: Body = None
    ) -> None:
        setter = object.__setattr__
        setter(self, "seq", seq)
        setter(self, "origin", origin)
        setter(self, "delivered", delivered)
        setter(self, "path", path)
        setter(self, "body", body)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of an entry")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of an entry")

    def _key(self) -> tuple[int, str, bool, object]:
        return (self.seq, self.origin, self.delivered, self.path)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Entry)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(seq={self.seq!r}, origin={self.origin!r}, "
            f"delivered={self.delivered!r}, path={self.path!r})"
        )

    @property
    def name(self) -> str:
        """The file name: the last component of :attr:`path`."""
        return str(self.path).rpartition("/")[2]

    @property
    def data(self) -> bytes:
        """The entry's bytes; an entry built with none raises :class:`TranscriptError`."""
        body = self.body
        if isinstance(body, bytes):
            return body
        if body is None:
            raise TranscriptError(f"transcript entry {self.path}: no bytes were supplied")
        data = body()
        object.__setattr__(self, "body", data)
        return data

    @property
    def role(self) -> Role:
        """R-TR-5: ``.md`` → user, ``NNN-tool.json`` → tool, any other ``.json`` → assistant."""
        if self.delivered:
            return "user"
        return "tool" if self.origin == TOOL_ORIGIN else "assistant"

    @property
    def text(self) -> str:
        """A delivered entry's whole text, frontmatter included (lossy for non-UTF-8 bytes)."""
        return self.data.decode("utf-8", "replace")

    def strict_text(self) -> str:
        """The entry's text; bytes that are not UTF-8 raise :class:`TranscriptError` (R-DEBT-1)."""
        data = self.data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise TranscriptError(f"transcript entry {self.path} is not UTF-8 text") from None

    def blocks(self) -> list[Block]:
        """The content blocks: one text block for a delivered entry, the JSON's blocks otherwise."""
        if self.delivered:
            return [text_block(self.text)]
        try:
            return entry_blocks(self.data)
        except LernieError as exc:
            raise TranscriptError(f"transcript entry {MESSAGES_DIR}/{self.name}: {exc}") from None

    def model_blocks(self) -> list[Block]:
        """A model or tool entry's blocks as the reply debt reads them (R-DEBT-1: bytes that
        are not entry JSON are an error naming the entry's path)."""
        data = self.data
        try:
            return entry_blocks(data)
        except EntryError as exc:
            raise TranscriptError(f"transcript entry {self.path}: {exc}") from None
