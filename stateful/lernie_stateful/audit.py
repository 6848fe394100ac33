"""`lernie-check audit <ws>`: what a workspace's files and git history can witness.

Theory of operation. The audit is an outside observer: it reads a workspace
left by *any* implementation of the protocol (live or finished) and judges it
against SPEC.md without trusting the implementation's own reasoning. It reads
the disk and the git history itself (the git CLI in a subprocess) and re-derives
every decision it judges -- the transcript counter, the reply debt, the reply
address -- with the short functions below, written from SPEC.md alone. It imports
nothing from ``lernie_ref``: a bug in the implementation's decision logic must
not hide in the judge.

What it reads:

- the registry: ``refs/heads/agents/*`` (R-WS-3); the marks ``refs/lernie/<kind>/<id>`` (R-WS-5);
- each agent's first-parent history from its creation commit to its tip, the
  paths each commit adds, changes or deletes, and the bytes of every entry
  (R-WS-4, R-TR-1..4);
- every inbox directory (R-DEP-9) and every worktree's ``messages/`` (strays, R-DRAIN-2);
- the kernel's lock table (``/proc/locks``), read-only, to say which agents are
  being driven while it reads (it never takes a lock: a probe would race drivers).

What it checks, each finding naming the files or commits involved:

=========  =====================================================================
numbering  one commit per entry, subject ``transcript NNN: <origin> [<id>]``, the
           counter max + 1, entries never changed or removed (R-TR-1..3, I-4)
format     every delivered entry is a well-formed deposit whose ``from:`` is its
           origin; model and tool entries are entry JSON (R-DEP-4/5, R-TR-4)
delivery   every message an agent's transcript says it sent (a ``message`` or
           ``dispatch`` tool call answered ok) is pending or delivered exactly
           once; no bytes both pending and delivered, none delivered twice (I-5)
results    every result names a commit of its sender; a ``final-response`` answers
           a debt (I-12), goes to the re-derived address, never to its own sender
           (I-11), carries the entry's text; an obituary goes to the parent
           (R-ADDR-1); an owed reply that never left is reported (R-SCAN-9)
marks      ``returned`` is the ``terminal_ref`` of the sender's newest result
           (R-DEP-8, I-14); every mark names a commit of its agent
residue    torn or stray files: temp files, staging files, uncommitted entries,
           inboxes and marks with no agent (debris)
names      every creation commit holds ``goal.md`` and ``name``; no two agents wear one
           name, so every name resolves (R-ID-6, R-ID-8); every agent's goal was sent:
           a deposit from its creator with ``goal.md``'s bytes is pending for it or
           delivered to it (R-WS-4, R-PROBE-5/6: no goal-less agent nobody reports)
=========  =====================================================================

A *violation* is something no run of a correct implementation leaves behind,
crashes included; exit status 1. A *note* is residue a crash may legitimately
leave (a temp file of a killed writer, an entry renamed but not committed, a
reply whose driver died before depositing it) and which the next touch or scan
heals; notes count as violations only with ``--strict`` (for a workspace that
was run without crashes and is quiescent).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

Severity = Literal["violation", "note"]

# ---------------------------------------------------------------------------
# Layout names (SPEC §0, R-WS-1..5). Another implementation may rename them
# through its adapter file (lernie_stateful.conform.adapter.Layout).


@dataclass(frozen=True)
class Layout:
    repo: str = "repo.git"
    inbox: str = "inbox"
    steps: str = "steps"
    agents: str = "agents"
    messages: str = "messages"
    agent_ref_prefix: str = "refs/heads/agents/"
    mark_ref_prefix: str = "refs/lernie/"
    staging: str = "staging.json"
    goal: str = "goal.md"
    name: str = "name"
    user: str = "user"
    tool_origin: str = "tool"
    model_origin: str = "scripted"  # the origin of the kit model's entries (NNN-<origin>.json)
    other_marks: tuple[str, ...] = ()  # mark kinds beyond R-WS-5 the implementation keeps


OBITUARIES = frozenset({"stopped", "budget-exhausted", "died"})
FINAL = "final-response"
MARK_KINDS = frozenset({"returned", "budget-exhausted", "stopped"})

# ---------------------------------------------------------------------------
# Findings


@dataclass(frozen=True)
class Finding:
    severity: Severity
    check: str
    rules: str
    agent: str | None
    message: str
    where: tuple[str, ...] = ()

    def line(self) -> str:
        head = "VIOLATION" if self.severity == "violation" else "note"
        who = f" {self.agent}:" if self.agent else ""
        where = f"  [{', '.join(self.where)}]" if self.where else ""
        return f"{head} {self.check} ({self.rules}){who} {self.message}{where}"


@dataclass
class Report:
    workspace: str
    agents: int = 0
    entries: int = 0
    commits: int = 0
    results: int = 0
    pending: int = 0
    driven: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def add(self, severity: Severity, check: str, rules: str, agent: str | None, message: str,
            *where: str) -> None:
        self.findings.append(Finding(severity, check, rules, agent, message, tuple(where)))

    def violations(self, strict: bool = False) -> list[Finding]:
        return [f for f in self.findings if f.severity == "violation" or strict]

    def as_json(self, strict: bool = False) -> dict[str, object]:
        return {
            "workspace": self.workspace,
            "agents": self.agents, "entries": self.entries, "commits": self.commits,
            "results": self.results, "pending": self.pending, "driven": self.driven,
            "ok": not self.violations(strict),
            "findings": [asdict(f) for f in self.findings],
        }

    def text(self, strict: bool = False) -> str:
        lines = [
            f"audit of {self.workspace}: {self.agents} agents, {self.commits} commits, "
            f"{self.entries} transcript entries, {self.results} results, "
            f"{self.pending} pending deposits"
        ]
        if self.driven:
            lines.append("driven while read (a live workspace may change under the audit): "
                         + ", ".join(self.driven))
        lines += [f.line() for f in self.findings]
        bad = len(self.violations(strict))
        notes = sum(f.severity == "note" for f in self.findings)
        verdict = "ok" if not bad else "FAILED"
        lines.append(f"{verdict}: {sum(f.severity == 'violation' for f in self.findings)} "
                     f"violations, {notes} notes")
        return "\n".join(lines)


class AuditError(Exception):
    """The workspace cannot be read at all (not a workspace, git missing)."""


# ---------------------------------------------------------------------------
# The audit's own readings of SPEC.md (written here, not imported).


def u32(text: str) -> int | None:
    """R-DEP-3: an optional ``+`` then ASCII digits, at most 2**32 - 1."""
    digits = text[1:] if text.startswith("+") else text
    if not digits or not all("0" <= c <= "9" for c in digits):
        return None
    return int(digits) if int(digits) <= 0xFFFFFFFF else None


def parent_of(agent: str) -> str | None:
    """R-ID-1: drop the last two ``-`` tokens; two tokens or fewer is a root."""
    tokens = agent.split("-")
    return "-".join(tokens[:-2]) if len(tokens) > 2 else None


def lines_of(text: str) -> list[str]:
    """Rust's ``str::lines``: split on LF, drop one CR before each LF, no empty last line."""
    if not text:
        return []
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
        return [p[:-1] if p.endswith("\r") else p for p in parts]
    return [p[:-1] if p.endswith("\r") else p for p in parts[:-1]] + [parts[-1]]


