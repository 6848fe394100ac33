"""Deposit and transcript names, and the hand-written frontmatter (R-DEP-1, R-DEP-2, R-DEP-3,
R-DEP-4, R-DEP-5, R-DEP-9, R-DEP-10, R-TR-1).

Pure functions over strings: no I/O, no imports beyond the id arithmetic. The
frontmatter is not YAML: fixed key order, no quoting, matched by exact prefix at
column 0, lines split the way Rust's ``str::lines`` splits them. Readers take the
sender from the *file name* (last ``-`` for inbox names, first ``-`` for
transcript names), never from ``from:``.
"""

from __future__ import annotations

from itertools import compress, repeat  # built into the interpreter: no file is read

from lernie_ref.core.ids import parent_of

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
    """R-DEP-3: Rust ``s.parse::<u32>()``: optional ``+``, one or more ASCII digits, <= 2**32-1.

    Contract (R-DEP-3, with upstream's quirks: ``+5`` and ``007`` parse; ``-0``, `` 1``,
    ``1_0``, non-ASCII digits and 2**32 do not):

    post: __return__ is None or 0 <= __return__ <= 4294967295
    post: __return__ is None or __return__ == int(s.removeprefix("+"))
    post: __return__ is None or (s.isascii() and s.removeprefix("+").isdigit())
    post: __return__ is not None or not (s.isascii() and s.removeprefix("+").isdigit()) or int(s.removeprefix("+")) > 4294967295
    """  # noqa: E501
    digits = s[1:] if s.startswith("+") else s
    if not (digits.isascii() and digits.isdigit()):  # ASCII digits are exactly 0-9
        return None
    value = int(digits)
    return value if value <= U32_MAX else None


def rust_trim(s: str) -> str:
    """Rust ``str::trim``: strip Unicode White_Space from both ends.

    Contract (R-DEP-9 reads values with Rust's ``trim``; unlike ``str.strip()`` it keeps the
    separators chr(28)..chr(31)):

    post: __return__ in s
    post: __return__ == "" or (__return__[0] not in _RUST_WS and __return__[-1] not in _RUST_WS)
    post: all(c in _RUST_WS for c in s.replace(__return__, "", 1))
    post: any(chr(c) in s for c in range(28, 32)) or __return__ == s.strip()
    """
    start, end = 0, len(s)
    while start < end and s[start] in _RUST_WS:
        start += 1
    while end > start and s[end - 1] in _RUST_WS:
        end -= 1
    return s[start:end]


def rust_lines(s: str) -> list[str]:
    """Rust ``str::lines``: split on ``\\n``; a final ``\\n`` adds no line; a line ended by
    ``\\r\\n`` loses that one ``\\r``; an unterminated last line keeps a trailing ``\\r``.

    Contract (R-DEP-9; chr(10) is ``\\n``, chr(13) ``\\r``; ``str.splitlines()`` agrees only on
    text without its extra separators):

    post: all(chr(10) not in line for line in __return__)
    post: len(__return__) == s.count(chr(10)) + (s[-1:] not in ("", chr(10)))
    post: all(p in (line, line + chr(13)) for line, p in zip(__return__, s.split(chr(10))))
    post: all(p == line + chr(13) for line, p in zip(__return__, s.split(chr(10))[:-1]) if p[-1:] == chr(13))
    post: s[-1:] in ('', chr(10)) or __return__[-1] == s.split(chr(10))[-1]
    post: any(chr(c) in s for c in (11, 12, 13, 28, 29, 30, 133, 8232, 8233)) or __return__ == s.splitlines()
    """  # noqa: E501
    if not s:
        return []
    *ended, last = s.split("\n")
    lines = [p[:-1] if p.endswith("\r") else p for p in ended]
    if last:  # an unterminated last line keeps a trailing \r (Rust 1.77 and later)
        lines.append(last)
    return lines


def seq_text(seq: int) -> str:
    """``{:03}``: at least three digits, zero-padded, never truncated.

    Contract (R-DEP-2, R-TR-1: the printed number reads back as itself):

    pre: 0 <= seq <= 4294967295
    post: len(__return__) >= 3 and parse_u32(__return__) == seq
    post: len(__return__) == 3 or __return__[0] != "0"
    """
    return f"{seq:03d}"


def deposit_name(sender: str, seq: int) -> str:
    """R-DEP-1: ``<sender>-<NNN>.md``.

    Contract (R-DEP-1, R-DEP-2, R-DEP-9: the name reads back as its sender and number):

    pre: sender != "" and not sender.startswith(".")
    pre: 0 <= seq <= 4294967295
    post: sender_of(__return__) == sender
    post: sequence_of(__return__, sender) == seq
    """
    return f"{sender}-{seq_text(seq)}{MD}"


def _encode(text: str) -> bytes:
    # Arguments that were not valid UTF-8 arrive with surrogate escapes: write their bytes back.
    return text.encode("utf-8", "surrogateescape")


