"""The configuration imports no wing above it: no loop between the config modules and ``answers/``.

docs/architecture.md: "a wing imports only wings above it in this list, and the foundations". The
configuration (``config.py``, ``config_schema.py``) is a foundation and ``answers/`` reads it (its
``Config``); until issue 44 ``config_schema.py`` imported ``answers/`` back for the names its rules
accept, a loop between the packages. The graph here is read from the source (``ast``), every import
statement counted (inside functions and ``TYPE_CHECKING`` blocks too), and importing ``kb_core.a.b``
counts as importing the package ``kb_core.a`` as well (its ``__init__`` runs). The root package
``kb_core`` (the library's facade, which imports every wing) is left out: every module is inside it.
"""

from __future__ import annotations

import ast
from collections import deque
from functools import cache
from pathlib import Path

from kbtest import REPO

from kb_core.answers.prompts import TEMPLATES, choose_template
from kb_core.answers.questions import QuestionKind
from kb_core.config_schema import AUTO, RULES, TEMPLATE_VERSIONS, UNSUPPORTED_POLICIES

ROOT = "kb_core"
CONFIG_MODULES = ("kb_core.config", "kb_core.config_schema")
ANSWERS = "kb_core.answers"
LATIN = QuestionKind("latin", yes_no=False, choice=False)


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    """Every module and package of kb_core, by dotted name."""
    return {_module_name(path): path for path in sorted((REPO / ROOT).rglob("*.py"))}


def _imported(name: str, path: Path) -> set[str]:
    """The kb_core modules and packages ``name`` imports (a ``from`` import of a submodule names it too)."""
    modules = _modules()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            found |= {".".join(parts[:cut]) for cut in range(2, len(parts) + 1)} & set(modules)
    return found - {name}


@cache
def _graph() -> dict[str, frozenset[str]]:
    return {name: frozenset(_imported(name, path)) for name, path in _modules().items()}


def _path_to(start: str, wanted: str) -> list[str]:
    """The shortest import chain from ``start`` to a module in the package ``wanted`` (empty: none)."""
    graph = _graph()
    before: dict[str, str] = {start: ""}
    queue = deque([start])
    while queue:
        name = queue.popleft()
        if name == wanted or name.startswith(wanted + "."):
            chain = [name]
            while before[chain[-1]]:
                chain.append(before[chain[-1]])
            return chain[::-1]
        for following in sorted(graph.get(name, ())):
            if following not in before:
                before[following] = name
                queue.append(following)
    return []


def test_the_graph_sees_imports() -> None:
    """The check could fail: ``answers/`` does read the configuration, and the reading of ``from`` imports works."""
    assert _path_to("kb_core.answers.pipeline", "kb_core.config")[:2] == ["kb_core.answers.pipeline", "kb_core.config"]
    assert "kb_core.answers.prompts" in _graph()["kb_core.answers.validation"]
    assert "kb_core.bounds" in _graph()["kb_core.types"]  # ``from kb_core import bounds``
    assert "kb_core.ingest" in _graph()["kb_core.config_schema"]  # the package of ``kb_core.ingest.ignores``


def test_the_config_modules_import_nothing_of_answers() -> None:
    chains = {module: _path_to(module, ANSWERS) for module in CONFIG_MODULES}
    assert chains == dict.fromkeys(CONFIG_MODULES, []), "the configuration imports answers/: a package loop"


def test_the_choices_of_the_answer_keys_are_the_answers_own() -> None:
    """``config_schema`` names the templates and policies ``answers/`` implements, and no others."""
    assert tuple(TEMPLATES) == TEMPLATE_VERSIONS, "add the template's version to config_schema.TEMPLATE_VERSIONS"
    assert RULES["rag.prompt_template_version"].choices == (AUTO, *TEMPLATES)
    assert RULES["rag.unsupported_claims"].choices == UNSUPPORTED_POLICIES == ("refuse", "drop")
    assert all(choose_template(version, LATIN) is TEMPLATES[version] for version in TEMPLATE_VERSIONS)
    assert choose_template(AUTO, LATIN).version == "rag-v5"
