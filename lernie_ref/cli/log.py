"""``lernie log <ws> <agent>``: print an agent's transcript readably (R-LOG-1).

One block per entry, oldest first: a header ``NNN <who>`` naming the sender of a
delivered message (with the epitaph of a result message), the model's text and
tool calls, or a tool result; then the text, indented. Reads the committed
branch (``agents/<id>``), so it works while a driver runs and after a worktree
was torn down; takes no lock and writes nothing.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from lernie_ref.core.errors import LernieError

if TYPE_CHECKING:
    from lernie_ref.substrate.workspace import Workspace

REASON = "the log reads an existing agent's transcript, named by id or unique name (R-ID-6)"
INDENT = "    "


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workspace", help="the workspace directory")
    parser.add_argument("agent", help="the agent: an agent id or a unique agent name")


def _indent(text: str) -> list[str]:
    return [INDENT + line if line else "" for line in text.rstrip("\n").split("\n")]


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def render_entry(seq: int, origin: str, delivered: bool, data: bytes) -> list[str]:
    """The lines of one entry (pure; used by the verb and its tests)."""
    from lernie_ref.core.entry import entry_blocks
    from lernie_ref.core.frontmatter import seq_text, split_frontmatter, terminal_ref_of

    head = seq_text(seq)
    if delivered:
        text = data.decode("utf-8", "replace")
        if terminal_ref_of(text) is not None:
            epitaph, response = split_frontmatter(text)
            ref = terminal_ref_of(text) or ""
            lines = [f"{head} {origin} · result {epitaph or '?'} (terminal_ref {ref[:12]})"]
            return lines + (_indent(response) if response else [INDENT + "(no text)"])
        body = text
        lines_ = text.split("\n")
        if lines_ and lines_[0] == "---":
            for index in range(1, len(lines_)):
                if lines_[index] == "---":
                    body = "\n".join(lines_[index + 1 :])
                    break
        return [f"{head} {origin}"] + (_indent(body) if body.strip() else [INDENT + "(empty)"])
    try:
        blocks = entry_blocks(data)
    except LernieError as exc:
        return [f"{head} {origin} · unreadable entry: {exc}"]
    if origin == "tool":
        out: list[str] = []
        for block in blocks:
            status = "error" if block.get("is_error") else "ok"
            content = block.get("content")
            if isinstance(content, list):
                text = "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
            else:
                text = str(content)
            out.append(f"{head} tool result {status} for {block.get('tool_use_id')}")
            out.extend(_indent(text) if text else [INDENT + "(empty)"])
        return out or [f"{head} tool (empty)"]
    out = [f"{head} {origin}"]
    spoke = False
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            out.extend(_indent(str(block.get("text", ""))))
            spoke = True
        elif kind == "tool_use":
            out.append(
                f"{INDENT}→ {block.get('name')}({_compact(block.get('input'))}) [{block.get('id')}]"
            )
            spoke = True
        elif kind == "thinking":
            out.extend(_indent("(thinking) " + str(block.get("text", ""))))
            spoke = True
    if not spoke:
        out.append(INDENT + "(no text: a silent terminal response)")
    return out


def run(ns: argparse.Namespace) -> str | None:
    from lernie_ref.core.frontmatter import parse_entry_name
    from lernie_ref.substrate.workspace import Workspace

    ws = Workspace(ns.workspace)
    agent = ws.resolve_agent(ns.agent, REASON)
    ref = f"refs/heads/agents/{agent}"
    listing = ws.git.run(ws.repo_git, ["ls-tree", "--name-only", f"{ref}:messages"], check=False)
    entries: list[tuple[int, str, bool, str]] = []
    if listing.returncode == 0:
        for name in listing.stdout.splitlines():
            parsed = parse_entry_name(name)
            if parsed is not None:
                entries.append((*parsed, name))
    entries.sort(key=lambda e: (e[0], e[3]))
    lines: list[str] = []
    for seq, origin, delivered, name in entries:
        data = _blob(ws, f"{ref}:messages/{name}")
        lines.extend(render_entry(seq, origin, delivered, data))
    if not lines:
        return f"({agent} has no transcript entries yet)"
    return "\n".join(lines)


def _blob(ws: Workspace, spec: str) -> bytes:
    """A blob's text (the runner trims surrounding whitespace, which the display drops anyway)."""
    return ws.git.run(ws.repo_git, ["cat-file", "blob", spec]).stdout.encode("utf-8")
