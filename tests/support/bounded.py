"""CrossHair proof harnesses: small-scope proofs and in-memory cores of the protocol's rules.

The contracts on the implementation are PEP 316 docstrings (SPEC §20). CrossHair
checks those modularly: a caller assumes its callees' contracts. The harnesses
here check the *code* end to end instead: they are written in CrossHair's
``asserts`` style (leading ``assert`` lines are the precondition, the final
``assert`` states the rule) and ``tools/crosshair_check.py`` runs them with
``--analysis_kind=asserts``, so every call into ``lernie_ref`` runs the real body
with no contract assumed. Three kinds:

- **Small scope.** The rule of one parser for *every* input up to a few
  characters: few enough paths that CrossHair can report "confirmed over all
  paths".
- **Finite domains and symbolic holes.** Legal inputs built around a symbolic
  sender or an index into a table of tricky header values, which reach the
  interesting paths of a rule far faster than an unconstrained string.
- **Pure decisions over values.** The reply debt and addressing of
  :mod:`lernie_ref.core.debt` take entries that carry their bytes, so the real
  functions run on a transcript CrossHair chooses (entry kinds and senders as
  small integers) and are compared with an independent statement of R-DEBT-2,
  R-DEBT-3, R-DEBT-4 and R-ADDR-2 written below. The release rule still reads a
  pending deposit through its path; there the path is a :class:`MemPath`.

The module imports the package by module (``frontmatter.parse_u32``), so a test can
run it against a scratch copy of the package with one bug planted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import cast

from lernie_ref import inbox
from lernie_ref.actors import release
from lernie_ref.core import debt, entry, frontmatter, ids, warrant
from lernie_ref.core.errors import NotAnAgentId
from lernie_ref.core.vocab import Role

STAMP = "2026-01-01T00:00:00Z"

# ---------------------------------------------------------------- ids (R-ID)


def guard_agrees(agent_id: str) -> None:
    """R-ID-3: ``require_agent_id`` returns an accepted id unchanged, raises on a declined one."""
    assert isinstance(agent_id, str)
    try:
        accepted = ids.require_agent_id(agent_id) == agent_id
    except NotAnAgentId:
        accepted = False
    assert accepted == ids.is_agent_id(agent_id)


def guard_small(agent_id: str) -> None:
    """R-ID-3 for every id of at most three characters: declined iff empty, ``.``, ``..`` or
    holding ``/``, ``\\`` or NUL.
    """
    assert len(agent_id) <= 3
    declined = agent_id in ("", ".", "..") or any(c in "/\\\0" for c in agent_id)
    assert ids.is_agent_id(agent_id) != declined


def parent_small(agent_id: str) -> None:
    """R-ID-1 and R-ID-2 for every id of at most five characters."""
    assert len(agent_id) <= 5
    tokens = agent_id.split("-")
    expected = None if len(tokens) < 3 else "-".join(tokens[: len(tokens) - 2])
    assert ids.parent_of(agent_id) == expected and ids.depth(agent_id) == (len(tokens) - 1) // 2


def child_of(parent: str, compact: str, short: str) -> None:
    """R-ID-1, R-ID-5: a minted child's parent is the id it was minted under, one level deeper."""
    assert "-" not in compact + short
    child = f"{parent}-{compact}-{short}"
    assert ids.parent_of(child) == parent and ids.depth(child) == ids.depth(parent) + 1


# ------------------------------------------------------- numbers and names (R-DEP, R-TR)


def u32_small(s: str) -> None:
    """R-DEP-3 for every text of at most three characters: ``+`` then ASCII digits, nothing else."""
    assert len(s) <= 3
    digits = s[1:] if s[:1] == "+" else s
    legal = digits != "" and all(c in "0123456789" for c in digits)
    assert frontmatter.parse_u32(s) == (int(digits) if legal else None)


def u32_quirks(n: int) -> None:
    """R-DEP-3: ``+N`` and zero-padded ``N`` parse as ``N``; ``-N``, `` N``, ``N_0`` never parse."""
    assert 0 <= n <= 4294967295
    text = str(n)
    assert (
        frontmatter.parse_u32("+" + text) == n
        and frontmatter.parse_u32("00" + text) == n
        and frontmatter.parse_u32("-" + text) is None
        and frontmatter.parse_u32(" " + text) is None
        and frontmatter.parse_u32(text + "_0") is None
        and frontmatter.parse_u32(str(n + 4294967296)) is None
    )


