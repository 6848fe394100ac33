"""Pure name and frontmatter functions, byte for byte (R-DEP-1, R-DEP-2, R-DEP-3, R-DEP-4, R-DEP-5,
R-DEP-9, R-DEP-10, R-REL-2, R-TR-1)."""

from __future__ import annotations

import pytest

from lernie_ref.core.frontmatter import (
    deposit_name,
    deposit_warrants_launch,
    next_sequence,
    own_result_ref,
    parse_entry_name,
    parse_u32,
    render_plain,
    render_result,
    rust_lines,
    sender_of,
    sequence_of,
    split_frontmatter,
    terminal_ref_of,
)

ISO = "2026-07-11T00:00:00Z"


def test_r_dep_4_plain_bytes_match_upstream_fixture() -> None:
    assert render_plain("user", ISO, "steer left\n") == (
        b"---\nfrom: user\ndeposited_at: 2026-07-11T00:00:00Z\n---\nsteer left\n"
    )


def test_r_dep_4_content_is_verbatim_no_newline_added_no_quoting() -> None:
    assert render_plain("a: b", ISO, "") == b"---\nfrom: a: b\ndeposited_at: " + ISO.encode() + (
        b"\n---\n"
    )
    assert render_plain("user", ISO, "---\nfrom: x\n---\n\xe9") == (
        b"---\nfrom: user\ndeposited_at: 2026-07-11T00:00:00Z\n---\n---\nfrom: x\n---\n\xc3\xa9"
    )


def test_r_dep_5_result_bytes_match_upstream_fixture() -> None:
    assert render_result("parent-child", ISO, "final-response", "abc123", "all done\n") == (
        b"---\nfrom: parent-child\ndeposited_at: 2026-07-11T00:00:00Z\nepitaph: final-response\n"
        b"terminal_ref: abc123\n---\nall done\n"
    )


def test_r_dep_5_result_without_response_ends_at_the_fence() -> None:
    assert render_result("p-c", ISO, "stopped", "abc", None) == (
        b"---\nfrom: p-c\ndeposited_at: 2026-07-11T00:00:00Z\nepitaph: stopped\n"
        b"terminal_ref: abc\n---\n"
    )
    # An empty response is still a response (Some("")): the bytes are the same.
    assert render_result("p-c", ISO, "stopped", "abc", "") == render_result(
        "p-c", ISO, "stopped", "abc", None
    )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("007", 7),
        ("+5", 5),
        ("4294967295", 4294967295),
        ("0000000000004294967295", 4294967295),
        ("4294967296", None),
        ("", None),
        ("+", None),
        (" 1", None),
        ("1 ", None),
        ("1_0", None),
        ("-0", None),
        ("0x1", None),
        ("١", None),  # a non-ASCII digit
    ],
)
def test_r_dep_3_u32_parsing_is_rusts(text: str, value: int | None) -> None:
    assert parse_u32(text) == value


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("\n", [""]),
        ("a", ["a"]),
        ("a\n", ["a"]),
        ("a\n\n", ["a", ""]),
        ("a\r\nb\r\n", ["a", "b"]),
        ("a\r\r\n", ["a\r"]),
        ("a\r", ["a\r"]),
        ("a\r\nb\r", ["a", "b\r"]),
        ("\r", ["\r"]),
        ("a\x0bb\x0cc\u2028d", ["a\x0bb\x0cc\u2028d"]),
    ],
)
def test_rust_lines_split_only_on_newline(text: str, lines: list[str]) -> None:
    assert rust_lines(text) == lines


def test_r_dep_1_name_has_at_least_three_digits() -> None:
    assert deposit_name("user", 1) == "user-001.md"
    assert deposit_name("a-b", 42) == "a-b-042.md"
    assert deposit_name("user", 1234) == "user-1234.md"


@pytest.mark.parametrize(
    ("name", "sender"),
    [
        ("user-001.md", "user"),
        ("a-b-c-002.md", "a-b-c"),
        ("20260101T000000Z-0a1b2c3d-007.md", "20260101T000000Z-0a1b2c3d"),
        ("user-+5.md", "user"),
        ("user-1234.md", "user"),
        ("user-abc.md", None),
        ("user-001.md.tmp", None),
        (".user-001.md.tmp", None),
        (".user-001.md.0123456789ab.tmp", None),
        (".user-001.md", None),
        ("-001.md", None),
        ("user001.md", None),
        ("user-001.txt", None),
        ("user-.md", None),
        ("user-4294967296.md", None),
        ("user- 1.md", None),
    ],
)
def test_r_dep_9_sender_of(name: str, sender: str | None) -> None:
    assert sender_of(name) == sender


