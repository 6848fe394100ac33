"""R-WS-3, R-WS-5, R-SCAN-6, R-DRAIN-8, R-SCAN-11: refs read from git's files answer
exactly what git answers.

A hop and the sweep read an agent's branch tip, its marks (peeled to a commit) and the
tip's subject from the repository's files where those answer plainly (a loose ref,
else ``packed-refs``, with git's lookup rules; a loose object's type and message), and
ask git otherwise. Here every answer the files give is compared with git's own, run as
a process, over generated ref layouts: loose, packed, a loose file overriding a packed
line, symbolic refs, refs that shadow the name under git's lookup rules, marks naming a
tag, a tree, a blob, a missing object or a commit stored only in a pack, replace refs.
Each planted wrong read below is found by the same comparison.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from lernie_ref.actors.readings import mark_value
from lernie_ref.core.errors import LernieError
from lernie_ref.inbox import cli_dispatch, cli_prompt
from lernie_ref.substrate.gitrun import GitResult, SubprocessGit
from lernie_ref.substrate.reffiles import RefFiles
from lernie_ref.substrate.workspace import Workspace, create_workspace
from lernie_ref.testing import Inline

AGENT = "20260711T000000Z-00000001"
MARK = f"refs/lernie/returned/{AGENT}"
BRANCH = f"refs/heads/agents/{AGENT}"
NAMES = (
    MARK,
    BRANCH,
    f"refs/refs/{MARK}",  # git's lookup rules try these after the name itself
    f"refs/tags/{MARK}",
    f"refs/heads/{MARK}",
    f"refs/remotes/{MARK}",
)
MISSING = "0123456789abcdef0123456789abcdef01234567"
PLACES = ("absent", "loose", "packed", "both", "symbolic")


def git(repo: Path, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, input=input, env=env, check=False
    )


def out(repo: Path, *args: str, input: bytes | None = None) -> str:
    result = git(repo, *args, input=input)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode().strip()


class Repo:
    """One bare repository (``<root>/repo.git``) holding every kind of object a ref may
    name; its refs are rewritten for each generated layout."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.git_dir = root / "repo.git"
        root.mkdir()
        out(root, "init", "-q", "--bare", "repo.git")
        (self.git_dir / "worktrees").mkdir()
        repo = self.git_dir
        tree = out(repo, "mktree", input=b"")
        self.subjects: list[str] = []
        for message in (
            b"step 004: model [x]\n",
            b"stray recovery [x]\n",
            b"two lines\nin one paragraph\n",
            b"subject\n\nand a body\n",
            b"trailing blank \n",
            b"\n\nleading blank lines\n",
            "caf\u00e9 subject\n".encode(),
            b"no newline at the end",
            b"subject\n \nbody after a blank-looking line\n",
        ):
            text = (
                f"tree {tree}\nauthor a <a@a> 0 +0000\ncommitter a <a@a> 0 +0000\n\n".encode()
                + message
            )
            self.subjects.append(out(repo, "hash-object", "-t", "commit", "-w", "--stdin",
                                     input=text))
        encoded = (
            f"tree {tree}\nauthor a <a@a> 0 +0000\ncommitter a <a@a> 0 +0000\n"
            "encoding ISO-8859-1\n\n"
        ).encode() + b"caf\xe9\n"
        self.subjects.append(out(repo, "hash-object", "-t", "commit", "-w", "--stdin",
                                 input=encoded))
        commit, other = self.subjects[0], self.subjects[1]
        tag = out(repo, "mktag", input=(
            f"object {commit}\ntype commit\ntag t\ntagger x <x@x> 0 +0000\n\nt\n").encode())
        nested = out(repo, "mktag", input=(
            f"object {tag}\ntype tag\ntag u\ntagger x <x@x> 0 +0000\n\nu\n").encode())
        blob = out(repo, "hash-object", "-w", "--stdin", input=b"not a commit\n")
        packed_only = out(repo, "hash-object", "-t", "commit", "-w", "--stdin",
                          input=f"tree {tree}\nauthor a <a@a> 1 +0000\ncommitter a <a@a> 1 "
                          "+0000\n\nin a pack\n".encode())
        out(repo, "pack-objects", "-q", str(repo / "objects" / "pack" / "pack"),
            input=f"{packed_only}\n".encode())
        os.unlink(repo / "objects" / packed_only[:2] / packed_only[2:])
        self.objects = (commit, other, tag, nested, blob, tree, packed_only, MISSING)

    def lay_out(self, layout: dict[str, tuple[str, int, int]], replaced: bool) -> None:
        """Write the refs: per name its place and the objects (loose, packed) it holds."""
        refs = self.git_dir / "refs"
        shutil.rmtree(refs)
        for sub in ("heads", "tags"):
            (refs / sub).mkdir(parents=True)
        packed: dict[str, str] = {}
        for name, (place, loose_at, packed_at) in layout.items():
            if place in ("loose", "both", "symbolic"):
                path = self.git_dir / name
                path.parent.mkdir(parents=True, exist_ok=True)
                value = (
                    f"ref: {BRANCH}" if place == "symbolic" else self.objects[loose_at]
                )
                path.write_text(value + "\n")
            if place in ("packed", "both"):
                packed[name] = self.objects[packed_at]
        if replaced:  # git shows the other commit wherever the first one is named
            path = refs / "replace" / self.objects[0]
            path.parent.mkdir(parents=True)
            path.write_text(self.objects[1] + "\n")
        lines = "".join(f"{oid} {name}\n" for name, oid in sorted(packed.items()))
        (self.git_dir / "packed-refs").write_text(lines)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    return Repo(tmp_path_factory.mktemp("reffiles") / "ws")


