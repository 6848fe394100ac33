"""Properties of the name and frontmatter functions over generated inputs (R-DEP-1, R-DEP-2,
R-DEP-3, R-DEP-4, R-DEP-5, R-DEP-9)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lernie_ref.core.frontmatter import (
    U32_MAX,
    deposit_name,
    next_sequence,
    parse_entry_name,
    render_plain,
    render_result,
    rust_lines,
    rust_trim,
    sender_of,
    sequence_of,
    split_frontmatter,
    terminal_ref_of,
)
from lernie_ref.core.ids import is_agent_id

ISO = "2026-07-11T00:00:00Z"
senders = st.text(min_size=1, max_size=30).filter(lambda s: is_agent_id(s) and s[0] != ".")
epitaphs = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=20)
tokens = st.text(alphabet="0123456789abcdef", min_size=1, max_size=40)
seqs = st.integers(min_value=0, max_value=U32_MAX)


@given(senders, seqs)
def test_r_dep_9_every_deposit_name_reads_back(sender: str, seq: int) -> None:
    name = deposit_name(sender, seq)
    assert sender_of(name) == sender
    assert sequence_of(name, sender) == seq
    assert sender_of("." + name) is None
    assert sender_of(f".{name}.0123456789ab.tmp") is None


@given(st.lists(st.tuples(senders, seqs), max_size=8), senders)
def test_r_dep_2_next_sequence_exceeds_every_own_number(
    files: list[tuple[str, int]], sender: str
) -> None:
    names = [deposit_name(s, n) for s, n in files]
    nxt = next_sequence(names, sender)
    own = [n for s, n in files if s == sender]
    assert nxt == (max(own) + 1 if own else 1)


@given(senders, epitaphs, tokens, st.none() | st.text(max_size=80))
def test_r_dep_5_a_result_reads_back(
    child: str, epitaph: str, ref: str, response: str | None
) -> None:
    body = render_result(child, ISO, epitaph, ref, response).decode()
    assert terminal_ref_of(body) == ref
    got_epitaph, got_response = split_frontmatter(body)
    assert got_epitaph == epitaph
    if response is None or not rust_trim("\n".join(rust_lines(response))):
        assert got_response is None
    else:
        assert got_response == "\n".join(rust_lines(response))


@given(senders, st.text(max_size=80))
def test_r_dep_4_a_plain_message_is_never_a_result(sender: str, content: str) -> None:
    assert terminal_ref_of(render_plain(sender, ISO, content).decode()) is None


@given(seqs, st.text(min_size=1, max_size=20).filter(lambda s: not s.startswith("-")))
def test_r_tr_1_entry_names_read_back(seq: int, origin: str) -> None:
    assert parse_entry_name(f"{seq:03d}-{origin}.md") == (seq, origin, True)
    assert parse_entry_name(f"{seq:03d}-{origin}.json") == (seq, origin, False)
