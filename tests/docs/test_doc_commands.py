"""Every command README.md and docs/*.md show exists, and the cheap ones run.

The convention (``$ `` lines in ``console`` blocks) and the checks are in
:mod:`tests.support.doc_commands`; the planted commands below show each check can fail.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.doc_commands import (
    ALLOWED,
    ROOT,
    DocCommand,
    Session,
    check,
    check_mention,
    extract,
    mentions,
    runs_for_real,
    segments,
)
from tests.support.runners import CHECK_CLI
from tests.support.waits import wait_quiescent

DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _commands() -> list[DocCommand]:
    out: list[DocCommand] = []
    for doc in DOCS:
        out.extend(extract(doc.read_text(encoding="utf-8"), _name(doc))[0])
    return out


COMMANDS = _commands()


def test_the_docs_follow_the_command_convention() -> None:
    problems = [p for doc in DOCS for p in extract(doc.read_text(encoding="utf-8"), _name(doc))[1]]
    assert problems == []


def test_the_quick_start_commands_are_extracted() -> None:
    readme = [c.text for c in COMMANDS if c.path == "README.md"]
    assert any(t.endswith("&& .venv/bin/lernie-check") for t in readme)
    assert any(t.endswith("&& .venv/bin/pytest -q") for t in readme)
    assert any(t.startswith("lernie prompt ws --name lead") and "\n" in t for t in readme)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: f"{c.path}:{c.line}")
def test_every_doc_command_exists(command: DocCommand) -> None:
    assert check(command) is None, str(command)


MENTIONS = [m for doc in DOCS for m in mentions(doc.read_text(encoding="utf-8"), _name(doc))]


@pytest.mark.parametrize("mention", MENTIONS, ids=lambda m: f"{m.path}:{m.line}")
def test_every_verb_and_option_the_prose_names_exists(mention: DocCommand) -> None:
    assert check_mention(mention) is None, str(mention)


def _argv(program: str) -> list[str]:
    script = Path(sys.executable).parent / program
    if script.exists():
        return [str(script)]
    if program == "lernie":
        return [sys.executable, "-m", "lernie_ref"]
    return list(CHECK_CLI)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("LERNIE_")}


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_the_cheap_doc_commands_run(doc: Path, tmp_path: Path) -> None:
    """``lernie new|status|scan``, ``lernie prompt ... --wait`` on the scripted model and
    ``lernie-check --list`` run as shown, in order, in a fresh directory per workspace."""
    session, here, rounds = Session(), tmp_path / "0", 0
    here.mkdir()
    for command in extract(doc.read_text(encoding="utf-8"), _name(doc))[0]:
        argv = runs_for_real(command, session)
        if argv is None:
            continue
        program, args = argv[0], argv[1:]
        if program == "lernie":
            ws = here / args[1]
            if args[0] == "new" and ws.exists():
                rounds += 1
                here = tmp_path / str(rounds)
                here.mkdir()
            elif args[0] != "new" and not ws.exists():
                subprocess.run([*_argv("lernie"), "new", args[1]], cwd=here, env=_env(),
                               check=True, timeout=60)
        proc = subprocess.run([*_argv(program), *args], cwd=here, env=_env(),
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, f"{command}\n{proc.stderr}"
        if program == "lernie" and args[0] == "prompt":
            wait_quiescent(here / args[1])


def test_the_doc_links_resolve() -> None:
    broken = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (doc.parent / target.split("#", 1)[0]).exists():
                broken.append(f"{_name(doc)}: {target}")
    assert broken == []


# The extractor and the checks on planted documents.

PLANTED = '''
Some text.

```console
$ lernie new ws
$ lernie prompt ws --name lead "first line
second line" --wait
20261129T182211Z-333dbecb
$ lernie frobnicate ws
$ lernie status ws --colour
$ lernie-check --no-such-option
$ lernie-check --variant no-such-variant --trace
$ lernie-check --variant litany-0.0.12 --trace --invariant I-99
$ lernie-check refine --examples 40 --no-such-option
$ lernie-check mutants no-such-mutant
$ .venv/bin/pip install -q -e '.[no-such-extra]'
$ .venv/bin/pytest -q --no-such-option
$ .venv/bin/pytest -q tests/no_such_folder
$ python -m benchmarks --no-such-option
$ python -m no_such_module
$ no-such-program --help
$ timeout 60 lernie frobnicate ws
$ git diff | lernie message ws builder - && lernie frobnicate ws
```

```bash
lernie status ws
```

An indented one:

    lernie scan ws
'''


def test_a_planted_document_is_read_by_the_convention() -> None:
    commands, problems = extract(PLANTED, "planted.md")
    assert [c.line for c in commands][:3] == [5, 6, 9]
    assert commands[1].text == 'lernie prompt ws --name lead "first line\nsecond line" --wait'
    assert len(problems) == 2
    assert "```bash" in problems[0] and "indented" in problems[1]


def test_every_planted_bad_command_fails_its_check() -> None:
    commands, _ = extract(PLANTED, "planted.md")
    good, bad = commands[:2], commands[2:]
    assert [check(c) for c in good] == [None, None]
    failures = {c.text: check(c) for c in bad}
    assert all(why is not None for why in failures.values()), failures
    assert "no verb 'frobnicate'" in str(failures["lernie frobnicate ws"])
    assert "no variant 'no-such-variant'" in str(
        failures["lernie-check --variant no-such-variant --trace"])
    assert "no extra" in str(failures[".venv/bin/pip install -q -e '.[no-such-extra]'"])
    assert "unknown program" in str(failures["no-such-program --help"])


PLANTED_PROSE = """
Run `lernie stop <ws> <id>` or `lernie halt <ws> <id>`; `lernie prompt <ws> --urgent`;
`lernie-check audit <ws> [--json]`, `lernie-check verify`, `lernie-check --no-such`,
`lernie-check refine [--no-such N]`, `python -m no_such_module`, `python -m benchmarks
--no-such`. An error reads `lernie stop: no agent` (a message, not a mention).

