"""No import cycles in the implementation: the module import graph of ``lernie_ref`` is
acyclic (issue 28, item 7).

The graph is built from the source text with ``ast``, not by importing anything: every
``import`` and ``from … import`` of a module counts, wherever it stands (at the top, inside
a function, under a ``TYPE_CHECKING`` guard), because each is a dependency a reader has to
follow. ``from package import name`` counts as an import of ``package.name`` when that is a
module of the tree, else of ``package`` (its ``__init__``). A package ``__init__`` is a
module like any other, so an ``__init__`` that imports one of its modules while that module
imports the package's ``__init__`` is a cycle too. Imports built at run time
(``importlib.import_module``) are not seen: the CLI's verb dispatch is one, by design.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def modules_of(package: Path) -> dict[str, Path]:
    """Every module of the package tree rooted at ``package``, by dotted name."""
    out: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module → the modules of the same tree it imports (at any depth of its text)."""
    modules = modules_of(package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, path.name == "__init__.py", node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative),
    each sorted; sorted by their first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_lernie_ref_has_no_import_cycle() -> None:
    graph = import_graph(ROOT / "lernie_ref")
    assert len(graph) > 50  # the whole tree was read
    assert cycles(graph) == []


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "planted"
    for rel, text in files.items():
        path = package / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package


def test_the_check_sees_a_cycle_through_a_function_local_import(tmp_path: Path) -> None:
    package = _plant(tmp_path, {
        "__init__.py": "",
        "a.py": "from planted.b import g\n",
        "b.py": "def g() -> None:\n    from planted import a\n",
        "c.py": "import planted.a\n",
    })
    assert cycles(import_graph(package)) == [["planted.a", "planted.b"]]


def test_the_check_sees_a_cycle_through_a_type_checking_import(tmp_path: Path) -> None:
    package = _plant(tmp_path, {
        "__init__.py": "",
        "config.py": "from planted.preflight import MODELS\n",
        "preflight.py": (
            "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from planted.config import Config\n"
        ),
    })
    assert cycles(import_graph(package)) == [["planted.config", "planted.preflight"]]


def test_the_check_sees_a_package_init_importing_a_module_that_imports_it(
    tmp_path: Path,
) -> None:
    package = _plant(tmp_path, {
        "__init__.py": "",
        "models/__init__.py": "from planted.models.command import CommandModel\nStop = int\n",
        "models/command.py": "from . import Stop\nclass CommandModel: ...\n",
        "models/other.py": "from planted.models import command\n",
    })
    assert cycles(import_graph(package)) == [["planted.models", "planted.models.command"]]


def test_an_acyclic_tree_passes(tmp_path: Path) -> None:
    package = _plant(tmp_path, {
        "__init__.py": "",
        "models/__init__.py": "",
        "models/types.py": "Stop = int\n",
        "models/command.py": "from planted.models.types import Stop\n",
        "select.py": "def f() -> None:\n    from planted.models import command\n",
    })
    graph = import_graph(package)
    assert graph["planted.select"] == {"planted.models.command"}
    assert cycles(graph) == []