def test_r_dep_2_sequence_ignores_foreign_and_malformed_names() -> None:
    # Upstream's fixture: only `user-007.md` counts for `user`.
    names = ["user-abc.md", "user-agent-001.md", "p2-005.md", "user-007.md"]
    assert next_sequence(names, "user") == 8
    assert next_sequence(names, "p2") == 6
    assert next_sequence(names, "p1") == 1
    assert next_sequence([".user-009.md.1.ab.tmp", "user-003.md.tmp", "user-+4.md"], "user") == 5
    assert sequence_of("p1-abc-001.md", "p1") is None
    assert sequence_of("user-.md", "user") is None


def test_r_dep_9_terminal_ref_of() -> None:
    head = "---\nfrom: c\nepitaph: final-response\nterminal_ref: abc\n---\nbody\n"
    assert terminal_ref_of(head) == "abc"
    assert terminal_ref_of("---\r\nterminal_ref:  abc \r\n---\r\n") == "abc"
    # the first line must be exactly the fence
    assert terminal_ref_of(" ---\nterminal_ref: abc\n---\n") is None
    assert terminal_ref_of("hello\n---\nterminal_ref: abc\n---\n") is None
    # a body line after the closing fence is never the field
    assert terminal_ref_of("---\nfrom: u\n---\nterminal_ref: abc\n") is None
    # an empty value keeps scanning; the match is case-sensitive and at column 0
    assert terminal_ref_of("---\nterminal_ref:\nterminal_ref: x\n---\n") == "x"
    assert terminal_ref_of("---\nTerminal_ref: x\n terminal_ref: y\n---\n") is None
    # with no closing fence the scan runs to the end
    assert terminal_ref_of("---\nfrom: u\nhello\nterminal_ref: late\n") == "late"
    assert terminal_ref_of("") is None


def test_r_dep_9_split_frontmatter() -> None:
    assert split_frontmatter("no fence\nepitaph: died\n") == ("", None)
    assert split_frontmatter(
        "---\nepitaph: stopped\nepitaph:  died \nterminal_ref: x\n---\nline 1\r\nline 2\n"
    ) == ("died", "line 1\nline 2")
    assert split_frontmatter("---\nepitaph: stopped\n---\n") == ("stopped", None)
    assert split_frontmatter("---\nepitaph: stopped\n---\n \n\t\n") == ("stopped", None)
    assert split_frontmatter("---\nepitaph: x\nno close\n") == ("x", None)


def test_r_dep_10_own_result_ref() -> None:
    result = render_result("P-c-1", ISO, "final-response", "sha1", "done").decode()
    plain = render_plain("P-c-1", ISO, "hello").decode()
    assert own_result_ref("P", "P-c-1", result) == "sha1"
    assert own_result_ref("P", "P-c-1", plain) is None
    assert own_result_ref("Q", "P-c-1", result) is None  # a sibling's or stranger's result
    assert own_result_ref("P-c-1", "P-c-1", result) is None  # a self-note
    assert own_result_ref("P", "P-c-1-g-2", result) is None  # a grandchild


@pytest.mark.parametrize(
    ("body", "warrants"),
    [
        (None, True),
        ("---\nfrom: user\ndeposited_at: x\n---\nhello", True),
        (render_result("a-b", ISO, "stopped", "s", None).decode(), False),
        (render_result("a-b", ISO, "budget-exhausted", "s", None).decode(), False),
        (render_result("a-b", ISO, "final-response", "s", "hi").decode(), True),
        (render_result("a-b", ISO, "died", "s", None).decode(), True),
        (render_result("a-b", ISO, "", "s", None).decode(), True),
        (render_result("a-b", ISO, "whatever", "s", None).decode(), True),
        # a `stopped` epitaph without terminal_ref is a plain message
        ("---\nepitaph: stopped\n---\n", True),
    ],
)
def test_r_rel_2_deposit_warrants_launch(body: str | None, warrants: bool) -> None:
    assert deposit_warrants_launch(body) is warrants


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("001-user.md", (1, "user", True)),
        ("002-scripted.json", (2, "scripted", False)),
        ("003-tool.json", (3, "tool", False)),
        ("004-a-b-c-d.md", (4, "a-b-c-d", True)),
        ("1234-x.md", (1234, "x", True)),
        ("noseq.md", None),
        ("abc-user.md", None),
        ("001-.md", None),
        ("002-m.txt", None),
        ("001user.md", None),
    ],
)
def test_r_tr_1_entry_names(name: str, parsed: tuple[int, str, bool] | None) -> None:
    assert parse_entry_name(name) == parsed