```console
$ lernie status ws   # `lernie frobnicate` inside a block is not prose
```
"""


def test_planted_mentions_fail_where_the_name_does_not_exist() -> None:
    found = {m.text: check_mention(m) for m in mentions(PLANTED_PROSE, "planted.md")}
    assert found == {
        "lernie stop <ws> <id>": None,
        "lernie halt <ws> <id>": "lernie has no verb 'halt'",
        "lernie prompt <ws> --urgent": "no option --urgent",
        "lernie-check audit <ws> [--json]": None,
        "lernie-check verify": "lernie-check has no subcommand 'verify'",
        "lernie-check --no-such": "no option --no-such",
        "lernie-check refine [--no-such N]": "no option --no-such",
        "python -m no_such_module": "no module 'no_such_module'",
        "python -m benchmarks --no-such": "no option --no-such",
    }


def test_the_real_parsers_accept_what_the_docs_show() -> None:
    shown = [
        "lernie message ws builder --file notes.md",
        "lernie-check --scope siblings-exchange --variant reference",
        "lernie-check conform --impl lernie --seeded-bug no-release-rule --outcome-only",
        "lernie-check audit ws --json --strict",
        "python -m benchmarks --quick --only message",
        ".venv/bin/pytest -q -m slow tests/conform/test_seeded.py",
    ]
    assert {t: check(DocCommand("shown", 1, t)) for t in shown} == dict.fromkeys(shown)


def test_the_allow_list_is_small_and_explained() -> None:
    assert len(ALLOWED) <= 3
    assert all(len(why) > 20 for why in ALLOWED.values())


def test_a_pipeline_splits_into_its_commands() -> None:
    parts = segments("A=1 B='x y' lernie status ws && git diff | lernie message ws b -  # c")
    assert [p.argv for p in parts] == [
        ["lernie", "status", "ws"], ["git", "diff"], ["lernie", "message", "ws", "b", "-"]]
    assert parts[0].env == {"A": "1", "B": "x y"}
