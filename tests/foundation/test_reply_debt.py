"""The reply debt and reply addressing over real transcript files (R-DEBT, R-ADDR).

Ids as in upstream's seed tests: P = ``20260101-a1``; C/B = ``P-20260102-b2`` (child of P,
the agent under test); S = ``P-20260102-s1`` / ``P-20260102-c3`` (a sibling); W = B's child.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lernie_ref.core import debt
from lernie_ref.core.entry import Entry as Value
from lernie_ref.core.entry import render_model_entry, text_block, tool_use_block
from lernie_ref.core.errors import TranscriptError
from lernie_ref.core.frontmatter import parse_entry_name, render_plain, render_result
from lernie_ref.reply import last_prompter, recipient
from lernie_ref.reply_debt import Entry, owes_a_reply, read_entries, read_text
from lernie_ref.substrate import transcript

P = "20260101-a1"
B = f"{P}-20260102-b2"
C = B
S = f"{P}-20260102-s1"
S3 = f"{P}-20260102-c3"
W = f"{B}-20260103-w9"
ISO = "2026-01-02T00:00:00Z"

TERMINAL = render_model_entry([text_block("Task complete.")], None)
TOOL_CALL = render_model_entry([tool_use_block("t1", "message", {"agent": "x"})], None)
TOOL_RESULT = b'[{"type":"tool_result","tool_use_id":"t1","content":[],"is_error":false}]'


def prompt(sender: str) -> bytes:
    return render_plain(sender, ISO, "please do the thing")


def result(sender: str, epitaph: str = "final-response") -> bytes:
    return render_result(sender, ISO, epitaph, "0123abcd", "done")


def transcript_files(tmp_path: Path, files: list[tuple[str, bytes]]) -> Path:
    worktree = tmp_path / "wt"
    messages = worktree / "messages"
    messages.mkdir(parents=True)
    for name, data in files:
        (messages / name).write_bytes(data)
    return worktree


# (files, owes, recipient of B's final-response)
VECTORS: dict[str, tuple[list[tuple[str, bytes]], bool, str | None]] = {
    "1 never answered owes": ([(f"001-{P}.md", prompt(P))], True, P),
    "2 prompt since the last answer owes": (
        [
            (f"001-{P}.md", prompt(P)),
            ("002-m.json", TERMINAL),
            (f"003-{S}.md", prompt(S)),
            ("004-m.json", TERMINAL),
        ],
        True,
        S,
    ),
    "3 foreign reply owes nothing": (
        [
            (f"001-{S}.md", prompt(S)),
            ("002-m.json", TERMINAL),
            (f"003-{S}.md", result(S)),
            ("004-m.json", TERMINAL),
        ],
        False,
        None,
    ),
    "4 own child's return owes": (
        [
            (f"001-{P}.md", prompt(P)),
            ("002-m.json", TERMINAL),
            (f"003-{W}.md", result(W)),
            ("004-m.json", TERMINAL),
        ],
        True,
        P,
    ),
    "4b own child's obituary owes": (
        [
            (f"001-{P}.md", prompt(P)),
            ("002-m.json", TERMINAL),
            (f"003-{W}.md", result(W, "stopped")),
            ("004-m.json", TERMINAL),
        ],
        True,
        P,
    ),
    "5 self-note owes nothing": (
        [
            (f"001-{P}.md", prompt(P)),
            ("002-m.json", TERMINAL),
            (f"003-{B}.md", prompt(B)),
            ("004-m.json", TERMINAL),
        ],
        False,
        None,
    ),
    "6 tool steps do not close the window": (
        [
            (f"001-{P}.md", prompt(P)),
            ("002-m.json", TERMINAL),
            (f"003-{S}.md", prompt(S)),
            ("004-m.json", TOOL_CALL),
            ("005-tool.json", TOOL_RESULT),
            ("006-m.json", TERMINAL),
        ],
        True,
        S,
    ),
    "7 an answered prompt owes nothing": (
        [(f"001-{P}.md", prompt(P)), ("002-m.json", TERMINAL), ("003-m.json", TERMINAL)],
        False,
        None,
    ),
    "8 unparseable names are not entries": (
        [
            ("noseq.md", prompt(S)),
            ("abc-user.md", prompt("user")),
            ("001-.md", prompt(S)),
            ("002-m.txt", TERMINAL),
        ],
        True,
        P,
    ),
}


@pytest.mark.parametrize("case", list(VECTORS))
def test_r_debt_seed_vectors(tmp_path: Path, case: str) -> None:
    files, owes, to = VECTORS[case]
    worktree = transcript_files(tmp_path, files)
    assert owes_a_reply(read_entries(worktree), B) is owes
    assert recipient(worktree, B, "final-response") == to


def test_r_debt_1_empty_or_missing_messages_owes(tmp_path: Path) -> None:
    assert read_entries(tmp_path) == []
    assert owes_a_reply([], B) is True
    assert recipient(tmp_path, B, "final-response") == P
    assert recipient(tmp_path, P, "final-response") is None


def test_r_debt_1_entries_newest_first(tmp_path: Path) -> None:
    worktree = transcript_files(
        tmp_path, [(f"001-{P}.md", b""), ("010-m.json", b""), ("002-tool.json", b""), ("x.md", b"")]
    )
    assert read_entries(worktree) == [
        Entry(10, "m", False, worktree / "messages" / "010-m.json"),
        Entry(2, "tool", False, worktree / "messages" / "002-tool.json"),
        Entry(1, P, True, worktree / "messages" / f"001-{P}.md"),
    ]


def test_r_debt_1_an_unreadable_entry_is_an_error_never_owes_nothing(tmp_path: Path) -> None:
    worktree = transcript_files(tmp_path, [(f"001-{P}.md", prompt(P))])
    (worktree / "messages" / "002-m.json").mkdir()
    with pytest.raises(TranscriptError):
        owes_a_reply(read_entries(worktree), B)
    with pytest.raises(TranscriptError):
        recipient(worktree, B, "final-response")


def test_r_debt_1_a_delivered_entry_that_is_a_directory_is_an_error(tmp_path: Path) -> None:
    worktree = transcript_files(tmp_path, [("001-m.json", TERMINAL), ("003-m.json", TERMINAL)])
    (worktree / "messages" / f"002-{S}.md").mkdir()
    with pytest.raises(TranscriptError):
        owes_a_reply(read_entries(worktree), B)


def test_r_debt_1_garbage_model_entry_is_an_error(tmp_path: Path) -> None:
    worktree = transcript_files(tmp_path, [(f"001-{P}.md", prompt(P)), ("002-m.json", b"{oops")])
    with pytest.raises(TranscriptError):
        owes_a_reply(read_entries(worktree), B)


def test_r_debt_1_messages_that_is_not_a_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "messages").write_bytes(b"not a directory")
    with pytest.raises(TranscriptError):
        read_entries(tmp_path)
    with pytest.raises(TranscriptError):
        recipient(tmp_path, B, "final-response")


JUNK = [("001-m.json", TERMINAL), ("noseq.md", b"x"), ("abc-user.md", b"x"), ("001-.md", b"x")]

# upstream's addressing cases (lernie result_deposit tests); every one owes a reply
ADDRESSING: dict[str, tuple[str, list[tuple[str, bytes]], str, str | None]] = {
    "dispatch message is the last prompt": (
        C,
        [(f"001-{P}.md", prompt(P)), ("002-m.json", TOOL_CALL), ("003-tool.json", TOOL_RESULT)],
        "final-response",
        P,
    ),
    "operator took over": (
        C,
        [(f"001-{P}.md", prompt(P)), ("002-user.md", prompt("user"))],
        "final-response",
        None,
    ),
    "a sibling asked": (
        C,
        [(f"001-{P}.md", prompt(P)), (f"002-{S3}.md", prompt(S3))],
        "final-response",
        S3,
    ),
    "a child's result is skipped": (
        P,
        [("001-user.md", prompt("user")), (f"002-{C}.md", result(C))],
        "final-response",
        None,
    ),
    "a self-note is skipped": (
        C,
        [(f"001-{P}.md", prompt(P)), (f"002-{C}.md", prompt(C))],
        "final-response",
        P,
    ),
    "no prompt: fall back to the dispatcher": (C, JUNK, "final-response", P),
    "no prompt, root: nobody": (P, JUNK, "final-response", None),
    "stopped goes to the dispatcher": (C, [("001-user.md", prompt("user"))], "stopped", P),
    "budget goes to the dispatcher": (
        C,
        [("001-user.md", prompt("user"))],
        "budget-exhausted",
        P,
    ),
    "died goes to the dispatcher": (C, [("001-user.md", prompt("user"))], "died", P),
    "a root's obituary goes nowhere": (P, [("001-user.md", prompt("user"))], "stopped", None),
}


@pytest.mark.parametrize("case", list(ADDRESSING))
def test_r_addr_upstream_cases(tmp_path: Path, case: str) -> None:
    agent, files, epitaph, to = ADDRESSING[case]
    worktree = transcript_files(tmp_path, files)
    assert recipient(worktree, agent, epitaph) == to


def test_r_addr_2_last_prompter_is_not_windowed(tmp_path: Path) -> None:
    worktree = transcript_files(
        tmp_path,
        [
            (f"001-{S}.md", prompt(S)),
            ("002-m.json", TERMINAL),
            (f"003-{S3}.md", result(S3)),
            (f"004-{B}.md", prompt(B)),
        ],
    )
    assert last_prompter(read_entries(worktree), B) == S


def test_r_addr_obituaries_ignore_an_unreadable_transcript(tmp_path: Path) -> None:
    (tmp_path / "messages").write_bytes(b"not a directory")
    assert recipient(tmp_path, C, "stopped") == P


# ------------------------------------------- the lazy reader and the in-memory decisions

NAMES = st.text(alphabet="0123456789+-mdjsonux.٣", min_size=1, max_size=9)


def expected_order(names: list[str]) -> list[tuple[int, str, bool]]:
    """R-DEBT-1 stated directly: every name R-TR-1 accepts, by (seq, origin, kind), newest
    first (names are distinct files, so ties in all three keep listing order only among
    names that differ in spelling, e.g. ``5-x.md`` and ``005-x.md``)."""
    parsed = [p for p in map(parse_entry_name, names) if p is not None]
    return sorted(parsed, reverse=True)


@settings(max_examples=60, deadline=None)
@given(st.sets(NAMES, max_size=12))
def test_r_debt_1_the_lazy_reader_yields_every_entry_newest_first(names: set[str]) -> None:
    """Odd spellings included: ``+5-a.md``, ``0007-a.json``, a non-ASCII digit, a u32 overflow."""
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp)
        messages = worktree / "messages"
        messages.mkdir()
        chosen = sorted(n for n in names if n not in (".", ".."))
        chosen += ["+5-a.md", "0007-a.json", "٣-a.md", "4294967296-a.md", "4294967295-z.md"]
        for name in chosen:
            (messages / name).write_bytes(b"")
        got = [(e.seq, e.origin, e.delivered) for e in transcript.entries(worktree)]
        assert got == expected_order(chosen)
        assert got[0] == (4294967295, "z", True)
        assert read_entries(worktree) == list(transcript.entries(worktree))


def test_r_debt_1_the_lazy_reader_crosses_its_steps_in_order(tmp_path: Path) -> None:
    """Gaps, one sequence under several spellings and origins, far more sequences than one
    step takes: stepping through equals one full ordering."""
    files = [(f"{n:03d}-{'m.json' if n % 3 else 'u.md'}", b"") for n in range(1, 400, 2)]
    files += [("5-a.md", b""), ("005-a.md", b""), ("+5-b.json", b""), ("0397-z.md", b"")]
    worktree = transcript_files(tmp_path, files)
    got = [(e.seq, e.origin, e.delivered) for e in transcript.entries(worktree)]
    assert got == expected_order([name for name, _ in files])
    assert len(got) == len(files)
    assert got[:3] == [(399, "u", True), (397, "z", True), (397, "m", False)]


def test_r_debt_1_a_reader_can_be_iterated_again(tmp_path: Path) -> None:
    worktree = transcript_files(tmp_path, [(f"{n:03d}-m.json", TERMINAL) for n in range(1, 6)])
    reader = transcript.entries(worktree)
    first = next(iter(reader))
    assert first.seq == 5
    assert [e.seq for e in reader] == [5, 4, 3, 2, 1]
    assert [e.seq for e in reader] == [5, 4, 3, 2, 1]


def test_r_debt_1_the_debt_reads_nothing_older_than_its_window(tmp_path: Path) -> None:
    """A long history whose every old entry is unreadable (a directory under an entry's name):
    the decision reads only the newest entries, down to the previous terminal response."""
    worktree = transcript_files(tmp_path, [
        ("998-m.json", TERMINAL), (f"999-{S}.md", prompt(S)), ("1000-m.json", TERMINAL),
    ])
    for seq in range(1, 998):
        (worktree / "messages" / f"{seq:03d}-{P}.md").mkdir()
    assert recipient(worktree, B, "final-response") == S
    assert owes_a_reply(transcript.entries(worktree), B) is True
    with pytest.raises(TranscriptError):  # reading everything does reach them
        list(map(read_text, read_entries(worktree)))


def test_r_debt_r_addr_decisions_over_entries_in_memory() -> None:
    """The pure decisions take values that carry their bytes: no directory, no path."""
    reads: list[str] = []

    def lazily(name: str, data: bytes) -> Callable[[], bytes]:
        def body() -> bytes:
            reads.append(name)
            return data
        return body

    newest_first = [
        Value(4, "m", False, "004-m.json", lazily("004", TERMINAL)),
        Value(3, S, True, f"003-{S}.md", lazily("003", prompt(S))),
        Value(2, "m", False, "002-m.json", lazily("002", TERMINAL)),
        Value(1, P, True, f"001-{P}.md", lazily("001", prompt(P))),
    ]
    assert debt.owes_a_reply(newest_first, B) is True
    assert debt.recipient(newest_first, B, "final-response") == S
    assert reads == ["004", "002", "003"]  # each read once, nothing before the window
    assert debt.recipient([], C, "died") == P
    with pytest.raises(TranscriptError):
        debt.owes_a_reply([Value(1, "m", False, "001-m.json")], B)  # no bytes supplied