def render_plain(sender: str, iso: str, content: str) -> bytes:
    """R-DEP-4: ``---\\nfrom: S\\ndeposited_at: T\\n---\\n`` then the content, nothing appended.

    Contract (R-DEP-4 bytes; R-DEP-9 and R-REL-2 read it back: no ``terminal_ref``, the content
    as the response, a launch warranted). Legal input: a printable sender and stamp, no
    surrogates in the content:

    pre: (sender + iso).isprintable()
    pre: not any(55296 <= ord(c) <= 57343 for c in content)
    post: __return__.decode().split(chr(10))[:4] == ["---", "from: " + sender, "deposited_at: " + iso, "---"]
    post: __return__.decode().endswith(content) and len(__return__.decode()) == 30 + len(sender + iso + content)
    post: terminal_ref_of(__return__.decode()) is None and deposit_warrants_launch(__return__.decode())
    post: split_frontmatter(__return__.decode()) == ("", chr(10).join(rust_lines(content)) if rust_trim(content) else None)
    """  # noqa: E501
    return _encode(f"---\nfrom: {sender}\ndeposited_at: {iso}\n---\n{content}")


def render_result(
    child: str, iso: str, epitaph: str, terminal_ref: str, response: str | None
) -> bytes:
    """R-DEP-5: the result head, then the response only when there is one.

    Contract (R-DEP-5; parse(render(x)) == x through R-DEP-9, R-DEP-10 and R-REL-2). Legal input:
    a known epitaph, one-line child and stamp, a lowercase hex ref (a sha), no surrogates:

    pre: epitaph in ("final-response", "stopped", "budget-exhausted", "died")
    pre: chr(10) not in child + iso
    pre: terminal_ref != "" and all("0" <= c <= "9" or "a" <= c <= "f" for c in terminal_ref)
    pre: response is None or not any(55296 <= ord(c) <= 57343 for c in response)
    post: terminal_ref_of(__return__.decode()) == terminal_ref
    post: split_frontmatter(__return__.decode())[0] == epitaph
    post: split_frontmatter(__return__.decode())[1] == (chr(10).join(rust_lines(response)) if rust_trim(response or "") else None)
    post: deposit_warrants_launch(__return__.decode()) == (epitaph not in ("stopped", "budget-exhausted"))
    post: own_result_ref(parent_of(child) or "", child, __return__.decode()) == (terminal_ref if parent_of(child) else None)
    """  # noqa: E501
    head = (
        f"---\nfrom: {child}\ndeposited_at: {iso}\nepitaph: {epitaph}\n"
        f"terminal_ref: {terminal_ref}\n---\n"
    )
    return _encode(head if response is None else head + response)


def sender_of(name: str) -> str | None:
    """R-DEP-9: the sender of a pending-deposit name, or ``None`` if the name is not a deposit.

    Ends in ``.md``; the stem splits at its **last** ``-`` into a non-empty sender that
    does not start with ``.`` and a u32 tail. Temporary files (leading ``.``) never match.

    Contract (R-DEP-9, both directions):

    post: __return__ is None or (name.startswith(__return__ + "-") and name.endswith(".md"))
    post: __return__ is None or parse_u32(name[len(__return__) + 1 : -3]) is not None
    post: __return__ is None or "-" not in name[len(__return__) + 1 : -3]
    post: __return__ is None or __return__[:1] not in ("", ".")
    post: __return__ is not None or name[:1] in (".", "-") or sequence_of(name, name[:-3].rpartition("-")[0]) is None
    """  # noqa: E501
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
    """R-DEP-2: ``k`` if ``name`` is ``<sender>-<k>.md`` with a u32 ``k``, else ``None``.

    Contract (R-DEP-2, both directions; consistent with R-DEP-9 for a legal sender):

    post: __return__ is None or (name.startswith(sender + "-") and name.endswith(".md"))
    post: __return__ is None or parse_u32(name[len(sender) + 1 : -3]) == __return__
    post: __return__ is not None or name != sender + "-" + name[len(sender) + 1 : -3] + ".md" or parse_u32(name[len(sender) + 1 : -3]) is None
    post: __return__ is None or sender[:1] in ("", ".") or sender_of(name) == sender
    """  # noqa: E501
    prefix = f"{sender}-"
    if not (name.startswith(prefix) and name.endswith(MD)) or len(name) < len(prefix) + len(MD):
        return None
    return parse_u32(name[len(prefix) : -len(MD)])


