"""kb's own plugins and the example use kb_core's public surface only, as docs/plugins.md asks of every
plugin: ``kb_core`` itself, ``kb_core.commands``, ``kb_core.remote`` (for backends that talk to a server),
``kb_core.testing`` and ``kb_core.writing_systems``.

Benchmarks (``bench/``) and fixture generators (``scripts/``) are tools that measure or build on
kb's insides, and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

from kbtest import REPO

import kb_core

PUBLIC_MODULES = {"kb_core", "kb_core.commands", "kb_core.remote", "kb_core.testing", "kb_core.writing_systems"}


def _plugin_sources() -> list[Path]:
    files = [*REPO.glob("plugins/*/**/*.py"), *REPO.glob("examples/*/**/*.py")]
    return [p for p in files if not {"bench", "scripts", ".venv", "build"} & set(p.relative_to(REPO).parts)]


def _kb_core_imports(path: Path) -> list[tuple[int, str, list[str]]]:
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "kb_core":
            found.append((node.lineno, node.module or "", [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names if a.name.split(".")[0] == "kb_core"]
    return found


def test_plugins_import_only_the_public_modules() -> None:
    sources = _plugin_sources()
    assert len(sources) > 50
    wrong = [
        f"{path.relative_to(REPO)}:{line}: {module}"
        for path in sources
        for line, module, _ in _kb_core_imports(path)
        if module not in PUBLIC_MODULES
    ]
    assert wrong == []


def test_names_taken_from_kb_core_are_in_its_public_surface() -> None:
    public = set(kb_core.__all__) | {"__version__"} | {m.split(".")[1] for m in PUBLIC_MODULES if "." in m}
    wrong = [
        f"{path.relative_to(REPO)}:{line}: {name}"
        for path in _plugin_sources()
        for line, module, names in _kb_core_imports(path)
        if module == "kb_core"
        for name in names
        if name not in public
    ]
    assert wrong == []


def test_the_surface_fits_on_a_screen() -> None:
    assert len(kb_core.__all__) <= 80
    assert not {"Session", "emit", "pass_session", "dumps", "storage_error"} & set(kb_core.__all__)
