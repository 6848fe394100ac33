"""What the audit says: findings (a violation or a note, naming the files and commits
involved) gathered into one report, and the one error of a workspace it cannot read."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

Severity = Literal["violation", "note"]


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