@dataclass(frozen=True)
class Deposit:
    """A deposit file read back: its frontmatter keys in order and its body."""

    keys: tuple[tuple[str, str], ...]
    body: str

    def get(self, key: str) -> str | None:
        found = [v for k, v in self.keys if k == key]
        return found[-1] if found else None


_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def read_deposit(data: bytes) -> Deposit | str:
    """R-DEP-4/5: the exact shape of a plain or result deposit; else the reason it is not one."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8"
    if not text.startswith("---\n"):
        return "does not start with the frontmatter fence"
    close = text.find("\n---\n", 3)
    if close < 0:
        return "frontmatter never closed (torn?)"
    keys: list[tuple[str, str]] = []
    for line in text[4:close].split("\n"):
        key, sep, value = line.partition(": ")
        if not sep:
            return f"frontmatter line {line!r} is not 'key: value'"
        keys.append((key, value))
    names = tuple(k for k, _ in keys)
    if names not in (("from", "deposited_at"),
                     ("from", "deposited_at", "epitaph", "terminal_ref")):
        return f"frontmatter keys {list(names)} are neither a plain nor a result deposit"
    dep = Deposit(tuple(keys), text[close + 5:])
    if not _ISO.fullmatch(dep.get("deposited_at") or ""):
        return f"deposited_at {dep.get('deposited_at')!r} is not UTC seconds"
    return dep


def terminal_ref(text: str) -> str | None:
    """R-DEP-9: the first non-empty ``terminal_ref:`` inside a leading ``---`` block."""
    lines = lines_of(text)
    if not lines or lines[0] != "---":
        return None
    for line in lines[1:]:
        if line == "---":
            return None
        if line.startswith("terminal_ref:"):
            value = line[len("terminal_ref:"):].strip()
            if value:
                return value
    return None


def blocks_of(data: bytes) -> list[dict[str, object]] | str:
    """R-TR-4: the content blocks of a model or tool entry; else why not."""
    try:
        value: object = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return f"not JSON ({exc})"
    items: object = value.get("content") if isinstance(value, dict) else value
    if not isinstance(items, list):
        return 'neither {"content":[...]} nor an array of blocks'
    out: list[dict[str, object]] = []
    for item in items:
        if isinstance(item, str):
            out.append({"type": "text", "text": item})
        elif isinstance(item, dict) and isinstance(item.get("type"), str):
            out.append({str(k): v for k, v in item.items()})
        else:
            return f"holds a non-block {item!r}"
    return out


def tool_calls(blocks: Sequence[dict[str, object]]) -> list[dict[str, object]]:
    return [b for b in blocks if b.get("type") == "tool_use" and isinstance(b.get("id"), str)
            and isinstance(b.get("name"), str) and "input" in b]


def result_text(block: dict[str, object]) -> str:
    """The text of a ``tool_result`` block: its content string, or its text blocks joined."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return text_of([b for b in content if isinstance(b, dict)])
    return ""