RUST_WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""Unicode White_Space, the set Rust's ``char::is_whitespace`` and ``str::trim`` use."""


EDGES = ("", *RUST_WHITE_SPACE, "\x1c", "\x1d", "\x1e", "\x1f", "\u200b", "\ufeff", "-")
"""Every White_Space character and the near misses: the separators Python's ``str.strip()``
also removes, zero-width space, byte-order mark, a plain character."""


def trim_edges(left: int, right: int) -> None:
    """R-DEP-9: values are trimmed of Unicode White_Space only (not of chr(28)..chr(31), which
    Python's ``str.strip()`` also removes), whatever character stands at either end.
    """
    assert 0 <= left < len(EDGES) and 0 <= right < len(EDGES)
    text = EDGES[left] + " v a l " + EDGES[right]
    assert frontmatter.rust_trim(text) == text.strip(RUST_WHITE_SPACE)


def lines_small(s: str) -> None:
    """R-DEP-9: Rust ``lines()`` for every text of at most four characters."""
    assert len(s) <= 4
    *ended, last = s.split("\n")
    expected = [p[:-1] if p[-1:] == "\r" else p for p in ended] + ([last] if last else [])
    assert frontmatter.rust_lines(s) == expected


def sender_small(name: str) -> None:
    """R-DEP-9 for every name of at most seven characters (``a-1.md`` fits)."""
    assert len(name) <= 7
    expected = None
    stem = name[:-3]
    cut = stem.rfind("-")
    if name.endswith(".md") and cut > 0 and stem[0] != ".":
        tail = stem[cut + 1 :]
        digits = tail[1:] if tail[:1] == "+" else tail
        if digits != "" and all(c in "0123456789" for c in digits):
            expected = stem[:cut]
    assert frontmatter.sender_of(name) == expected


def sender_last_hyphen(sender: str, seq: int) -> None:
    """R-DEP-9, R-DEP-2: a deposit name splits at its last ``-``, whatever the sender holds."""
    assert sender != "" and sender[0] != "."
    assert 0 <= seq <= 4294967295
    name = f"{sender}-{seq:03d}.md"
    assert frontmatter.sender_of(name) == sender and frontmatter.sequence_of(name, sender) == seq


def next_number(sender: str, other: str, taken: list[int]) -> None:
    """R-DEP-2: the next number is one above the sender's largest; other senders do not count."""
    assert sender != "" and sender[0] != "." and not other.startswith(sender + "-")
    assert other != sender
    assert len(taken) <= 3 and all(0 <= k < 1000 for k in taken)
    names = [f"{sender}-{k:03d}.md" for k in taken] + [f"{other}-999.md", f".{sender}-999.md"]
    assert frontmatter.next_sequence(names, sender) == max(taken, default=0) + 1


def entry_name_small(name: str) -> None:
    """R-TR-1 for every name of at most six characters (``1-a.md`` fits)."""
    assert len(name) <= 6
    expected = None
    for suffix, delivered in ((".md", True), (".json", False)):
        if name.endswith(suffix):
            seq_text, dash, origin = name[: -len(suffix)].partition("-")
            seq = frontmatter.parse_u32(seq_text)
            if dash and origin and seq is not None:
                expected = (seq, origin, delivered)
    assert frontmatter.parse_entry_name(name) == expected


def entry_name_first_hyphen(seq: int, origin: str, delivered: bool) -> None:
    """R-TR-1: a transcript name splits at its first ``-``, whatever the origin holds."""
    assert 0 <= seq <= 4294967295 and origin != ""
    name = f"{seq:03d}-{origin}{'.md' if delivered else '.json'}"
    assert frontmatter.parse_entry_name(name) == (seq, origin, delivered)


# -------------------------------------------------------------- frontmatter (R-DEP-9)

VALUES = ("", " ", "x", " y ", "\r", "---", "a: b", "\u3000z")
"""Header values a head line can carry: empty, blank, plain, padded, a bare CR, a fence-looking
value, a colon, Unicode space. Chosen by index so every body is concrete on its path."""

RESPONSES = (None, "", "\n", "ok", "a\r\nb\n", "---\nterminal_ref: x", " \t")


