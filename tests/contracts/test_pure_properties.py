"""Property tests of the pure protocol rules, run twice: Hypothesis's own engine and CrossHair.

Each property is a plain function checked by ``@given`` with the default backend
(hundreds of sampled inputs) and again with ``@settings(backend="crosshair")``
(hypothesis-crosshair: the same test body explored symbolically, CI-sized by
``LERNIE_CROSSHAIR_EXAMPLES``, default 12). The rules are stated independently of
the code (SPEC ids in the test names); the debt and addressing properties run the
real ``read_entries`` → ``owes_a_reply`` / ``last_prompter`` / ``recipient`` chain
over real files, and the in-memory core of ``tests/support/bounded.py``.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lernie_ref import inbox, reply, reply_debt
from lernie_ref.core import frontmatter, ids, vocab, warrant
from lernie_ref.core.entry import Block
from lernie_ref.substrate import transcript
from tests.support import bounded

F = TypeVar("F", bound=Callable[..., None])
Test = Callable[..., None]

EXAMPLES = int(os.environ.get("LERNIE_CROSSHAIR_EXAMPLES", "12"))



def symbolic(examples: int) -> settings:
    """The hypothesis-crosshair run: a CI-sized symbolic exploration of the same property."""
    return settings(
        backend="crosshair",
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


def both(*strategies: st.SearchStrategy[object], cost: int = 1) -> Callable[[F], tuple[Test, Test]]:
    """The property under the default backend and under the CrossHair backend.

    ``cost`` divides the CrossHair example budget for properties whose paths are slow.
    """

    def wrap(prop: F) -> tuple[Test, Test]:
        sampled = settings(max_examples=200, deadline=None)(given(*strategies)(prop))
        explored = symbolic(max(1, EXAMPLES // cost))(given(*strategies)(prop))
        return sampled, pytest.mark.crosshair(explored)

    return wrap


token = st.text(st.characters(blacklist_characters="-"), min_size=1, max_size=8)
u32_text = st.one_of(
    st.text("+-0123456789 _\u0663", max_size=12),
    st.integers(0, 2**33).map(str),
    st.integers(0, 2**32 - 1).map(lambda n: "+" + str(n).zfill(12)),
)
U32 = re.compile(r"\+?[0-9]+")


# ------------------------------------------------------------------------- R-ID


def prop_parent_of(parent: str, a: str, b: str) -> None:
    child = f"{parent}-{a}-{b}"
    assert ids.parent_of(child) == parent
    assert ids.depth(child) == ids.depth(parent) + 1
    assert ids.parent_of(f"{a}-{b}") is None and ids.depth(f"{a}-{b}") == 0


test_r_id_1_parent_drops_the_last_two_tokens, test_r_id_1_parent_crosshair = both(
    st.text(max_size=12), token, token
)(prop_parent_of)


def prop_id_guard(agent_id: str) -> None:
    declined = agent_id in ("", ".", "..") or any(c in agent_id for c in "/\\\0")
    assert ids.is_agent_id(agent_id) is not declined
    bounded.guard_agrees(agent_id)


test_r_id_3_guard_declines_exactly_the_unsafe_ids, test_r_id_3_guard_crosshair = both(
    st.one_of(st.text(max_size=6), st.sampled_from(["", ".", "..", "...", "a/b", "a\\b", "\0"]))
)(prop_id_guard)


# ------------------------------------------------------------------ R-DEP-3, R-DEP-9


def prop_u32(s: str) -> None:
    legal = U32.fullmatch(s) is not None and int(s.lstrip("+") or "0") <= 2**32 - 1
    assert frontmatter.parse_u32(s) == (int(s) if legal else None)


test_r_dep_3_u32_quirks, test_r_dep_3_u32_crosshair = both(u32_text)(prop_u32)


def test_r_dep_3_u32_examples_from_upstream() -> None:
    assert frontmatter.parse_u32("+5") == 5
    assert frontmatter.parse_u32("007") == 7
    assert frontmatter.parse_u32("4294967295") == 2**32 - 1
    for bad in ("-0", " 1", "1 ", "1_0", "", "+", "++1", "0x1", "4294967296", "\u0663"):
        assert frontmatter.parse_u32(bad) is None, bad


def prop_rust_lines(s: str) -> None:
    lines = frontmatter.rust_lines(s)
    *ended, last = s.split("\n")
    expected = [p[:-1] if p.endswith("\r") else p for p in ended] + ([last] if last else [])
    assert lines == expected
    if not any(c in s for c in "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
        assert lines == s.splitlines()


test_r_dep_9_rust_lines, test_r_dep_9_rust_lines_crosshair = both(
    st.text("ab\n\r\x0b\x85\u2028", max_size=10)
)(prop_rust_lines)


def test_r_dep_9_rust_lines_differs_from_splitlines() -> None:
    assert frontmatter.rust_lines("a\r\nb\n") == ["a", "b"]
    assert frontmatter.rust_lines("a\rb") == ["a\rb"] != "a\rb".splitlines()
    assert frontmatter.rust_lines("a\x0bb\u2028c") == ["a\x0bb\u2028c"]
    assert frontmatter.rust_lines("") == [] and frontmatter.rust_lines("\n") == [""]
    assert frontmatter.rust_trim("\x1c x \x1f") == "\x1c x \x1f" != "\x1c x \x1f".strip()


sender = st.text(min_size=1, max_size=10).filter(lambda s: not s.startswith("."))


def prop_deposit_name(who: str, seq: int, others: list[int]) -> None:
    name = frontmatter.deposit_name(who, seq)
    assert frontmatter.sender_of(name) == who  # the LAST hyphen splits (R-DEP-9)
    assert frontmatter.sequence_of(name, who) == seq
    names = [frontmatter.deposit_name(who, k) for k in others] + ["." + name, name + ".tmp"]
    assert frontmatter.next_sequence(names, who) == max(others, default=0) + 1  # R-DEP-2


test_r_dep_2_9_deposit_names_read_back, test_r_dep_2_9_deposit_names_crosshair = both(
    sender, st.integers(0, 2**32 - 1), st.lists(st.integers(0, 5000), max_size=4)
)(prop_deposit_name)


def prop_entry_name(seq: int, origin: str, delivered: bool) -> None:
    name = transcript.entry_name(seq, origin, delivered)
    assert frontmatter.parse_entry_name(name) == (seq, origin, delivered)  # FIRST hyphen


test_r_tr_1_entry_names_read_back, test_r_tr_1_entry_names_crosshair = both(
    st.integers(0, 2**32 - 1), st.text(min_size=1, max_size=10), st.booleans()
)(prop_entry_name)


# ----------------------------------------- R-DEP-4, R-DEP-5, R-DEP-9, R-DEP-10, R-REL-2 round trips

one_line = st.text(st.characters(blacklist_categories=["Cs", "Cc", "Zl", "Zp"]), max_size=12)
ref = st.text("0123456789abcdef", min_size=1, max_size=40)
body_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=30)
EPITAPHS = ("final-response", "stopped", "budget-exhausted", "died")


def expected_response(text: str | None) -> str | None:
    if text is None or not frontmatter.rust_trim(text):
        return None
    return "\n".join(frontmatter.rust_lines(text))


def prop_result_roundtrip(
    child: str, iso: str, epitaph: str, sha: str, response: str | None
) -> None:
    body = frontmatter.render_result(child, iso, epitaph, sha, response).decode()
    assert frontmatter.terminal_ref_of(body) == sha
    assert frontmatter.split_frontmatter(body) == (epitaph, expected_response(response))
    parked = epitaph in ("stopped", "budget-exhausted")
    assert frontmatter.deposit_warrants_launch(body) is not parked
    parent = ids.parent_of(child)
    if parent is not None:
        assert frontmatter.own_result_ref(parent, child, body) == sha
        assert frontmatter.own_result_ref(child, child, body) is None  # a self-note


# The symbolic run of this one is ``tests.support.bounded.result_roundtrip`` (confirmed over all
# paths by tools/crosshair_check.py): under hypothesis-crosshair a single example can take a
# minute, since every path encodes five symbolic strings to UTF-8.
test_r_dep_5_result_roundtrip = settings(max_examples=200, deadline=None)(
    given(one_line, one_line, st.sampled_from(EPITAPHS), ref, st.one_of(st.none(), body_text))(
        prop_result_roundtrip
    )
)


def prop_plain_roundtrip(who: str, iso: str, content: str) -> None:
    raw = frontmatter.render_plain(who, iso, content)
    body = raw.decode()
    assert raw == f"---\nfrom: {who}\ndeposited_at: {iso}\n---\n{content}".encode()
    assert frontmatter.terminal_ref_of(body) is None
    assert frontmatter.deposit_warrants_launch(body)
    assert frontmatter.split_frontmatter(body) == ("", expected_response(content))


test_r_dep_4_plain_roundtrip, test_r_dep_4_plain_roundtrip_crosshair = both(
    one_line, one_line, body_text, cost=3
)(prop_plain_roundtrip)


# --------------------------------------------------------- R-DEBT, R-ADDR, R-STEP-3

steps = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4)), max_size=8)


def write_transcript(root: Path, chosen: list[tuple[int, int]]) -> None:
    messages = root / "messages"
    messages.mkdir()
    for item in bounded.transcript(chosen):
        (messages / item.name).write_bytes(item.data)


def spec_recipient(chosen: list[tuple[int, int]]) -> str | None:
    """R-ADDR-3 with R-DEBT-4 for a ``final-response`` of ``bounded.AGENT``."""
    if not bounded.spec_owes(chosen):
        return None
    prompter = bounded.spec_last_prompter(chosen)
    if prompter == "user":
        return None
    return prompter if prompter is not None else ids.parent_of(bounded.AGENT)


@settings(max_examples=150, deadline=None)
@given(steps)
def test_r_debt_r_addr_over_real_files(chosen: list[tuple[int, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp)
        write_transcript(worktree, chosen)
        entries = reply_debt.read_entries(worktree)
        assert [e.seq for e in entries] == list(range(len(chosen), 0, -1))
        assert reply_debt.owes_a_reply(entries, bounded.AGENT) is bounded.spec_owes(chosen)
        assert reply.last_prompter(entries, bounded.AGENT) == bounded.spec_last_prompter(chosen)
        assert reply.recipient(worktree, bounded.AGENT, "final-response") == spec_recipient(chosen)
        for obituary in ("stopped", "budget-exhausted", "died"):  # R-ADDR-1
            assert reply.recipient(worktree, bounded.AGENT, obituary) == "r-1"


def prop_debt_in_memory(chosen: list[tuple[int, int]]) -> None:
    bounded.debt_agrees(chosen)
    bounded.prompter_agrees(chosen)


test_r_debt_in_memory, test_r_debt_in_memory_crosshair = both(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4)), max_size=6)
)(prop_debt_in_memory)


def test_r_debt_4_a_reply_is_owed_once() -> None:
    asked = [(1, bounded.PLAIN), (0, bounded.ANSWER)]
    assert bounded.spec_owes(asked)
    bounded.debt_agrees(asked)
    answered_again = [*asked, (0, bounded.ANSWER)]  # nothing new asked: the self-launch's answer
    assert not bounded.spec_owes(answered_again)
    bounded.debt_agrees(answered_again)
    foreign = [*asked, (4, bounded.RESULT), (0, bounded.ANSWER)]  # a sibling's reply asks nothing
    assert not bounded.spec_owes(foreign)
    bounded.debt_agrees(foreign)
    child = [*asked, (2, bounded.RESULT), (0, bounded.ANSWER)]  # an own child's result asks
    assert bounded.spec_owes(child)
    bounded.debt_agrees(child)


history = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 3)), max_size=5)


def prop_warrant(chosen: list[tuple[int, int, int]]) -> None:
    bounded.warrant_agrees(chosen)


test_r_step_3_warrant, test_r_step_3_warrant_crosshair = both(history)(prop_warrant)


def test_r_step_3_warrant_examples() -> None:
    assert bounded.spec_warrant([]) is warrant.Warrant.NOTHING_DUE
    assert bounded.spec_warrant([(0, 0, 0)]) is warrant.Warrant.MODEL_CALL_DUE
    assert bounded.spec_warrant([(0, 0, 0), (1, 1, 0)]) is warrant.Warrant.UNPAIRED
    assert bounded.spec_warrant([(1, 1, 0), (2, 0, 1)]) is warrant.Warrant.MODEL_CALL_DUE
    for case in ([], [(0, 0, 0)], [(0, 0, 0), (1, 1, 0)], [(1, 1, 0), (2, 0, 1)], [(1, 0, 0)]):
        bounded.warrant_agrees(case)


def spec_unanswered(codes: list[tuple[int, int, int]]) -> list[str]:
    """R-STEP-2: the newest model message's ids no later tool result answers, when only tool
    results follow it."""
    models = [n for n, (role, _, _) in enumerate(codes) if role == 1]
    if not models or any(role == 0 for role, _, _ in codes[models[-1] :]):
        return []
    answered = {i for role, _, res in codes[models[-1] + 1 :] for i in bounded.mask(res)}
    return [i for i in bounded.mask(codes[models[-1]][1]) if i not in answered]


def prop_unanswered_tail(codes: list[tuple[int, int, int]]) -> None:
    wire = cast(list[tuple[vocab.Role, Sequence[Block]]], bounded.wire(codes))
    assert warrant.unanswered_tail(wire) == spec_unanswered(codes)


test_r_step_2_open_tool_window, test_r_step_2_open_tool_window_crosshair = both(history)(
    prop_unanswered_tail
)


# ------------------------------------------------------------------------ R-DRAIN-3

deposit_files = st.dictionaries(
    st.tuples(st.sampled_from(["user", "r-1", "r-1-c-2", ".r-1", "r-1.tmp"]), st.integers(0, 12)),
    st.integers(1_700_000_000_000_000_000, 1_700_000_000_000_000_003),
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(deposit_files)
def test_r_drain_3_pending_order_over_real_files(files: dict[tuple[str, int], int]) -> None:
    """The one listing a drain delivers from: accepted deposit names only (R-DEP-9), ordered by
    (mtime in ns, name) (R-DRAIN-3); temp files and other names never appear."""
    with tempfile.TemporaryDirectory() as tmp:
        box = Path(tmp)
        for (who, seq), mtime in files.items():
            path = box / frontmatter.deposit_name(who, seq)
            path.write_bytes(b"x")
            os.utime(path, ns=(mtime, mtime))
        (box / ".user-001.md.1.ab.tmp").write_bytes(b"x")
        listed = inbox.pending(box)
        expected = sorted(
            (mtime, frontmatter.deposit_name(who, seq))
            for (who, seq), mtime in files.items()
            if not who.startswith(".")
        )
        assert [(p.mtime_ns, p.name) for p in listed] == expected
        assert all(p.sender == frontmatter.sender_of(p.name) for p in listed)