def text_of(blocks: Sequence[dict[str, object]]) -> str:
    return "".join(str(b["text"]) for b in blocks
                   if b.get("type") == "text" and isinstance(b.get("text"), str))


# ---------------------------------------------------------------------------
# What the audit gathers


@dataclass
class Entry:
    seq: int
    origin: str
    delivered: bool
    name: str
    data: bytes
    commit: str  # the commit that added it ("" for an uncommitted stray)
    blocks: list[dict[str, object]] | None = None  # model/tool entries that parse
    deposit: Deposit | None = None  # delivered entries that parse

    @property
    def terminal(self) -> bool:
        """R-DEBT-2: a model entry (not ``tool``) with no tool call."""
        return (not self.delivered and self.origin != "tool" and self.blocks is not None
                and not tool_calls(self.blocks))


@dataclass
class Agent:
    id: str
    tip: str
    history: list[str]  # first-parent commits, oldest (creation) first
    entries: list[Entry]  # committed, in landing order
    name: str = ""


@dataclass
class Copy:
    """A deposit's bytes somewhere: pending in an inbox, delivered as an entry, or a stray."""

    recipient: str
    sender: str
    data: bytes
    place: str  # a file path or "<commit> messages/NNN-x.md"
    delivered: bool


def entry_name(name: str) -> tuple[int, str, bool] | None:
    """R-TR-1: ``NNN-<origin>.md|.json`` split at the first ``-``; NNN a u32, origin non-empty."""
    for ext, delivered in ((".md", True), (".json", False)):
        if name.endswith(ext):
            seq_text, sep, origin = name[: -len(ext)].partition("-")
            seq = u32(seq_text)
            if sep and origin and seq is not None:
                return seq, origin, delivered
    return None


def pending_name(name: str) -> tuple[str, int] | None:
    """R-DEP-9: ``<sender>-<u32>.md`` split at the last ``-``, sender not starting with ``.``."""
    if not name.endswith(".md"):
        return None
    sender, sep, tail = name[:-3].rpartition("-")
    seq = u32(tail)
    if not sep or not sender or sender.startswith(".") or seq is None:
        return None
    return sender, seq


# ---------------------------------------------------------------------------
# git, read-only


