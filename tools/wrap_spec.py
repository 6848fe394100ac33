"""Rewrap spec/SPEC.md: one rule per paragraph, prose lines at most 100 columns.

    python tools/wrap_spec.py            # rewrite spec/SPEC.md in place
    python tools/wrap_spec.py --check    # exit 1 if the file would change

Headings, tables and fenced code are left as they are. A list item that starts with a bold
id (``- **R-DEP-6 …**``, ``- **I-5 …**``, ``- **D-1 …**``, ``- **C-1 …**``) becomes its own
paragraph (a blank line before the next one), its continuation lines indented by two spaces;
other list items and paragraphs are wrapped in place. Only whitespace changes: the words, and
their order, are exactly those of the input (checked before writing). A code span is not split
across lines unless it is longer than half a line, and no line starts with a token Markdown
would read as a new block (``- ``, ``#``, ``>``, ``1.``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

WIDTH = 100
SPEC = Path(__file__).resolve().parents[1] / "spec" / "SPEC.md"

_RULE_ITEM = re.compile(r"^- \*\*[RIDC]-(?:[A-Z]+-)?[0-9]+\b")
_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_NBSP = "\x00"  # stands for a space that must not become a line break while wrapping
_LEADS = ("(L", "(T")  # a source citation's mark stays with its path
_RISKY = re.compile(r"^(?:[-+*>]|#+|[0-9]+[.)]|=+|-+|`{3,}.*|~{3,}.*)$")


def _protect(text: str) -> str:
    """Glue short code spans into one token, and a risky token to the one before it."""

    def glue(m: re.Match[str]) -> str:
        span = m.group(0)
        return span.replace(" ", _NBSP) if len(span) <= WIDTH // 2 else span

    text = _CODE_SPAN.sub(glue, text)
    words = text.split(" ")
    out: list[str] = []
    for w in words:
        if out and w and (_RISKY.match(w.replace(_NBSP, " ").split(" ")[0]) or out[-1] in _LEADS):
            out[-1] = out[-1] + _NBSP + w
        else:
            out.append(w)
    return " ".join(out)


def wrap_text(text: str, first: str, rest: str) -> list[str]:
    """Greedy wrap of one paragraph's words; ``first``/``rest`` are the line prefixes."""
    tokens = _protect(" ".join(text.split())).split(" ")
    lines: list[str] = []
    line = first
    bare = True
    for tok in tokens:
        if not bare and len(line) + 1 + len(tok) > WIDTH:
            lines.append(line)
            line, bare = rest, True
        line = line + tok if bare else line + " " + tok
        bare = False
    lines.append(line)
    return [ln.replace(_NBSP, " ") for ln in lines]


def _blocks(lines: list[str]) -> list[tuple[str, list[str]]]:
    """Split the file into (kind, lines): blank, heading, table, code, item, para."""
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        if not ln.strip():
            out.append(("blank", [ln]))
            i += 1
        elif ln.startswith("```") or ln.startswith("~~~"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith(ln[:3]):
                j += 1
            out.append(("code", lines[i : j + 1]))
            i = j + 1
        elif ln.startswith("#"):
            out.append(("heading", [ln]))
            i += 1
        elif ln.lstrip().startswith("|"):
            out.append(("table", [ln]))
            i += 1
        else:
            kind = "item" if ln.startswith("- ") else "para"
            j = i + 1
            while j < len(lines):
                nxt = lines[j]
                if not nxt.strip() or nxt.startswith(("#", "|", "```", "~~~", "- ")):
                    break
                j += 1
            out.append((kind, lines[i:j]))
            i = j
    return out


def wrap(spec: str) -> str:
    """The rewrapped text of ``spec`` (idempotent)."""
    blocks = _blocks(spec.split("\n"))
    out: list[str] = []
    for n, (kind, lines) in enumerate(blocks):
        if kind == "item":
            body = " ".join(ln.strip() for ln in lines)[2:]
            out.extend(wrap_text(body, "- ", "  "))
            following = blocks[n + 1] if n + 1 < len(blocks) else None
            if following is not None and following[0] == "item" and (
                _RULE_ITEM.match(lines[0]) or _RULE_ITEM.match(following[1][0])
            ):
                out.append("")
        elif kind == "para":
            out.extend(wrap_text(" ".join(ln.strip() for ln in lines), "", ""))
        else:
            out.extend(lines)
    result = "\n".join(out)
    if result.split() != spec.split():
        raise AssertionError("rewrapping changed the words of SPEC.md")
    return result


def main(argv: list[str]) -> int:
    text = SPEC.read_text(encoding="utf-8")
    new = wrap(text)
    if "--check" in argv:
        if new != text:
            print("spec/SPEC.md is not wrapped: run python tools/wrap_spec.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        SPEC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