PLACE = st.tuples(st.sampled_from(PLACES), st.integers(0, 7), st.integers(0, 7))
LAYOUT = st.fixed_dictionaries({name: PLACE for name in NAMES})


def disagreements(repo: Repo, files: RefFiles) -> list[str]:
    """Every answer of ``files`` (where it gives one) that differs from git's."""
    wrong: list[str] = []
    for name in (MARK, BRANCH):
        verify = git(repo.git_dir, "rev-parse", "--verify", name)
        value = files.resolve(name)
        if value is not None:
            expected = verify.stdout.decode().strip() if verify.returncode == 0 else ""
            if value != expected:
                wrong.append(f"resolve {name}: {value!r}, git {expected!r}")
        peeled = git(repo.git_dir, "rev-parse", "--verify", "--quiet", name + "^{commit}")
        known, commit = files.commit_of(name)
        if known:
            expected_commit = peeled.stdout.decode().strip() if peeled.returncode == 0 else None
            if commit != expected_commit:
                wrong.append(f"commit_of {name}: {commit!r}, git {expected_commit!r}")
    return wrong


def subject_disagreements(repo: Repo, files: RefFiles) -> list[str]:
    wrong: list[str] = []
    for oid in (*repo.subjects, *repo.objects):
        subject = files.subject(oid)
        if subject is None:
            continue
        log = git(repo.git_dir, "log", "-1", "--format=%s", oid)
        if log.returncode != 0 or subject != log.stdout.decode().strip():
            wrong.append(f"subject {oid}: {subject!r}, git {log.stdout!r}")
    return wrong


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=LAYOUT, replaced=st.booleans())
def test_r_ws_5_ref_files_answer_what_git_answers(
    repo: Repo, layout: dict[str, tuple[str, int, int]], replaced: bool
) -> None:
    repo.lay_out(layout, replaced)
    files = RefFiles(repo.git_dir)
    assert disagreements(repo, files) == []
    # The readers the hop and the sweep call answer as git does whether or not the
    # files could (their fallback is git itself).
    ws = Workspace(repo.root)
    peeled = git(repo.git_dir, "rev-parse", "--verify", "--quiet", MARK + "^{commit}")
    expected = peeled.stdout.decode().strip() if peeled.returncode == 0 else None
    assert mark_value(ws, "returned", AGENT) == expected
    verify = git(repo.git_dir, "rev-parse", "--verify", BRANCH)
    if verify.returncode == 0:
        assert ws.branch_tip(AGENT) == verify.stdout.decode().strip()
    else:
        with pytest.raises(LernieError):
            ws.branch_tip(AGENT)


@pytest.mark.parametrize("replaced", [False, True])
def test_r_scan_9_subjects_read_from_loose_commits_are_gits(repo: Repo, replaced: bool) -> None:
    repo.lay_out({}, replaced)
    files = RefFiles(repo.git_dir)
    assert subject_disagreements(repo, files) == []
    answered = [oid for oid in repo.subjects if files.subject(oid) is not None]
    if replaced:
        assert answered == []  # git may show another commit: only git answers
    else:  # the plain one-line subjects lernie writes are read without git
        assert repo.subjects[0] in answered and repo.subjects[1] in answered


def test_r_ws_5_the_usual_refs_need_no_git(repo: Repo) -> None:
    """A loose or packed branch and a mark at a loose commit: the files answer (the reads
    the hop makes at every start cost no git process)."""
    for place in ("loose", "packed"):
        repo.lay_out({BRANCH: (place, 0, 0), MARK: (place, 0, 0)}, False)
        files = RefFiles(repo.git_dir)
        assert files.resolve(BRANCH) == repo.objects[0]
        assert files.commit_of(MARK) == (True, repo.objects[0])
        assert files.commit_of(f"refs/lernie/stopped/{AGENT}") == (True, None)


