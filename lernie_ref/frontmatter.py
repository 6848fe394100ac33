"""Deposit and transcript names, and the hand-written frontmatter (R-DEP-1..5, R-DEP-9/10, R-TR-1).

Pure functions over strings: no I/O, no imports beyond the id arithmetic. The
frontmatter is not YAML: fixed key order, no quoting, matched by exact prefix at
column 0, lines split the way Rust's ``str::lines`` splits them. Readers take the
sender from the *file name* (last ``-`` for inbox names, first ``-`` for
transcript names), never from ``from:``.
"""

from __future__ import annotations

from lernie_ref.ids import parent_of

U32_MAX = 0xFFFFFFFF

MD = ".md"
JSON = ".json"
FENCE = "---"

# Rust's char::is_whitespace (Unicode White_Space), used by str::trim.
_RUST_WS = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def parse_u32(s: str) -> int | None:
    """R-DEP-3: Rust ``s.parse::<u32>()``: optional ``+``, one or more ASCII digits, <= 2**32-1."""
    digits = s[1:] if s.startswith("+") else s
    if not digits or not all("0" <= c <= "9" for c in digits):
        return None
    value = int(digits)
    return value if value <= U32_MAX else None


def rust_trim(s: str) -> str:
    """Rust ``str::trim``: strip Unicode White_Space from both ends."""
    start, end = 0, len(s)
    while start < end and s[start] in _RUST_WS:
        start += 1
    while end > start and s[end - 1] in _RUST_WS:
        end -= 1
    return s[start:end]


def rust_lines(s: str) -> list[str]:
    """Rust ``str::lines``: split on ``\\n``; a final ``\\n`` adds no line; one ``\\r`` stripped."""
    if not s:
        return []
    parts = s.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]


def seq_text(seq: int) -> str:
    """``{:03}``: at least three digits, zero-padded, never truncated."""
    return f"{seq:03d}"


def deposit_name(sender: str, seq: int) -> str:
    """R-DEP-1: ``<sender>-<NNN>.md``."""
    return f"{sender}-{seq_text(seq)}{MD}"


def _encode(text: str) -> bytes:
    # Arguments that were not valid UTF-8 arrive with surrogate escapes: write their bytes back.
    return text.encode("utf-8", "surrogateescape")


def render_plain(sender: str, iso: str, content: str) -> bytes:
    """R-DEP-4: ``---\\nfrom: S\\ndeposited_at: T\\n---\\n`` then the content, nothing appended."""
    return _encode(f"---\nfrom: {sender}\ndeposited_at: {iso}\n---\n{content}")


def render_result(
    child: str, iso: str, epitaph: str, terminal_ref: str, response: str | None
) -> bytes:
    """R-DEP-5: the result head, then the response only when there is one."""
    head = (
        f"---\nfrom: {child}\ndeposited_at: {iso}\nepitaph: {epitaph}\n"
        f"terminal_ref: {terminal_ref}\n---\n"
    )
    return _encode(head if response is None else head + response)


def sender_of(name: str) -> str | None:
    """R-DEP-9: the sender of a pending-deposit name, or ``None`` if the name is not a deposit.

    Ends in ``.md``; the stem splits at its **last** ``-`` into a non-empty sender that
    does not start with ``.`` and a u32 tail. Temporary files (leading ``.``) never match.
    """
    if not name.endswith(MD):
        return None
    stem = name[: -len(MD)]
    sender, dash, tail = stem.rpartition("-")
    if not dash or parse_u32(tail) is None:
        return None
    if not sender or sender.startswith("."):
        return None
    return sender


def sequence_of(name: str, sender: str) -> int | None:
    """R-DEP-2: ``k`` if ``name`` is ``<sender>-<k>.md`` with a u32 ``k``, else ``None``."""
    prefix = f"{sender}-"
    if not (name.startswith(prefix) and name.endswith(MD)) or len(name) < len(prefix) + len(MD):
        return None
    return parse_u32(name[len(prefix) : -len(MD)])


def next_sequence(names: list[str], sender: str) -> int:
    """R-DEP-2: one more than the largest sequence of ``sender`` among ``names``, else 1."""
    best = 0
    for name in names:
        k = sequence_of(name, sender)
        if k is not None and k > best:
            best = k
    return best + 1


def _field(line: str, key: str) -> str | None:
    return rust_trim(line[len(key) :]) if line.startswith(key) else None


def terminal_ref_of(body: str) -> str | None:
    """R-DEP-9: the ``terminal_ref:`` value of a result message, else ``None``.

    The first line must be exactly ``---``; the scan stops at the next ``---`` and,
    with no closing fence, runs to the end of the text. An empty value keeps scanning.
    """
    lines = rust_lines(body)
    if not lines or lines[0] != FENCE:
        return None
    for line in lines[1:]:
        if line == FENCE:
            return None
        value = _field(line, "terminal_ref:")
        if value:
            return value
    return None


def split_frontmatter(body: str) -> tuple[str, str | None]:
    """R-DEP-9: ``(epitaph, response)``; the last ``epitaph:`` in the head wins.

    The response is the lines after the closing fence joined with ``\\n`` (so the final
    newline is dropped and CRLF becomes LF), ``None`` when empty or whitespace only.
    Without a leading fence the answer is ``("", None)``.
    """
    lines = rust_lines(body)
    if not lines or lines[0] != FENCE:
        return ("", None)
    epitaph = ""
    index = 1
    while index < len(lines) and lines[index] != FENCE:
        value = _field(lines[index], "epitaph:")
        if value is not None:
            epitaph = value
        index += 1
    rest = "\n".join(lines[index + 1 :])
    return (epitaph, rest if rust_trim(rest) else None)


def own_result_ref(agent_id: str, sender: str, body: str) -> str | None:
    """R-DEP-10: the ``terminal_ref`` iff ``sender`` is a child of ``agent_id`` and ``body``
    is a result message."""
    if parent_of(sender) != agent_id:
        return None
    return terminal_ref_of(body)


PARKED_EPITAPHS = frozenset({"stopped", "budget-exhausted"})


def deposit_warrants_launch(body: str | None) -> bool:
    """R-REL-2: every deposit warrants a launch except a ``stopped``/``budget-exhausted`` result.

    ``None`` stands for a deposit that could not be read as text: it warrants.
    """
    if body is None or terminal_ref_of(body) is None:
        return True
    epitaph, _ = split_frontmatter(body)
    return epitaph not in PARKED_EPITAPHS


def parse_entry_name(name: str) -> tuple[int, str, bool] | None:
    """R-TR-1: ``(seq, origin, delivered)`` for ``NNN-<origin>.md`` / ``.json``, else ``None``.

    The stem splits at its **first** ``-``; the sequence is a u32, the origin non-empty.
    """
    if name.endswith(MD):
        stem, delivered = name[: -len(MD)], True
    elif name.endswith(JSON):
        stem, delivered = name[: -len(JSON)], False
    else:
        return None
    head, dash, origin = stem.partition("-")
    if not dash or not origin:
        return None
    seq = parse_u32(head)
    if seq is None:
        return None
    return (seq, origin, delivered)