def next_sequence(names: list[str], sender: str) -> int:
    """R-DEP-2: one more than the largest sequence of ``sender`` among ``names``, else 1.

    Contract (R-DEP-2: above every number the sender holds, and the least such):

    post: __return__ >= 1
    post: all((sequence_of(n, sender) or 0) < __return__ for n in names)
    post: __return__ == 1 or __return__ - 1 in [sequence_of(n, sender) for n in names]
    """
    # sequence_of and parse_u32 over the whole listing in C (map, compress): an inbox may
    # hold thousands of pending names and every deposit reads them all, so no Python code
    # runs per name. A name that starts with the prefix (ending in ``-``) and ends in
    # ``.md`` cannot have them overlap.
    prefix = f"{sender}-"
    mine = list(compress(names, map(str.startswith, names, repeat(prefix))))
    mine = list(compress(mine, map(str.endswith, mine, repeat(MD))))
    # the tail between them, one leading "+" dropped (parse_u32): ASCII digits or no number
    tails = list(map(str.removeprefix, map(str.__getitem__, mine,
                                           repeat(slice(len(prefix), -len(MD)))), repeat("+")))
    ascii_tails = list(compress(tails, map(str.isascii, tails)))
    numbers = map(int, compress(ascii_tails, map(str.isdigit, ascii_tails)))
    best = max(filter(U32_MAX.__ge__, numbers), default=0)
    return best + 1


def _field(line: str, key: str) -> str | None:
    return rust_trim(line[len(key) :]) if line.startswith(key) else None


def terminal_ref_of(body: str) -> str | None:
    """R-DEP-9: the ``terminal_ref:`` value of a result message, else ``None``.

    The first line must be exactly ``---``; the scan stops at the next ``---`` and,
    with no closing fence, runs to the end of the text. An empty value keeps scanning.

    Contract (R-DEP-9: a non-empty trimmed value from a ``terminal_ref:`` line of the head):

    post: __return__ is None or rust_lines(body)[0] == "---"
    post: __return__ is None or (__return__ != "" and __return__ == rust_trim(__return__))
    post: __return__ is None or [rust_trim(x[13:]) for x in rust_lines(body)[1:] if x.startswith("terminal_ref:") and rust_trim(x[13:])][0] == __return__
    post: __return__ is None or "---" not in rust_lines(body)[1:][: [x.startswith("terminal_ref:") and rust_trim(x[13:]) == __return__ for x in rust_lines(body)[1:]].index(True)]
    post: __return__ is not None or rust_lines(body)[:1] != ["---"] or not any(x.startswith("terminal_ref:") and rust_trim(x[13:]) for x in rust_lines(body)[1:][: (rust_lines(body)[1:] + ["---"]).index("---")])
    """  # noqa: E501
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

    Contract (R-DEP-9):

    post: rust_lines(body)[:1] == ["---"] or __return__ == ("", None)
    post: __return__[0] == rust_trim(__return__[0])
    post: __return__[1] is None or (rust_trim(__return__[1]) != "" and chr(10).join(rust_lines(body)).endswith(chr(10) + __return__[1]))
    """  # noqa: E501
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
    is a result message.

    Contract (R-DEP-10: a sibling's, parent's or grandchild's result is an ordinary message):

    post: __return__ == (terminal_ref_of(body) if parent_of(sender) == agent_id else None)
    """
    if parent_of(sender) != agent_id:
        return None
    return terminal_ref_of(body)




def deposit_warrants_launch(body: str | None) -> bool:
    """R-REL-2: every deposit warrants a launch except a ``stopped``/``budget-exhausted`` result.

    ``None`` stands for a deposit that could not be read as text: it warrants.

    Contract (R-REL-2: only a parked result does not warrant; an unreadable deposit warrants):

    post: body is not None or __return__
    post: __return__ or terminal_ref_of(body or "") is not None
    post: __return__ == (body is None or terminal_ref_of(body) is None or split_frontmatter(body)[0] not in ("stopped", "budget-exhausted"))
    """  # noqa: E501
    from lernie_ref.core.vocab import PARKED_EPITAPHS  # enum stays off the message path

    if body is None or terminal_ref_of(body) is None:
        return True
    epitaph, _ = split_frontmatter(body)
    return epitaph not in PARKED_EPITAPHS


def parse_entry_name(name: str) -> tuple[int, str, bool] | None:
    """R-TR-1: ``(seq, origin, delivered)`` for ``NNN-<origin>.md`` / ``.json``, else ``None``.

    The stem splits at its **first** ``-``; the sequence is a u32, the origin non-empty.

    Contract (R-TR-1, both directions; ``delivered`` is the ``.md`` suffix):

    post: __return__ is None or (__return__[2] == name.endswith(".md") and __return__[1] != "")
    post: __return__ is None or parse_u32(name.partition("-")[0]) == __return__[0]
    post: __return__ is None or name.partition("-")[2] == __return__[1] + (".md" if __return__[2] else ".json")
    post: __return__ is not None or not name.endswith((".md", ".json")) or parse_u32(name.partition("-")[0]) is None or name.partition("-")[2] in (".md", ".json")
    """  # noqa: E501
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