# ------------------------------------------------------------------ planted wrong reads


class PackedFirst(RefFiles):
    """Planted: ``packed-refs`` wins over a loose file (git reads the loose file first)."""

    def values(self, refnames: tuple[str, ...]) -> list[str | None]:
        packed = self._packed_refs() or {}
        loose = super().values(refnames)
        return [packed.get(n, v) for n, v in zip(refnames, loose, strict=True)]


class NameOnly(RefFiles):
    """Planted: no lookup rules: an absent name reads as no ref even when git finds one."""

    def resolve(self, refname: str) -> str | None:
        return self.values((refname,))[0]


class TagIsCommit(RefFiles):
    """Planted: a tag object is taken for the commit it names."""

    def object_kind(self, oid: str) -> str | None:
        kind = super().object_kind(oid)
        return "commit" if kind == "tag" else kind


class MissingIsNoCommit(RefFiles):
    """Planted: an object that is not stored loose is taken for no commit."""

    def commit_of(self, refname: str) -> tuple[bool, str | None]:
        known, value = super().commit_of(refname)
        return (True, value) if not known and self.resolve(refname) else (known, value)


class FirstLine(RefFiles):
    """Planted: the subject is the message's first line, whatever the paragraph."""

    def subject(self, oid: str) -> str | None:
        data = self._loose_object(oid, None)
        if data is None:
            return None
        message = data.partition(b"\0")[2].partition(b"\n\n")[2]
        return message.split(b"\n")[0].decode("utf-8", "replace")


@pytest.mark.parametrize("planted", [PackedFirst, NameOnly, TagIsCommit, MissingIsNoCommit])
def test_planted_wrong_ref_reads_are_found(
    repo: Repo, planted: Callable[[Path], RefFiles]
) -> None:
    def caught(case: tuple[dict[str, tuple[str, int, int]], bool]) -> bool:
        repo.lay_out(*case)
        return bool(disagreements(repo, planted(repo.git_dir)))

    find(st.tuples(LAYOUT, st.booleans()), caught,
         settings=settings(max_examples=300, database=None, phases=[Phase.generate],
                           deadline=None))  # each case runs git: no time limit


def test_planted_wrong_subject_read_is_found(repo: Repo) -> None:
    repo.lay_out({}, False)
    assert subject_disagreements(repo, FirstLine(repo.git_dir))


# ------------------------------------------------------------ what a hop asks of git


class CountingGit:
    """The real runner, with each call's subcommand counted (an injected runner)."""

    def __init__(self) -> None:
        self.inner = SubprocessGit()
        self.calls: list[tuple[str, ...]] = []

    def run(
        self, dest: Path, args: Sequence[str], *, check: bool = True, input: bytes | None = None
    ) -> GitResult:
        self.calls.append(tuple(args))
        return self.inner.run(dest, args, check=check, input=input)


class Unusable(RefFiles):
    """Planted: files that never answer (every read asks git, as before this reader)."""

    def values(self, refnames: tuple[str, ...]) -> list[str | None]:
        return [None] * len(refnames)


@pytest.mark.parametrize("planted", [False, True])
def test_r_drain_8_r_scan_11_a_hop_reads_its_tip_and_marks_without_git(
    tmp_path: Path, planted: bool
) -> None:
    """A hop's start (R-SCAN-11's mark repair, R-DRAIN-8's lost-reply check) reads the tip,
    the returned mark and the tip's subject from the files: no ``rev-parse --verify``,
    ``for-each-ref``, ``log`` or ``cat-file`` process; the planted reader that never
    answers shows the count can fail."""
    counting = CountingGit()
    ws = create_workspace(tmp_path / "ws", counting)
    inline = Inline(ws)
    root = cli_prompt(ws, "hello", "", inline.launcher)
    assert inline.settle()
    kid = cli_dispatch(ws, root, "@silent", "", inline.launcher)
    inline.launcher.launches.clear()
    if planted:
        ws._ref_files = Unusable(ws.repo_git)
    counting.calls.clear()
    inline.hop(kid)  # the kid answers its parent: a final response and its result
    inline.launcher.launches.clear()
    kid_hop = _ref_reads(counting.calls)
    counting.calls.clear()
    inline.hop(kid)  # nothing due: the mark is at the tip, nothing was lost
    asked = kid_hop + _ref_reads(counting.calls)
    if planted:
        assert kid_hop and len(asked) >= 4, asked
    else:
        assert asked == [], asked


def _ref_reads(calls: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The git calls that read a ref or an object by name from ``repo.git`` (the exit
    protocol's ``rev-parse HEAD`` in the worktree, right after its commit, is not one)."""
    return [c for c in calls if c[0] in ("for-each-ref", "log", "cat-file")
            or (c[0] == "rev-parse" and "--verify" in c)]
