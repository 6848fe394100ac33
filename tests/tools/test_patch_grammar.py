"""R-TOOL-5: the patch envelope's grammar and its hunks, pure (no file touched here)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lernie_ref.core.errors import PatchError, ToolPathError
from lernie_ref.core.patch import apply_hunks, join_lines, parse, relative_parts, split_lines


def env(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def test_r_tool_5_add_delete_update_move_parse_in_order() -> None:
    ops = parse(env(
        "*** Add File: a/new.txt", "+one", "+", "+three",
        "*** Delete File: old.txt",
        "*** Update File: src/m.py", "*** Move to: src/n.py",
        "@@ def f():", " x = 1", "-y = 2", "+y = 3",
        "@@", " z", "+w", "*** End of File",
    ))
    assert [(o.kind, o.path, o.move_to) for o in ops] == [
        ("add", "a/new.txt", None), ("delete", "old.txt", None),
        ("update", "src/m.py", "src/n.py"),
    ]
    assert ops[0].lines == ["one", "", "three"]
    first, second = ops[2].hunks
    assert (first.anchor, first.old, first.new, first.at_end) == (
        "def f():", ["x = 1", "y = 2"], ["x = 1", "y = 3"], False)
    assert (second.anchor, second.old, second.new, second.at_end) == (None, ["z"], ["z", "w"], True)


def test_r_tool_5_blank_lines_around_and_crlf_are_tolerated() -> None:
    ops = parse("\n\n*** Begin Patch\r\n*** Delete File: x\r\n*** End Patch\r\n\n\n")
    assert [(o.kind, o.path) for o in ops] == [("delete", "x")]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty"),
        ("*** Add File: a\n+x\n*** End Patch\n", "must start with `*** Begin Patch`"),
        ("*** Begin Patch\n*** Add File: a\n+x\n", "must end with `*** End Patch`"),
        (env(), "holds no operation"),
        (env("*** Add File: a", "x"), "starts with `+`"),
        (env("*** Delete File: a", "+x"), "takes no lines"),
        (env("*** Update File: a"), "has no hunk"),
        (env("*** Update File: a", "@@", "@@", " x"), "an empty hunk"),
        (env("*** Update File: a", "?x"), "starts with ' ', '-' or '+'"),
        (env("*** Frobnicate File: a"), "unknown patch header"),
        (env("*** Move to: b"), "must follow an `*** Update File:`"),
        (env(" context before any header"), "before the first"),
        (env("*** Add File:   "), "names no path"),
        (env("*** Delete File: a", "*** End of File"), "must close a hunk"),
        (env("*** Update File: a", " x", "*** End of File", " y"), "starts with `@@`"),
    ],
)
def test_r_tool_5_malformed_envelopes_are_refused_with_the_reason(text: str, needle: str) -> None:
    with pytest.raises(PatchError) as caught:
        parse(text)
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)


def _update(*hunk_lines: str) -> list:  # type: ignore[type-arg]
    return parse(env("*** Update File: f", *hunk_lines))[0].hunks


def test_r_tool_5_hunks_apply_in_order_with_anchor_and_end_of_file() -> None:
    text = "def f():\n    return 1\n\ndef g():\n    return 1\nlast\n"
    hunks = _update("@@ def g():", "-    return 1", "+    return 2", "@@", " last", "+more",
                    "*** End of File")
    assert apply_hunks(text, hunks, "f") == (
        "def f():\n    return 1\n\ndef g():\n    return 2\nlast\nmore\n")


def test_r_tool_5_context_that_does_not_match_is_an_error_naming_the_hunk() -> None:
    with pytest.raises(PatchError) as caught:
        apply_hunks("a\nb\n", _update(" a", "-c", "+d"), "f")
    assert "f: hunk 1" in str(caught.value) and "do not match" in str(caught.value)
    with pytest.raises(PatchError, match="anchor 'nope' not found"):
        apply_hunks("a\n", _update("@@ nope", "+x"), "f")
    with pytest.raises(PatchError, match="hunk 2"):  # hunks match in order, never backwards
        apply_hunks("a\nb\n", _update(" b", "+c", "@@", " a", "+z"), "f")


def test_r_tool_5_trailing_blanks_are_forgiven_then_surrounding_ones() -> None:
    assert apply_hunks("x = 1   \n", _update("-x = 1", "+x = 2"), "f") == "x = 2\n"
    assert apply_hunks("   x = 1\n", _update("-x = 1", "+x = 2"), "f") == "x = 2\n"


def test_r_tool_5_pure_addition_goes_to_the_end_or_after_the_anchor() -> None:
    assert apply_hunks("a\nb", _update("+c"), "f") == "a\nb\nc\n"
    assert apply_hunks("a\nb\n", _update("@@ a", "+between"), "f") == "a\nbetween\nb\n"


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=8),
                max_size=12), st.data())
def test_r_tool_5_replacing_any_present_block_gives_the_expected_file(
    lines: list[str], data: st.DataObject
) -> None:
    """An update naming an existing block exactly as context+removal rewrites that block
    (the first occurrence) and leaves the rest of the file alone."""
    lines = [line.strip() or "x" for line in lines]  # no blank-insensitive ambiguity
    if not lines:
        lines = ["only"]
    start = data.draw(st.integers(0, len(lines) - 1))
    end = data.draw(st.integers(start + 1, len(lines)))
    block = lines[start:end]
    first = next(i for i in range(len(lines)) if lines[i : i + len(block)] == block)
    new = data.draw(st.lists(st.sampled_from(["n1", "n2", "n3"]), max_size=3))
    hunks = _update(*["-" + line for line in block], *["+" + line for line in new])
    result = apply_hunks(join_lines(lines), hunks, "f")
    assert split_lines(result) == lines[:first] + new + lines[first + len(block) :]


@pytest.mark.parametrize(
    ("text", "needle"),
    [("/etc/passwd", "is absolute"), ("../x", "climbs with `..`"), ("a/../../b", "climbs"),
     ("a/.git/config", "`.git`"), ("a\0b", "NUL")],
)
def test_r_tool_2_paths_are_refused_as_text(text: str, needle: str) -> None:
    with pytest.raises(ToolPathError, match=needle.replace("(", r"\(")):
        relative_parts(text)


def test_r_tool_2_dot_and_empty_components_are_dropped() -> None:
    assert relative_parts("./a//b/./c") == ("a", "b", "c")
    assert relative_parts(".") == ()
