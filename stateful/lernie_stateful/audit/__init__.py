"""`lernie-check audit <ws>`: what a workspace's files and git history can witness.

Theory of operation. The audit is an outside observer: it reads a workspace
left by *any* implementation of the protocol (live or finished) and judges it
against SPEC.md without trusting the implementation's own reasoning. It reads
the disk and the git history itself (the git CLI in a subprocess) and re-derives
every decision it judges -- the transcript counter, the reply debt, the reply
address -- with short functions written from SPEC.md alone (:mod:`.readings`). It
imports nothing from ``lernie_ref``: a bug in the implementation's decision logic
must not hide in the judge.

Two jobs, two modules: :mod:`.walk` reads the workspace once (it judges nothing), and
:mod:`.checks` judges what was read (it reads nothing). :mod:`.findings` holds the
report, :mod:`.layout` the names an implementation's adapter may change, :mod:`.git`
the read-only git calls. The command line is :mod:`lernie_stateful.audit_cli`.

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
           once; no bytes both pending and delivered, none delivered twice (I-5);
           a result is one terminal event's (sender, epitaph, ``terminal_ref``),
           however it is stamped: two copies are one result twice (I-11)
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

from pathlib import Path

from lernie_stateful.audit.checks import judge
from lernie_stateful.audit.findings import AuditError, Finding, Report, Severity
from lernie_stateful.audit.layout import Layout
from lernie_stateful.audit.walk import walk

__all__ = ["AuditError", "Finding", "Layout", "Report", "Severity", "audit"]


def audit(ws: Path, layout: Layout | None = None) -> Report:
    """Audit the workspace at ``ws``; raises :class:`AuditError` when it cannot be read."""
    return judge(walk(Path(ws), layout))
