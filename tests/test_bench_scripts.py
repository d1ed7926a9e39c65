"""The benchmark scripts still import what they use from kb and its plugins.

Benchmarks run by hand, not in the suite, so a module that moves can break one unseen (it
happened: ``kb_core.search`` became ``kb_core.retrieval.search``). Every ``import`` of a kb
module in ``bench/`` and ``plugins/*/bench/``, at any depth of the file, must name a module that
imports and names it holds. A script that imports a plugin is a ``needs_plugins`` test: kb-core
alone (as ``scripts/check-dist`` runs it) has no plugin to import.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted([*ROOT.glob("bench/*.py"), *ROOT.glob("plugins/*/bench/*.py")])


def kb_imports(script: Path) -> list[tuple[str, str | None]]:
    """(module, name or None) for every import of a ``kb_*`` module anywhere in ``script``."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.startswith("kb_")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("kb_"):
            found += [(node.module or "", alias.name) for alias in node.names]
    return found


def needs_only_the_core(script: Path) -> bool:
    """Whether every kb module ``script`` imports is part of kb-core."""
    return all(module.split(".")[0] == "kb_core" for module, _ in kb_imports(script))


def test_there_are_benchmark_scripts_to_check() -> None:
    assert len(SCRIPTS) >= 10 and any(kb_imports(s) for s in SCRIPTS)
    assert any(needs_only_the_core(s) for s in SCRIPTS) and not all(needs_only_the_core(s) for s in SCRIPTS)


@pytest.mark.parametrize(
    "script",
    [pytest.param(s, marks=() if needs_only_the_core(s) else pytest.mark.needs_plugins) for s in SCRIPTS],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_benchmark_imports_resolve(script: Path) -> None:
    for module_name, name in kb_imports(script):
        module = importlib.import_module(module_name)
        if name is not None and not hasattr(module, name):
            importlib.import_module(f"{module_name}.{name}")  # a submodule, or ImportError names what is missing