class Git:
    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}

    def run(self, *args: str, stdin: bytes | None = None) -> bytes:
        proc = subprocess.run(["git", "-C", str(self.repo), *args], input=stdin,
                              capture_output=True, env=self.env, check=False)
        if proc.returncode != 0:
            raise AuditError(f"git {' '.join(args)}: "
                             f"{proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout

    def refs(self, prefix: str) -> dict[str, str]:
        out = self.run("for-each-ref", "--format=%(refname)%00%(objectname)", prefix).decode()
        return dict(line.split("\0", 1) for line in out.splitlines() if line)

    def log(self, tip: str) -> list[tuple[str, list[str], str, list[tuple[str, str]]]]:
        """First-parent history, newest first: (commit, parents, subject, [(status, path)])."""
        raw = self.run("log", "--first-parent", "--no-renames", "-m", "--name-status", "-z",
                       "--format=%x01%H%x00%P%x00%s%x00", tip)
        out = []
        for record in raw.split(b"\x01")[1:]:
            tokens = record.decode("utf-8", "surrogateescape").split("\0")
            commit, parents, subject = tokens[0], tokens[1].split(), tokens[2]
            rest = [t for t in tokens[3:] if t.strip("\n")]
            changes = [(rest[i].lstrip("\n"), rest[i + 1]) for i in range(0, len(rest) - 1, 2)]
            out.append((commit, parents, subject, changes))
        return out

    def blobs(self, specs: Sequence[str]) -> dict[str, bytes | None]:
        """``<rev>:<path>`` -> bytes (None when missing), in one ``cat-file --batch``."""
        if not specs:
            return {}
        raw = self.run("cat-file", "--batch", stdin="".join(s + "\n" for s in specs).encode())
        out: dict[str, bytes | None] = {}
        pos = 0
        for spec in specs:
            end = raw.index(b"\n", pos)
            header = raw[pos:end].decode()
            pos = end + 1
            if header.endswith(" missing") or header.endswith(" ambiguous"):
                out[spec] = None
                continue
            size = int(header.rsplit(" ", 1)[1])
            out[spec] = raw[pos:pos + size]
            pos += size + 1
        return out


# ---------------------------------------------------------------------------
# The audit


_SUBJECT = re.compile(r"transcript (\S+): (.+) \[(.+)\]")


class Auditor:
    def __init__(self, ws: Path, layout: Layout | None = None) -> None:
        self.ws = ws
        self.lay = layout or Layout()
        repo = ws / self.lay.repo
        if not repo.is_dir():
            raise AuditError(f"{ws} is not a workspace ({self.lay.repo} is not a directory)")
        self.git = Git(repo)
        self.report = Report(str(ws))
        self.agents: dict[str, Agent] = {}
        self.copies: list[Copy] = []

    # -- gathering -----------------------------------------------------------

    def run(self) -> Report:
        heads = self.git.refs(self.lay.agent_ref_prefix.rstrip("/"))
        ids = sorted(r[len(self.lay.agent_ref_prefix):] for r in heads)
        self.report.driven = sorted(a for a in ids if self._locked(a))
        for agent in ids:
            self.agents[agent] = self._walk(agent, heads[self.lay.agent_ref_prefix + agent])
        names = self.git.blobs([f"{a.tip}:name" for a in self.agents.values()])
        for a in self.agents.values():
            a.name = (names.get(f"{a.tip}:name") or b"").decode(errors="replace").strip()
        self.report.agents = len(self.agents)
        for a in self.agents.values():
            self._check_entries(a)
            for e in a.entries:
                if e.delivered:
                    self.copies.append(Copy(a.id, e.origin, e.data,
                                            f"{e.commit[:12]} {self.lay.messages}/{e.name}", True))
            self._strays(a)
        self._inboxes()
        self._names()
        self._residue()
        self._deliveries()
        self._results_and_marks()
        return self.report

    def _locked(self, agent: str) -> bool:
        """Read-only: is some process holding a flock on the agent's inbox directory?"""
        try:
            st = os.stat(self.ws / self.lay.inbox / agent)
            with open("/proc/locks") as handle:
                table = handle.read()
        except OSError:
            return False
        key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        return any(line.split()[1] == "FLOCK" and key in line.split()
                   for line in table.splitlines() if len(line.split()) > 5)

    def _walk(self, agent: str, tip: str) -> Agent:
        """R-WS-4, R-TR-1..3: the agent's own commits, checked one by one."""
        rep = self.report
        own_tag = f" [{agent}]"
        log = self.git.log(tip)
        mine = []
        for rec in log:
            if not rec[2].endswith(own_tag):
                break
            mine.append(rec)
        mine.reverse()
        rep.commits += len(mine)
        history = [c for c, _, _, _ in mine]
        if not mine:
            rep.add("violation", "numbering", "R-WS-4", agent,
                    "the branch tip is not a commit of this agent (no creation commit)", tip[:12])
            return Agent(agent, tip, [], [])
        creation, _, subject, _ = mine[0]
        expected = (f"step 001: dispatch [{agent}]" if parent_of(agent) is None
                    else f"dispatch: worker [{agent}]")
        if subject != expected:
            rep.add("violation", "numbering", "R-WS-4", agent,
                    f"creation commit subject {subject!r}, expected {expected!r}", creation[:12])
        present: dict[str, tuple[str, str]] = {}  # name -> (commit, blob spec)
        tree = self.git.run("ls-tree", "-z", "--name-only", f"{creation}:{self.lay.messages}"
                            ) if self._has_messages(creation) else b""
        for name in filter(None, tree.decode(errors="surrogateescape").split("\0")):
            rep.add("violation", "numbering", "R-WS-4", agent,
                    f"the creation commit already holds {name} (a transcript starts empty)",
                    creation[:12])
        order: list[tuple[str, str]] = []
        prefix = self.lay.messages + "/"
        for commit, parents, subject, changes in mine[1:]:
            short = commit[:12]
            if len(parents) != 1:
                rep.add("violation", "numbering", "R-TR-3", agent,
                        f"merge commit {subject!r} on an agent branch", short)
            touched = [(s, p) for s, p in changes if p.startswith(prefix)]
            for status, path in touched:
                if status != "A":
                    rep.add("violation", "numbering", "R-TR-3, I-4", agent,
                            f"{path} changed after it landed (git status {status})", short, path)
            added = [p[len(prefix):] for s, p in touched if s == "A"]
            m = _SUBJECT.fullmatch(subject)
            stray = subject == f"transcript: recover delivered stray [{agent}]"
            if not m and not stray:
                rep.add("violation", "numbering", "R-TR-3", agent,
                        f"commit with an unexpected subject {subject!r}", short)
            if m and len(added) != 1:
                rep.add("violation", "numbering", "R-TR-3", agent,
                        f"commit {subject!r} adds {len(added)} entries, not one"
                        + (f" ({', '.join(added)}: an entry without its own commit)"
                           if added else ""), short, *(prefix + n for n in added))
            for name in added:
                parsed = entry_name(name)
                if parsed is None:
                    rep.add("violation", "numbering", "R-TR-1", agent,
                            f"{prefix}{name} is not an entry name", short)
                    continue
                seq, origin, delivered = parsed
                counted = [u32(n.split("-", 1)[0]) for n in present]
                want = max((s for s in counted if s is not None), default=0) + 1
                if seq != want:
                    rep.add("violation", "numbering", "R-TR-2, I-4", agent,
                            f"{prefix}{name} takes number {seq}, the counter says {want}",
                            short, prefix + name)
                seq_text = name.split("-", 1)[0]
                if len(seq_text) < 3 or (len(seq_text) > 3 and seq_text.startswith("0")):
                    rep.add("violation", "numbering", "R-TR-1", agent,
                            f"{prefix}{name}: the number is not zero-padded to three digits",
                            short)
                if m and (m.group(1) != seq_text or m.group(2) != origin):
                    rep.add("violation", "numbering", "R-TR-3", agent,
                            f"subject {subject!r} does not name {name}", short, prefix + name)
                if m and not (origin == self.lay.tool_origin and not delivered):
                    others = [p for s, p in changes if not p.startswith(prefix)]
                    if others:
                        rep.add("violation", "numbering", "R-TR-3", agent,
                                f"{name} is not committed alone (also {', '.join(others)})",
                                short)
                present[name] = (commit, f"{commit}:{prefix}{name}")
                order.append((name, commit))
        blobs = self.git.blobs([present[n][1] for n, _ in order])
        entries = []
        for name, commit in order:
            parsed = entry_name(name)
            data = blobs.get(present[name][1])
            if parsed is None or data is None:
                continue
            entries.append(Entry(parsed[0], parsed[1], parsed[2], name, data, commit))
        rep.entries += len(entries)
        return Agent(agent, tip, history, entries)

    def _has_messages(self, commit: str) -> bool:
        out = self.git.run("ls-tree", "--name-only", commit, self.lay.messages)
        return bool(out.strip())

    def _check_entries(self, a: Agent) -> None:
        """R-DEP-4/5, R-TR-4: every entry's bytes; R-STEP-2/3: tool calls answered."""
        rep = self.report
        open_calls: dict[str, Entry] = {}
        for e in a.entries:
            where = (e.commit[:12], f"{self.lay.messages}/{e.name}")
            if e.delivered:
                dep = read_deposit(e.data)
                if isinstance(dep, str):
                    rep.add("violation", "format", "R-DEP-4, R-DEP-5", a.id,
                            f"delivered entry is not a deposit: {dep}", *where)
                    continue
                e.deposit = dep
                if dep.get("from") != e.origin:
                    rep.add("violation", "format", "R-DEP-4, R-TR-1", a.id,
                            f"delivered entry from {e.origin!r} says from: {dep.get('from')!r}",
                            *where)
                continue
            blocks = blocks_of(e.data)
            if isinstance(blocks, str):
                rep.add("violation", "format", "R-TR-4", a.id, f"entry JSON: {blocks}", *where)
                continue
            e.blocks = blocks
            if e.origin == self.lay.tool_origin:
                for b in blocks:
                    if b.get("type") == "tool_result":
                        open_calls.pop(str(b.get("tool_use_id")), None)
                continue
            if open_calls:
                rep.add("violation", "format", "R-STEP-2, R-STEP-3", a.id,
                        f"model entry after tool calls that never got a result: "
                        f"{', '.join(sorted(open_calls))}", *where)
                open_calls.clear()
            for call in tool_calls(blocks):
                open_calls[str(call["id"])] = e
        if open_calls:
            first = next(iter(open_calls.values()))
            rep.add("note", "residue", "R-STEP-2", a.id,
                    f"tool calls without a result at the tip ({', '.join(sorted(open_calls))}): "
                    "a crashed tool window, settled by the next hop",
                    first.commit[:12], f"{self.lay.messages}/{first.name}")

    def _strays(self, a: Agent) -> None:
        """R-DRAIN-2, I-18: files in the worktree's messages/ that no commit holds."""
        directory = self.ws / self.lay.agents / a.id / self.lay.messages
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return
        committed = {e.name: e for e in a.entries}
        for name in names:
            path = directory / name
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if name in committed:
                if committed[name].data != data:
                    self.report.add("violation", "numbering", "R-TR-3, I-4", a.id,
                                    f"{name} in the worktree differs from its committed bytes",
                                    str(path.relative_to(self.ws)))
                continue
            self.report.add("note", "residue", "R-DRAIN-2, I-18", a.id,
                            f"uncommitted stray {name} (committed by the next hop's recovery)",
                            str(path.relative_to(self.ws)))
            parsed = entry_name(name)
            if parsed and parsed[2]:
                self.copies.append(Copy(a.id, parsed[1], data,
                                        str(path.relative_to(self.ws)), True))

    def _inboxes(self) -> None:
        """R-DEP-6/9: what lies in each inbox directory."""
        rep = self.report
        root = self.ws / self.lay.inbox
        try:
            dirs = sorted(os.listdir(root))
        except FileNotFoundError:
            return  # nothing pending: an implementation may make the inbox root lazily
        except OSError as exc:
            rep.add("violation", "residue", "R-WS-1", None, f"cannot list the inbox root: {exc}",
                    self.lay.inbox)
            return
        for d in dirs:
            directory = root / d
            if not directory.is_dir():
                rep.add("note", "residue", "R-WS-7", None, "a file where an inbox belongs",
                        f"{self.lay.inbox}/{d}")
                continue
            for name in sorted(os.listdir(directory)):
                rel = f"{self.lay.inbox}/{d}/{name}"
                parsed = pending_name(name)
                if parsed is None:
                    kind = ("a writer's temp file (its writer died before publishing)"
                            if name.startswith(".") and name.endswith(".tmp")
                            else "a file no reader takes as a deposit")
                    rep.add("note", "residue", "R-DEP-6, R-DEP-9", d, kind, rel)
                    continue
                try:
                    data = (directory / name).read_bytes()
                except OSError as exc:
                    rep.add("violation", "format", "R-DEP-9", d, f"unreadable deposit: {exc}", rel)
                    continue
                rep.pending += 1
                if d not in self.agents:
                    rep.add("note", "residue", "R-SCAN-2", d,
                            "pending deposit in an inbox with no agent branch (debris)", rel)
                dep = read_deposit(data)
                if isinstance(dep, str):
                    rep.add("violation", "format", "R-DEP-4, R-DEP-6", d,
                            f"torn or malformed pending deposit: {dep}", rel)
                elif dep.get("from") != parsed[0]:
                    rep.add("violation", "format", "R-DEP-1, R-DEP-4", d,
                            f"deposit named for sender {parsed[0]!r} says from: "
                            f"{dep.get('from')!r}", rel)
                self.copies.append(Copy(d, parsed[0], data, rel, False))

    def _names(self) -> None:
        """R-WS-4, R-ID-6, R-ID-8, R-PROBE-5/6: names unique, goals sent, pinned files there."""
        rep = self.report
        worn: dict[str, list[str]] = defaultdict(list)
        for a in self.agents.values():
            if a.name:
                worn[a.name].append(a.id)
        for name, ids in sorted(worn.items()):
            if len(ids) > 1:
                rep.add("violation", "names", "R-ID-6, R-ID-8", None,
                        f"the name {name!r} is worn by {len(ids)} agents ({', '.join(ids)}): "
                        "it resolves to none of them")
        made = [a for a in self.agents.values() if a.history]
        pinned = self.git.blobs([f"{a.history[0]}:{f}" for a in made
                                 for f in (self.lay.goal, self.lay.name)])
        for a in made:
            creation = a.history[0]
            goal = pinned.get(f"{creation}:{self.lay.goal}")
            if pinned.get(f"{creation}:{self.lay.name}") is None or goal is None:
                rep.add("violation", "names", "R-WS-4", a.id,
                        f"the creation commit lacks {self.lay.goal} or {self.lay.name}",
                        creation[:12])
                continue
            creator = parent_of(a.id) or self.lay.user
            text = goal.decode("utf-8", "replace")
            sent = any(
                c.recipient == a.id and c.sender == creator
                and isinstance(dep := read_deposit(c.data), Deposit) and dep.body == text
                for c in self.copies
            )
            if not sent:
                rep.add("violation", "names", "R-PROBE-5, R-PROBE-6", a.id,
                        f"its goal was never sent: no deposit from {creator} with the bytes of "
                        f"its {self.lay.goal} is pending for it or delivered to it",
                        creation[:12])

    def _residue(self) -> None:
        """D-16: a staging file left by a driver that died before the rename."""
        for a in self.agents:
            staging = self.ws / self.lay.steps / a / self.lay.staging
            if staging.exists():
                self.report.add("note", "residue", "R-TR-3", a,
                                "a staged entry never published (its driver died)",
                                str(staging.relative_to(self.ws)))
        worktrees = self.ws / self.lay.agents
        if worktrees.is_dir():
            for d in sorted(os.listdir(worktrees)):
                if d not in self.agents:
                    self.report.add("note", "residue", "R-WS-3", d,
                                    "a worktree directory with no agent branch (debris)",
                                    f"{self.lay.agents}/{d}")

    # -- deliveries (I-5) ----------------------------------------------------

    def _resolve(self, target: str) -> str | None:
        """R-ID-6: an exact id, else the one agent wearing that name."""
        if target in self.agents:
            return target
        named = [a.id for a in self.agents.values() if a.name and a.name == target.strip()]
        return named[0] if len(named) == 1 else None

    def _sends(self) -> list[tuple[str, str, str, str, bool]]:
        """Plain deposits an agent's transcript witnesses: (sender, recipient, content, place,
        certain). ``certain`` is False when the call's result says it died mid-way (a crash
        between the deposit and the result may or may not have published it)."""
        out = []
        for a in self.agents.values():
            calls: dict[str, tuple[dict[str, object], Entry]] = {}
            for e in a.entries:
                if e.blocks is None:
                    continue
                if e.origin != self.lay.tool_origin:
                    for c in tool_calls(e.blocks):
                        calls[str(c["id"])] = (c, e)
                    continue
                for b in e.blocks:
                    if b.get("type") != "tool_result":
                        continue
                    found = calls.pop(str(b.get("tool_use_id")), None)  # answered once
                    if found is None:
                        continue
                    call, model_entry = found
                    text = result_text(b)
                    inp = call.get("input")
                    if not isinstance(inp, dict):
                        continue
                    place = f"{model_entry.commit[:12]} {self.lay.messages}/{model_entry.name}"
                    certain = b.get("is_error") is False
                    if not certain and not text.startswith("died"):
                        continue
                    if call["name"] == "message":
                        to = self._resolve(str(inp.get("agent", "")))
                        if to is not None:
                            out.append((a.id, to, str(inp.get("content", "")), place, certain))
                    elif call["name"] == "dispatch" and certain:
                        try:
                            child = json.loads(text).get("agent")
                        except (ValueError, AttributeError):
                            child = None
                        if isinstance(child, str):
                            out.append((a.id, child, str(inp.get("goal", "")), place, True))
        return out

    def _deliveries(self) -> None:
        rep = self.report
        groups: dict[tuple[str, bytes], list[Copy]] = defaultdict(list)
        for c in self.copies:
            groups[(c.recipient, c.data)].append(c)
        sends = self._sends()
        witnessed = Counter((s, r, body) for s, r, body, _, _ in sends)
        for (recipient, _), copies in groups.items():
            if len(copies) < 2:
                continue
            sender = copies[0].sender
            dep = read_deposit(copies[0].data)
            body = dep.body if isinstance(dep, Deposit) else ""
            if isinstance(dep, Deposit) and dep.get("terminal_ref"):
                allowed = 1  # a terminal event has one result (I-11)
            elif sender == self.lay.user or sender not in self.agents:
                rep.add("note", "delivery", "I-5", recipient,
                        f"{len(copies)} byte-identical deposits from {sender!r}: history cannot "
                        "tell two sends in one second from a duplicate",
                        *(c.place for c in copies))
                continue
            else:
                allowed = max(1, witnessed[(sender, recipient, body)])
            if len(copies) > allowed:
                delivered = sum(c.delivered for c in copies)
                what = ("both pending and delivered" if 0 < delivered < len(copies)
                        else "delivered twice" if delivered > 1 else "pending twice")
                rep.add("violation", "delivery", "I-5, R-DRAIN-4", recipient,
                        f"one deposit from {sender!r} is {what} ({len(copies)} copies, "
                        f"{allowed} sent)", *(c.place for c in copies))
        bodies: Counter[tuple[str, str, str]] = Counter()
        for c in self.copies:
            dep = read_deposit(c.data)
            if isinstance(dep, Deposit) and not dep.get("terminal_ref"):
                bodies[(c.sender, c.recipient, dep.body)] += 1
        for s, r, body in witnessed:
            certain = sum(1 for x in sends if x[:3] == (s, r, body) and x[4])
            if bodies[(s, r, body)] < certain:
                places = [x[3] for x in sends if x[:3] == (s, r, body)]
                rep.add("violation", "delivery", "I-5", s,
                        f"a message to {r} that the sender's transcript says was deposited is "
                        f"neither pending nor delivered ({bodies[(s, r, body)]} of {certain} "
                        "found)", *places)

    # -- results, debts and marks (I-11, I-12, I-14) ---------------------------

    def _debt(self, a: Agent, upto: int) -> tuple[bool, str | None]:
        """R-DEBT-2..4 and R-ADDR-2/3 re-derived: (owed, address) for the terminal response
        at position ``upto`` of the agent's entries."""
        entries = sorted(a.entries[: upto + 1], key=lambda e: e.seq)
        terminals = [e for e in entries if e.terminal]
        owed = True
        if len(terminals) >= 2:
            previous = terminals[-2].seq
            owed = False
            for e in entries:
                if e.seq <= previous or not e.delivered or e.origin == a.id:
                    continue
                ref = terminal_ref(e.data.decode("utf-8", "replace"))
                if ref is None or parent_of(e.origin) == a.id:
                    owed = True
        prompter = None
        for e in reversed(entries):
            if e.delivered and e.origin != a.id and \
                    terminal_ref(e.data.decode("utf-8", "replace")) is None:
                prompter = e.origin
                break
        if not owed or prompter == self.lay.user:
            return owed, None
        return owed, prompter if prompter is not None else parent_of(a.id)

    def _results_and_marks(self) -> None:
        rep = self.report
        results: dict[str, list[tuple[Copy, Deposit, str]]] = defaultdict(list)
        for c in self.copies:
            dep = read_deposit(c.data)
            if isinstance(dep, Deposit) and dep.get("terminal_ref"):
                results[c.sender].append((c, dep, dep.get("terminal_ref") or ""))
        rep.results = sum(len(v) for v in results.values())
        for sender, found in sorted(results.items()):
            a = self.agents.get(sender)
            for c, dep, ref in found:
                where = c.place
                epitaph = dep.get("epitaph") or ""
                if a is None:
                    rep.add("violation", "results", "R-DEP-5", sender,
                            f"result from an agent with no branch, {epitaph}", where)
                    continue
                if c.recipient == sender:
                    rep.add("violation", "results", "I-11, R-ADDR-3", sender,
                            f"{epitaph} result addressed to its own sender", where)
                if ref not in a.history:
                    rep.add("violation", "results", "R-DEP-5", sender,
                            f"terminal_ref {ref[:12]} is not a commit of the sender's branch",
                            where)
                    continue
                if epitaph in OBITUARIES:
                    if c.recipient != parent_of(sender):
                        rep.add("violation", "results", "R-ADDR-1, I-11", sender,
                                f"{epitaph} obituary went to {c.recipient}, not to the parent "
                                f"{parent_of(sender)}", where)
                    if dep.body:
                        rep.add("violation", "results", "R-DEP-5", sender,
                                f"{epitaph} obituary carries a body", where)
                    continue
                if epitaph != FINAL:
                    rep.add("violation", "results", "R-TERM-1", sender,
                            f"unknown epitaph {epitaph!r}", where)
                    continue
                idx = next((i for i, e in enumerate(a.entries) if e.commit == ref), None)
                if idx is None or not a.entries[idx].terminal:
                    rep.add("violation", "results", "R-DEP-5, R-TR-3", sender,
                            f"final-response names {ref[:12]}, which does not commit a terminal "
                            "response", where)
                    continue
                owed, address = self._debt(a, idx)
                e = a.entries[idx]
                if not owed:
                    rep.add("violation", "results", "I-12, R-DEBT-4", sender,
                            f"reply to {c.recipient} answers no debt: nothing in the window "
                            f"before {e.name} asked", where, f"{ref[:12]} {e.name}")
                elif address != c.recipient:
                    rep.add("violation", "results", "I-11, R-ADDR-3", sender,
                            f"reply went to {c.recipient}, the address is {address or 'nobody'}",
                            where, f"{ref[:12]} {e.name}")
                if e.blocks is not None and dep.body != text_of(e.blocks):
                    rep.add("violation", "results", "R-DEP-5", sender,
                            "reply body differs from the text of its terminal entry",
                            where, f"{ref[:12]} {e.name}")
        # R-SCAN-9 / I-12: every owed reply to an agent left.
        for a in self.agents.values():
            sent = {ref for _, _, ref in results.get(a.id, [])}
            for i, e in enumerate(a.entries):
                if not e.terminal:
                    continue
                owed, address = self._debt(a, i)
                if not owed or address is None or address not in self.agents or e.commit in sent:
                    continue
                at_tip = e.commit == a.tip
                rep.add("note" if at_tip else "violation", "results", "I-12, R-SCAN-9", a.id,
                        f"reply owed to {address} for {e.name} never left"
                        + (" (at the tip: `scan` re-sends it)" if at_tip else ""),
                        f"{e.commit[:12]} {self.lay.messages}/{e.name}")
        marks = self.git.refs(self.lay.mark_ref_prefix.rstrip("/"))
        for ref, commit in sorted(marks.items()):
            kind, _, agent = ref[len(self.lay.mark_ref_prefix):].partition("/")
            a = self.agents.get(agent)
            if kind in self.lay.other_marks and a is not None:
                continue  # the implementation's own kind of mark: nothing SPEC judges
            if a is None or kind not in MARK_KINDS:
                rep.add("note", "marks", "R-WS-5", agent or None,
                        f"mark {ref} names no agent or an unknown kind (debris)", ref)
                continue
            if commit not in a.history:
                rep.add("violation", "marks", "R-WS-5", agent,
                        f"{ref} points at {commit[:12]}, not a commit of the agent's branch", ref)
        for a in self.agents.values():
            mark = marks.get(f"{self.lay.mark_ref_prefix}returned/{a.id}")
            refs = [ref for _, _, ref in results.get(a.id, []) if ref in a.history]
            if not refs:
                if mark is not None and mark in a.history:
                    rep.add("violation", "marks", "R-DEP-8, I-14", a.id,
                            f"returned mark at {mark[:12]} but no result from it exists",
                            f"{self.lay.mark_ref_prefix}returned/{a.id}")
                continue
            last = max(refs, key=a.history.index)
            if mark != last:
                rep.add("violation", "marks", "R-DEP-8, I-14", a.id,
                        f"returned mark is {mark[:12] if mark else 'missing'}, the newest result "
                        f"names {last[:12]}", f"{self.lay.mark_ref_prefix}returned/{a.id}")


def audit(ws: Path, layout: Layout | None = None) -> Report:
    """Audit the workspace at ``ws``; raises :class:`AuditError` when it cannot be read."""
    return Auditor(Path(ws), layout).run()


def build_parser(prog: str = "lernie-check audit") -> argparse.ArgumentParser:
    from lernie_spec import cliopts

    parser = cliopts.parser(
        prog, "Check what a workspace's files and git history witness (SPEC I-4, I-5, "
              "I-11, I-12, I-14, R-TR, R-DEP); exit 1 on any violation.")
    parser.add_argument("workspace", type=Path, help="the workspace directory to audit")
    parser.add_argument("--strict", action="store_true",
                        help="count notes (crash residue) as violations: for a workspace run "
                             "without crashes and now quiescent")
    parser.add_argument("--impl", metavar="ADAPTER",
                        help="read the workspace with the layout names of this conformance "
                             "adapter (an installed name or a TOML file), for a workspace "
                             "another implementation left")
    cliopts.add_common(parser, html=True)
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        layout = None
        if args.impl:
            from lernie_stateful.conform.adapter import AdapterError, layout_of

            try:
                layout = layout_of(args.impl)
            except AdapterError as exc:
                raise AuditError(str(exc)) from None
        report = audit(args.workspace, layout)
    except AuditError as exc:
        print(f"lernie-check audit: {exc}", file=sys.stderr)
        return 1
    if args.html:
        from lernie_stateful.report import audit_page, commits_named, write

        subjects: dict[str, str] = {}
        git = Git(Path(args.workspace) / (layout or Layout()).repo)
        for c in commits_named(report):
            with contextlib.suppress(AuditError):
                subjects[c] = git.run("log", "-1", "--format=%s", c).decode(
                    "utf-8", "replace").strip()
        write(args.html, audit_page(report, args.strict, subjects))
    if args.json:
        print(json.dumps(report.as_json(args.strict), indent=1))
    else:
        print(report.text(args.strict))
    return 1 if report.violations(args.strict) else 0