def epitaph_last_wins(first: int, second: int, response: int) -> None:
    """R-DEP-9: ``split_frontmatter`` takes the last ``epitaph:`` of the head, trimmed."""
    assert 0 <= first < 8 and 0 <= second < 8 and 0 <= response < 7
    text = RESPONSES[response] or ""
    body = f"---\nepitaph: {VALUES[first]}\nepitaph: {VALUES[second]}\n---\n{text}"
    epitaph, _ = frontmatter.split_frontmatter(body)
    assert epitaph == VALUES[second].strip(" \r\u3000")


def ref_first_wins(first: int, second: int, after: int) -> None:
    """R-DEP-9: the first ``terminal_ref:`` of the head with a non-empty trimmed value is the ref;
    a ``terminal_ref:`` line after the closing fence is body text.
    """
    assert 0 <= first < 8 and 0 <= second < 8 and 0 <= after < 8
    body = (
        f"---\nterminal_ref: {VALUES[first]}\nterminal_ref: {VALUES[second]}\n---\n"
        f"terminal_ref: {VALUES[after]}\n"
    )
    trimmed = [v.strip(" \r\u3000") for v in (VALUES[first], VALUES[second])]
    expected = trimmed[0] or trimmed[1] or None
    assert frontmatter.terminal_ref_of(body) == expected


def result_roundtrip(child: int, epitaph: int, response: int) -> None:
    """R-DEP-5, R-DEP-9, R-DEP-10, R-REL-2: a rendered result reads back as what was rendered."""
    assert 0 <= child < 3 and 0 <= epitaph < 4 and 0 <= response < 7
    sender = ("r-1", "r-1-c-2", "user")[child]
    kind = ("final-response", "stopped", "budget-exhausted", "died")[epitaph]
    text = RESPONSES[response]
    body = frontmatter.render_result(sender, STAMP, kind, "f00d", text).decode()
    parent = ids.parent_of(sender)
    lines = (text or "").replace("\r\n", "\n").split("\n")
    expected_response = "\n".join(lines[:-1] if lines[-1] == "" else lines)
    assert (
        frontmatter.terminal_ref_of(body) == "f00d"
        and frontmatter.split_frontmatter(body)
        == (kind, expected_response if expected_response.strip() else None)
        and frontmatter.deposit_warrants_launch(body) == (epitaph in (0, 3))
        and frontmatter.own_result_ref(parent or "", sender, body) == ("f00d" if parent else None)
    )


def plain_roundtrip(sender: int, content: int) -> None:
    """R-DEP-4, R-DEP-9, R-REL-2: a plain deposit has no ref, warrants, and reads back its text."""
    assert 0 <= sender < 3 and 0 <= content < 7
    who = ("r-1", "r-1-c-2", "user")[sender]
    text = RESPONSES[content] or ""
    body = frontmatter.render_plain(who, STAMP, text).decode()
    lines = text.replace("\r\n", "\n").split("\n")
    expected = "\n".join(lines[:-1] if lines[-1] == "" else lines)
    assert (
        body == f"---\nfrom: {who}\ndeposited_at: {STAMP}\n---\n{text}"
        and frontmatter.terminal_ref_of(body) is None
        and frontmatter.deposit_warrants_launch(body)
        and frontmatter.split_frontmatter(body) == ("", expected if expected.strip() else None)
    )


def parked_by_epitaph(k: int) -> None:
    """R-REL-2: a result warrants a launch unless its epitaph is ``stopped``/``budget-exhausted``;
    the epitaph a parked result carries is matched exactly (case and all).
    """
    assert 0 <= k < 6
    epitaph = ("final-response", "stopped", "budget-exhausted", "died", "Stopped", "")[k]
    body = f"---\nfrom: a-b-c\nepitaph: {epitaph}\nterminal_ref: f00d\n---\n"
    assert frontmatter.deposit_warrants_launch(body) == (k not in (1, 2))


# ------------------------------------------------- reply debt and addressing (R-DEBT, R-ADDR)


AGENT = "r-1-c-2"
"""The agent whose transcript the debt harnesses build (depth 1, parent ``r-1``)."""

ORIGINS = (AGENT, "user", AGENT + "-g-3", "r-1", "r-1-s-4", AGENT + "-g-3-h-5")
"""Sender codes: 0 the agent itself, 1 the operator, 2 its child, 3 its parent, 4 a sibling,
5 a grandchild."""

PLAIN, RESULT, ANSWER, TOOL_CALL, TOOL_RESULT = range(5)
"""Entry kinds: a delivered plain message, a delivered result message, a model entry with no
``tool_use`` (a terminal response), a model entry with a ``tool_use``, a tool result."""


