"""R-CLI-2, R-CLI-9: the exit statuses SPEC and docs/operator.md give are the ones the CLI
edge's one table (``lernie_ref.cli.EXIT_STATUS``) maps the error groups to; every error
class of the library is in the errors module and in exactly one group.

The comparison is a function of the texts and the table, so a planted table (a group
moved to another status, a group missing) shows it can fail.
"""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

import pytest

from lernie_ref.cli import EXIT_STATUS, exit_status, main
from lernie_ref.core import errors
from lernie_ref.core.errors import LernieError, ToolError

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec" / "SPEC.md"
OPERATOR = ROOT / "docs" / "operator.md"

Table = tuple[tuple[type[LernieError], int], ...]


def rule(spec: str, rule_id: str) -> str:
    """The paragraph of ``rule_id`` (its bullet and the lines that continue it)."""
    start = spec.index(f"- **{rule_id} ")
    end = re.compile(r"\n(?:- \*\*|\n|#)").search(spec, start + 1)
    return re.sub(r"\s+", " ", spec[start : end.start() if end else len(spec)])


def spec_groups(spec: str) -> dict[str, int]:
    """R-CLI-9's ``Group`` → status pairs."""
    return {name: int(code) for name, code in re.findall(r"`(\w+)` → (\d+)", rule(spec, "R-CLI-9"))}


def spec_statuses(spec: str) -> set[int]:
    """R-CLI-2's list of exit statuses (``Exit statuses: 0 success; 1 …; 2 …``)."""
    listing = rule(spec, "R-CLI-2").split("Exit statuses:", 1)[1].strip()
    return {int(code) for code in re.findall(r"(?:^|; )(\d+) ", listing)}


def docs_statuses(doc: str) -> set[int]:
    """The codes of docs/operator.md's ``## Exit codes`` table."""
    section = doc.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.MULTILINE)}


def disagreements(spec: str, doc: str, table: Table) -> list[str]:
    """What SPEC or the operator's guide says otherwise than ``table``."""
    out = []
    named = {group.__name__: status for group, status in table}
    if spec_groups(spec) != named:
        out.append(f"R-CLI-9 lists {spec_groups(spec)}, the table maps {named}")
    statuses = {0} | set(named.values())
    if spec_statuses(spec) != statuses:
        out.append(f"R-CLI-2 lists statuses {sorted(spec_statuses(spec))}, not {sorted(statuses)}")
    if docs_statuses(doc) != statuses:
        out.append(f"docs/operator.md lists {sorted(docs_statuses(doc))}, not {sorted(statuses)}")
    return out


def test_r_cli_9_spec_and_the_operator_guide_give_the_tables_statuses() -> None:
    assert disagreements(SPEC.read_text(), OPERATOR.read_text(), EXIT_STATUS) == []


@pytest.mark.parametrize(
    "planted",
    [
        tuple((g, 1 if g is errors.UsageError else s) for g, s in EXIT_STATUS),
        tuple((g, s) for g, s in EXIT_STATUS if g is not errors.AgentsDied),
        tuple((g, 4 if g is errors.NotFound else s) for g, s in EXIT_STATUS),
    ],
    ids=["usage-exits-1", "no-agents-died", "not-found-exits-4"],
)
def test_r_cli_9_the_comparison_fails_on_a_table_that_differs(planted: Table) -> None:
    assert disagreements(SPEC.read_text(), OPERATOR.read_text(), planted)


def _error_classes() -> list[type[LernieError]]:
    return [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, LernieError) and value is not LernieError
    ]


def test_r_cli_9_every_error_is_in_exactly_one_group() -> None:
    groups = [group for group, _ in EXIT_STATUS if group is not LernieError] + [ToolError]
    for cls in _error_classes():
        owners = [group.__name__ for group in groups if issubclass(cls, group)]
        assert len(owners) == 1, f"{cls.__name__} is in {owners or 'no group'}"


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.UsageError("x"), 2),
        (errors.UnknownAgent("a", "why"), 1),
        (errors.NotAnAgentId("a/b"), 1),
        (errors.UnpairedToolUse("a"), 1),
        (errors.GitError(["status"], 128, "fatal: x"), 1),
        (errors.AgentsDied("x"), 3),
        (errors.Interrupted("x"), 130),
        (errors.ToolInputError("x"), 1),
    ],
)
def test_r_cli_9_an_error_exits_with_its_groups_status(error: LernieError, status: int) -> None:
    assert exit_status(error) == status


def test_r_cli_2_a_usage_error_exits_2_through_the_edge(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["new", ""]) == 2
    assert capsys.readouterr().err == "lernie new: the workspace path is empty\n"


def exception_classes(source: str) -> list[str]:
    """The classes ``source`` defines whose base is an exception: a builtin one, one of the
    errors module's, or any name ending ``Error`` or ``Exception``."""
    bases = {cls.__name__ for cls in _error_classes()} | {"LernieError"}
    bases |= {name for name in dir(builtins) if name.endswith(("Error", "Exception"))}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            names = {b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases}
            if names & bases or any(n.endswith(("Error", "Exception")) for n in names):
                found.append(node.name)
    return found


def test_every_exception_class_of_the_library_is_defined_in_the_errors_module() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "lernie_ref").rglob("*.py"))
        if path != ROOT / "lernie_ref" / "core" / "errors.py"
        for name in exception_classes(path.read_text())
    ]
    assert found == []
    planted = "if True:\n    class Oops(LookupError): ...\nclass Busy(errors.LockError): ...\n"
    assert sorted(exception_classes(planted)) == ["Busy", "Oops"]
