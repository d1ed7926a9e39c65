"""No module of ``kb_core`` imports itself back through others: the import graph has no circles.

The graph is read from the source (the AST), so it sees every import: at the top of a module, inside a
function (a circle that only works because one side imports late) and under ``TYPE_CHECKING``. Those are
counted too: an annotation's import is a dependency of the design like any other (a wing imports only
the wings above it, docs/architecture.md), and the day it is needed at run time the circle closes.

An edge goes to the module an import names: ``from kb_core.a import b`` to ``kb_core.a.b`` when that is a
module, else to ``kb_core.a`` (its ``__init__``). Importing a submodule runs its packages' ``__init__``
files first, but that is no edge of the importer: a package that re-exports its submodules
(``kb_core/__init__.py``) is not in a circle with a submodule that imports a sibling directly. A module
that imports ``kb_core`` itself (or its own package's ``__init__``) is.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from kbtest import REPO

PACKAGE = REPO / "kb_core"


def module_files() -> dict[str, Path]:
    """Every module of kb_core by its dotted name (a package by its own name, for its ``__init__``)."""
    modules: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_names(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """Each import of ``path`` (anywhere in it) as (line, the dotted name it imports), relative ones resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            yield from ((node.lineno, f"{base}.{alias.name}") for alias in node.names)


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {the kb_core module it imports: the line of the first such import}."""
    modules = module_files()
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        edges = graph.setdefault(module, {})
        for line, name in imported_names(module, path):
            while name and name not in modules:  # a name in a module, or a module outside kb_core
                name = name.rpartition(".")[0]
            if name and name != module:
                edges.setdefault(name, line)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One circle through each strongly connected group of modules (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(group) > 1:
                        found.append(_circle_in(graph, set(group)))
            elif target not in index:
                index[target] = low[target] = len(index)
                stack.append(target)
                work.append((target, iter(graph[target])))
            elif target in stack:
                low[node] = min(low[node], index[target])
    return found


def _circle_in(graph: dict[str, dict[str, int]], group: set[str]) -> list[str]:
    """A shortest way from the group's first module back to itself, inside the group (breadth first)."""
    start = min(group)
    paths = {start: [start]}
    queue = [start]
    for node in queue:
        for target in graph[node]:
            if target == start:
                return [*paths[node], start]
            if target in group and target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    raise AssertionError(f"no circle in {sorted(group)}")


def spelt(graph: dict[str, dict[str, int]], circle: list[str]) -> str:
    """``a (line 3) -> b (line 9) -> a``: each import with the line of the module it is in."""
    steps = [f"{a} (line {graph[a][b]})" for a, b in zip(circle, circle[1:])]
    return " -> ".join([*steps, circle[-1]])


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert len(graph) > 100
    assert "kb_core.answers.pipeline" in graph["kb_core"]  # a re-export in the package's __init__
    assert "kb_core.app" in graph["kb_core.answers.pipeline"]  # under TYPE_CHECKING
    assert "kb_core.evaluation.answers" in graph["kb_core.cli.answers"]  # inside a function
    assert "kb_core.cli.answers" in graph["kb_core.cli.main"]  # a module imported from its package


def test_circles_are_found_and_spelt_out() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3, "d": 4}, "d": {}, "e": {"e.f": 5}, "e.f": {}}
    [circle] = circles(graph)
    assert spelt(graph, circle) == "a (line 1) -> b (line 2) -> c (line 3) -> a"


def test_kb_core_has_no_import_circles() -> None:
    graph = import_graph()
    found = [spelt(graph, circle) for circle in circles(graph)]
    assert found == [], "import circles:\n" + "\n".join(found)