def entry_bytes(sender: str, kind: int) -> bytes:
    if kind == PLAIN:
        return frontmatter.render_plain(sender, STAMP, "please")
    if kind == RESULT:
        return frontmatter.render_result(sender, STAMP, "final-response", "f00d", "ok")
    if kind == ANSWER:
        return entry.render_model_entry([entry.text_block("done")], None)
    if kind == TOOL_CALL:
        return entry.render_model_entry([entry.tool_use_block("t", "message", {})], None)
    return entry.render_tool_entry(entry.tool_result_block("t", "ok", False))


def transcript(steps: Sequence[tuple[int, int]]) -> list[entry.Entry[str]]:
    """Entries ``1..n`` from ``(sender code, kind)`` steps, newest first like ``read_entries``,
    each carrying its bytes."""
    out = []
    for seq, (code, kind) in enumerate(steps, start=1):
        delivered = kind in (PLAIN, RESULT)
        origin = ORIGINS[code] if delivered else ("tool" if kind == TOOL_RESULT else "scripted")
        name = f"{seq:03d}-{origin}{'.md' if delivered else '.json'}"
        out.append(entry.Entry(seq, origin, delivered, name, entry_bytes(ORIGINS[code], kind)))
    return out[::-1]


def spec_owes(steps: Sequence[tuple[int, int]]) -> bool:
    """R-DEBT-2, R-DEBT-3, R-DEBT-4 stated over the steps, oldest first, with no file in sight."""
    answers = [i for i, (_, kind) in enumerate(steps) if kind == ANSWER]
    if len(answers) < 2:
        return True  # never answered before this event's own response
    window = steps[answers[-2] + 1 :]
    return any(
        code != 0 and (kind == PLAIN or (kind == RESULT and code == 2)) for code, kind in window
    )


def spec_last_prompter(steps: Sequence[tuple[int, int]]) -> str | None:
    """R-ADDR-2 over the steps: the newest plain message from somebody else."""
    for code, kind in reversed(steps):
        if kind == PLAIN and code != 0:
            return ORIGINS[code]
    return None


def debt_agrees(steps: list[tuple[int, int]]) -> None:
    """R-DEBT-1, R-DEBT-2, R-DEBT-3,
    R-DEBT-4: ``owes_a_reply`` over an in-memory transcript equals the rule."""
    assert len(steps) <= 6
    assert all(0 <= code < 6 and 0 <= kind < 5 for code, kind in steps)
    assert debt.owes_a_reply(transcript(steps), AGENT) == spec_owes(steps)


def prompter_agrees(steps: list[tuple[int, int]]) -> None:
    """R-ADDR-2: ``last_prompter`` over an in-memory transcript equals the rule."""
    assert len(steps) <= 6
    assert all(0 <= code < 6 and 0 <= kind < 5 for code, kind in steps)
    assert debt.last_prompter(transcript(steps), AGENT) == spec_last_prompter(steps)


