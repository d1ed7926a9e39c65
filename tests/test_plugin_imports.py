"""kb's own plugins and the example use kb_core's public surface only, as docs/plugins.md asks of every
plugin: the modules of :data:`kb_core.extend.surface.PUBLIC_MODULES`, and only the names in their ``__all__``.

Every Python file of ``plugins/*`` and ``examples/*`` is read: the source, the tests and their conftests, the
benches and the scripts. So is the code a file holds in a string and runs elsewhere (``python -c CODE``, a
``textwrap.dedent`` child script): every string constant that parses as Python and imports kb_core.
"""

from __future__ import annotations

import ast
import importlib
import textwrap
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from kbtest import REPO

import kb_core
from kb_core.extend.surface import PUBLIC_MODULES

#: The most names one public module's ``__all__`` holds: a surface that can be read in one sitting.
MOST_NAMES = 40


def _plugin_sources() -> list[Path]:
    files = [*REPO.glob("plugins/*/**/*.py"), *REPO.glob("examples/*/**/*.py")]
    return [p for p in files if not {".venv", "build"} & set(p.relative_to(REPO).parts) and ".egg-info" not in str(p)]


@cache
def _public_names(module: str) -> frozenset[str]:
    """What may be taken from a public module: its ``__all__``, the public modules inside it, kb_core's version."""
    names = set(importlib.import_module(module).__all__)
    names |= {m.rpartition(".")[2] for m in PUBLIC_MODULES if m.rpartition(".")[0] == module}
    return frozenset(names | ({"__version__"} if module == "kb_core" else set()))


def _is_kb_core(module: str) -> bool:
    return module.split(".")[0] == "kb_core"


def _imports_kb_core(tree: ast.AST) -> bool:
    return any(
        (isinstance(node, ast.ImportFrom) and _is_kb_core(node.module or ""))
        or (isinstance(node, ast.Import) and any(_is_kb_core(alias.name) for alias in node.names))
        for node in ast.walk(tree)
    )


def _trees(text: str) -> Iterator[tuple[str, ast.AST]]:
    """The syntax tree of ``text``, then that of every string constant in it that is Python importing kb_core."""
    tree = ast.parse(text)
    yield "", tree
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "kb_core" in node.value:
            try:
                code = ast.parse(textwrap.dedent(node.value))
            except SyntaxError:
                continue
            if _imports_kb_core(code):
                yield f" (in the code held by the string on line {node.lineno})", code


def _uses(tree: ast.AST) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name) for each kb_core module imported (name None) and each name taken from one: by
    ``from M import name``, or as an attribute (``kb_core.hookimpl``, ``kb_core.plugin.remote.Timeouts``)."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_kb_core(node.module or ""):
            yield node.lineno, node.module or "", None
            yield from ((node.lineno, node.module or "", alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name, None) for alias in node.names if _is_kb_core(alias.name))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "kb_core":
            module, attribute = "kb_core", node
            while f"{module}.{attribute.attr}" in PUBLIC_MODULES:
                parent = parents.get(attribute)
                if not isinstance(parent, ast.Attribute):
                    break
                module, attribute = f"{module}.{attribute.attr}", parent
            yield node.lineno, module, attribute.attr


def _wrong(text: str, where: str) -> list[str]:
    wrong = []
    for inside, tree in _trees(text):
        for line, module, name in _uses(tree):
            if module not in PUBLIC_MODULES:
                wrong.append(f"{where}:{line}{inside}: {module} is not a public module")
            elif name is not None and name not in _public_names(module):
                wrong.append(f"{where}:{line}{inside}: {name} is not in {module}.__all__")
    return sorted(set(wrong))


def test_there_is_plugin_code_to_check() -> None:
    sources = _plugin_sources()
    assert len(sources) > 50
    assert any("bench" in p.parts for p in sources) and any(p.name == "conftest.py" for p in sources)
    held = [p for p in sources for inside, _ in _trees(p.read_text(encoding="utf-8")) if inside]
    assert len(held) >= 3, "the code held in strings is read too"


def test_plugins_import_only_the_public_modules_and_their_public_names() -> None:
    sources = {str(path.relative_to(REPO)): path.read_text(encoding="utf-8") for path in _plugin_sources()}
    assert [line for where, text in sources.items() for line in _wrong(text, where)] == []


def test_the_check_finds_what_it_should() -> None:
    code = textwrap.dedent(
        """
        import kb_core
        import kb_core.plugin.remote
        from kb_core import Index, KbError
        from kb_core.types import Chunk
        from kb_core.plugin import Done, remote
        CHILD = "from kb_core.config import Config; print(Config())"
        NOT_CODE = "kb_core.schemas"

        @kb_core.hookimpl
        def f() -> None:
            kb_core.plugin.remote.Timeouts, kb_core.plugin.Nothing, kb_core.plugin.remote.nothing, kb_core.KbError
        """
    )
    found = [line.split(": ", 1)[1] for line in _wrong(code, "x.py")]
    assert sorted(found) == [
        "Index is not in kb_core.__all__",
        "Nothing is not in kb_core.plugin.__all__",
        "hookimpl is not in kb_core.__all__",
        "kb_core.config is not a public module",
        "kb_core.types is not a public module",
        "nothing is not in kb_core.plugin.remote.__all__",
    ]


def test_the_surface_fits_on_a_screen() -> None:
    sizes = {module: len(importlib.import_module(module).__all__) for module in PUBLIC_MODULES}
    assert all(size <= MOST_NAMES for size in sizes.values()), sizes
    assert not {"Session", "emit", "pass_session", "dumps", "storage_error"} & set(kb_core.__all__)


def test_no_name_is_in_two_public_modules() -> None:
    """RegisterCommand included: a command's plugin takes it from kb_core.plugin, with ``hookimpl``."""
    homes: dict[str, list[str]] = {}
    for module in PUBLIC_MODULES:
        for name in importlib.import_module(module).__all__:
            homes.setdefault(name, []).append(module)
    assert {name: modules for name, modules in homes.items() if len(modules) > 1} == {}
