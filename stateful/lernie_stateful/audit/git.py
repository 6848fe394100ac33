"""git, read-only: the refs, first-parent histories and blobs the audit reads (the git
CLI in a subprocess, without the caller's ``GIT_*`` variables)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from lernie_stateful.audit.findings import AuditError


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