def step(x: int) -> list[tuple[int, int]]:
    """One transcript step as a number ``sender*5 + kind``; 30 stands for no entry."""
    return [] if x >= 30 else [(x // 5, x % 5)]


def debt_window(p: int, q: int, r: int) -> None:
    """R-DEBT-2, R-DEBT-3,
    R-DEBT-4 on transcripts ``p ANSWER q r ANSWER``: what ``q r`` hold decides the debt
    (a plain message or an own child's result asks; a self-note, a foreign reply, a tool step
    does not), whatever came before the previous answer.
    """
    assert all(0 <= x <= 30 for x in (p, q, r))
    steps = [*step(p), (0, ANSWER), *step(q), *step(r), (0, ANSWER)]
    assert debt.owes_a_reply(transcript(steps), AGENT) == spec_owes(steps)


def prompter_slots(p: int, q: int, r: int) -> None:
    """R-ADDR-2 on every transcript of up to three steps, each a number as in :func:`step`."""
    assert all(0 <= x <= 30 for x in (p, q, r))
    steps = [*step(p), *step(q), *step(r)]
    assert debt.last_prompter(transcript(steps), AGENT) == spec_last_prompter(steps)


# ------------------------------------------------------------------ warrant (R-STEP-3)

ROLES: tuple[str, str, str] = ("user", "assistant", "tool")
IDS = ("a", "b")


def mask(bits: int) -> list[str]:
    return [i for n, i in enumerate(IDS) if bits >> n & 1]


def wire(history: Sequence[tuple[int, int, int]]) -> list[tuple[str, list[entry.Block]]]:
    """``(role, uses, results)`` codes to a wire history; ``uses``/``results`` are id bitmasks."""
    out: list[tuple[str, list[entry.Block]]] = []
    for role, uses, results in history:
        blocks: list[entry.Block] = [entry.text_block("t")]
        if role == 1:
            blocks += [entry.tool_use_block(i, "m", {}) for i in mask(uses)]
        if role == 2:
            blocks = [entry.tool_result_block(i, "r", False) for i in mask(results)]
        out.append((ROLES[role], blocks))
    return out


def spec_warrant(history: Sequence[tuple[int, int, int]]) -> warrant.Warrant:
    """R-STEP-3 over the codes: an unanswered ``tool_use`` id, else the side of the last message."""
    asked = {n for role, uses, _ in history if role == 1 for n in range(2) if uses >> n & 1}
    answered = {n for role, _, res in history if role == 2 for n in range(2) if res >> n & 1}
    if asked - answered:
        return warrant.Warrant.UNPAIRED
    if history and history[-1][0] != 1:
        return warrant.Warrant.MODEL_CALL_DUE
    return warrant.Warrant.NOTHING_DUE


def warrant_agrees(history: list[tuple[int, int, int]]) -> None:
    """R-STEP-3: ``warrant_of`` equals the rule on every history of up to five messages."""
    assert len(history) <= 5
    assert all(0 <= r < 3 and 0 <= u < 4 and 0 <= s < 4 for r, u, s in history)
    history_of = cast(list[tuple[Role, Sequence[entry.Block]]], wire(history))
    assert warrant.warrant_of(history_of) == spec_warrant(history)


def warrant_slots(a: int, b: int, c: int, d: int) -> None:
    """R-STEP-3 on every history of up to four messages, each a number: ``role*16 + uses*4 +
    results``, 48 for none. Fixed slots reach a given history far sooner than a symbolic list.
    """
    assert all(0 <= x <= 48 for x in (a, b, c, d))
    history = [(x // 16, x // 4 % 4, x % 4) for x in (a, b, c, d) if x < 48]
    history_of = cast(list[tuple[Role, Sequence[entry.Block]]], wire(history))
    assert warrant.warrant_of(history_of) == spec_warrant(history)


# ------------------------------------------------------------- release rule (R-REL-1, R-REL-2)

class MemPath:
    """Stands in for a pending deposit's ``Path``: the one method the release rule reads."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def read_bytes(self) -> bytes:
        return self.data


DEPOSITS = (
    ("user", b"---\nfrom: user\ndeposited_at: x\n---\nhi"),
    ("r-1-c", b"---\nfrom: r-1-c\nepitaph: final-response\nterminal_ref: f0\n---\nok"),
    ("r-1-c", b"---\nfrom: r-1-c\nepitaph: stopped\nterminal_ref: f0\n---\n"),
    ("r-1-c", b"---\nfrom: r-1-c\nepitaph: budget-exhausted\nterminal_ref: f0\n---\n"),
    ("r-1-c", b"---\nfrom: r-1-c\nepitaph: died\nterminal_ref: f0\n---\n"),
    ("user", b"\xff not UTF-8"),
)
"""A pending deposit by kind: plain, reply, the two parked obituaries, ``died``, unreadable."""


def release_slots(a: int, b: int, seen: int) -> None:
    """R-REL-1, R-REL-2: after a release, a launch is owed iff some pending deposit is outside the
    seen-set and warrants one by its own kind (everything but a parked obituary).
    """
    assert 0 <= a < 6 and 0 <= b < 6 and 0 <= seen < 4
    listing = []
    for n, kind in enumerate((a, b)):
        sender, data = DEPOSITS[kind]
        path = cast(Path, MemPath(data))
        listing.append(inbox.Pending(f"{sender}-00{n + 1}.md", 100 + n, path, sender))
    seen_set = frozenset((p.name, p.mtime_ns) for n, p in enumerate(listing) if seen >> n & 1)
    owed = any(not seen >> n & 1 and kind not in (2, 3) for n, kind in enumerate((a, b)))
    assert release.owed_launch(listing, seen_set) == owed
