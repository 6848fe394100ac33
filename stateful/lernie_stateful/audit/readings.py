"""The audit's own readings of SPEC.md, written here from the text alone, not imported.

The audit judges an implementation, so it re-derives every name, number and shape it
needs -- a deposit's frontmatter, an entry's name and blocks, an agent's parent -- with
the short functions below: a bug in the implementation's parsers cannot hide in the judge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

OBITUARIES = frozenset({"stopped", "budget-exhausted", "died"})
FINAL = "final-response"
MARK_KINDS = frozenset({"returned", "budget-exhausted", "stopped"})


def u32(text: str) -> int | None:
    """R-DEP-3: an optional ``+`` then ASCII digits, at most 2**32 - 1."""
    digits = text[1:] if text.startswith("+") else text
    if not digits or not all("0" <= c <= "9" for c in digits):
        return None
    return int(digits) if int(digits) <= 0xFFFFFFFF else None


def parent_of(agent: str) -> str | None:
    """R-ID-1: drop the last two ``-`` tokens; two tokens or fewer is a root."""
    tokens = agent.split("-")
    return "-".join(tokens[:-2]) if len(tokens) > 2 else None


def lines_of(text: str) -> list[str]:
    """Rust's ``str::lines``: split on LF, drop one CR before each LF, no empty last line."""
    if not text:
        return []
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
        return [p[:-1] if p.endswith("\r") else p for p in parts]
    return [p[:-1] if p.endswith("\r") else p for p in parts[:-1]] + [parts[-1]]


@dataclass(frozen=True)
class Deposit:
    """A deposit file read back: its frontmatter keys in order and its body."""

    keys: tuple[tuple[str, str], ...]
    body: str

    def get(self, key: str) -> str | None:
        found = [v for k, v in self.keys if k == key]
        return found[-1] if found else None


_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def read_deposit(data: bytes) -> Deposit | str:
    """R-DEP-4/5: the exact shape of a plain or result deposit; else the reason it is not one."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8"
    if not text.startswith("---\n"):
        return "does not start with the frontmatter fence"
    close = text.find("\n---\n", 3)
    if close < 0:
        return "frontmatter never closed (torn?)"
    keys: list[tuple[str, str]] = []
    for line in text[4:close].split("\n"):
        key, sep, value = line.partition(": ")
        if not sep:
            return f"frontmatter line {line!r} is not 'key: value'"
        keys.append((key, value))
    names = tuple(k for k, _ in keys)
    if names not in (("from", "deposited_at"),
                     ("from", "deposited_at", "epitaph", "terminal_ref")):
        return f"frontmatter keys {list(names)} are neither a plain nor a result deposit"
    dep = Deposit(tuple(keys), text[close + 5:])
    if not _ISO.fullmatch(dep.get("deposited_at") or ""):
        return f"deposited_at {dep.get('deposited_at')!r} is not UTC seconds"
    return dep


def terminal_ref(text: str) -> str | None:
    """R-DEP-9: the first non-empty ``terminal_ref:`` inside a leading ``---`` block."""
    lines = lines_of(text)
    if not lines or lines[0] != "---":
        return None
    for line in lines[1:]:
        if line == "---":
            return None
        if line.startswith("terminal_ref:"):
            value = line[len("terminal_ref:"):].strip()
            if value:
                return value
    return None


def blocks_of(data: bytes) -> list[dict[str, object]] | str:
    """R-TR-4: the content blocks of a model or tool entry; else why not."""
    try:
        value: object = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return f"not JSON ({exc})"
    items: object = value.get("content") if isinstance(value, dict) else value
    if not isinstance(items, list):
        return 'neither {"content":[...]} nor an array of blocks'
    out: list[dict[str, object]] = []
    for item in items:
        if isinstance(item, str):
            out.append({"type": "text", "text": item})
        elif isinstance(item, dict) and isinstance(item.get("type"), str):
            out.append({str(k): v for k, v in item.items()})
        else:
            return f"holds a non-block {item!r}"
    return out


def tool_calls(blocks: Sequence[dict[str, object]]) -> list[dict[str, object]]:
    return [b for b in blocks if b.get("type") == "tool_use" and isinstance(b.get("id"), str)
            and isinstance(b.get("name"), str) and "input" in b]


def result_text(block: dict[str, object]) -> str:
    """The text of a ``tool_result`` block: its content string, or its text blocks joined."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return text_of([b for b in content if isinstance(b, dict)])
    return ""


def text_of(blocks: Sequence[dict[str, object]]) -> str:
    return "".join(str(b["text"]) for b in blocks
                   if b.get("type") == "text" and isinstance(b.get("text"), str))


def entry_name(name: str) -> tuple[int, str, bool] | None:
    """R-TR-1: ``NNN-<origin>.md|.json`` split at the first ``-``; NNN a u32, origin non-empty."""
    for ext, delivered in ((".md", True), (".json", False)):
        if name.endswith(ext):
            seq_text, sep, origin = name[: -len(ext)].partition("-")
            seq = u32(seq_text)
            if sep and origin and seq is not None:
                return seq, origin, delivered
    return None


def pending_name(name: str) -> tuple[str, int] | None:
    """R-DEP-9: ``<sender>-<u32>.md`` split at the last ``-``, sender not starting with ``.``."""
    if not name.endswith(".md"):
        return None
    sender, sep, tail = name[:-3].rpartition("-")
    seq = u32(tail)
    if not sep or not sender or sender.startswith(".") or seq is None:
        return None
    return sender, seq
