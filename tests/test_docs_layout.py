"""The docs of the repository's layout fail when they drift from it (tests/test_docs.py holds the rest).

- distributions: kb-core and every ``plugins/*`` and ``examples/*`` distribution are rows of
  docs/architecture.md's distributions table (with their folder), the plugins items of README's
  "Plugins" list (linking their README), with the kb-core range README states, and nothing listed
  is missing from disk;
- wings: every package and module of ``kb_core`` is named in docs/architecture.md's table of wings
  (a top-level one as a row, or among the foundations; one inside a wing in its row), every wing is
  a row of CONTRIBUTING.md's map, and every module these and the data flow name exists.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from docs_reading import fences, names_in, page_text, repo_distributions, section_of, table_rows
from kbtest import REPO

from kb_core.extend.registry import CORE_DISTRIBUTION

KB_CORE = REPO / "kb_core"


# -- 4. distributions ---------------------------------------------------------------------------------


def _plugins_section() -> str:
    return section_of(page_text("README.md"), "## Plugins")


def _readme_plugins() -> dict[str, str]:
    """README's "Plugins" list: each distribution and the README it links."""
    return dict(re.findall(r"^- \[([\w-]+)\]\(([^)]+)\)", _plugins_section(), flags=re.M))


def _architecture_distributions() -> dict[str, str]:
    """docs/architecture.md's distributions table: each distribution and its folder."""
    rows = table_rows(section_of(page_text("docs/architecture.md"), "## Distributions"))
    return {
        name: (re.findall(r"`([^`]+)`", row[1]) or [""])[0] for row in rows for name in re.findall(r"`([^`]+)`", row[0])
    }


def _folder(distribution: str) -> str:
    folder = repo_distributions()[distribution]
    return "." if folder == REPO else f"{folder.relative_to(REPO)}/"


def test_there_are_distributions() -> None:
    assert {"kb-core", "kb-tantivy", "kb-org"} <= set(repo_distributions())


@pytest.mark.parametrize("distribution", sorted(repo_distributions()))
def test_every_distribution_is_in_the_architecture_table(distribution: str) -> None:
    table = _architecture_distributions()
    assert distribution in table, "add a row to docs/architecture.md, Distributions"
    assert table[distribution] == _folder(distribution), "the folder in docs/architecture.md is another"


@pytest.mark.parametrize("distribution", sorted(set(repo_distributions()) - {CORE_DISTRIBUTION}))
def test_every_plugin_is_in_readmes_plugins_list(distribution: str) -> None:
    listed = _readme_plugins()
    assert distribution in listed, "add an item to README's 'Plugins' list"
    assert listed[distribution] == f"{_folder(distribution)}README.md", "README links another page"


@pytest.mark.parametrize("distribution", sorted(set(repo_distributions()) - {CORE_DISTRIBUTION}))
def test_every_plugin_depends_on_the_range_readme_states(distribution: str) -> None:
    stated = re.findall(rf"`({CORE_DISTRIBUTION}[<>=!~][^`]*)`", _plugins_section())
    assert len(stated) == 1, "README's 'Plugins' section states the kb-core range every plugin depends on"
    pyproject = tomllib.loads((repo_distributions()[distribution] / "pyproject.toml").read_text(encoding="utf-8"))
    assert stated[0] in pyproject["project"]["dependencies"]


def test_no_listed_distribution_is_missing_from_disk() -> None:
    on_disk = set(repo_distributions())
    assert sorted(set(_readme_plugins()) - on_disk) == [], "README's 'Plugins' list"
    assert sorted(set(_architecture_distributions()) - on_disk) == [], "docs/architecture.md, Distributions"


# -- 5. wings and modules -----------------------------------------------------------------------------


def _is_package(path: Path) -> bool:
    return path.is_dir() and (path / "__init__.py").is_file()


def _named(path: Path) -> str:
    """How the docs name a module or package: ``store.py``, ``parsers/``."""
    return f"{path.name}/" if path.is_dir() else path.name


def _wings() -> list[str]:
    """The top-level packages and modules of kb_core."""
    children = sorted(KB_CORE.iterdir())
    return [_named(p) for p in children if _is_package(p) or (p.suffix == ".py" and p.name != "__init__.py")]


def _inner_modules() -> list[tuple[str, str]]:
    """(wing, module or package) for everything inside a package wing, at any depth."""
    found: list[tuple[str, str]] = []
    for wing in (p for p in sorted(KB_CORE.iterdir()) if _is_package(p)):
        for path in sorted(wing.rglob("*")):
            if _is_package(path) or (path.suffix == ".py" and path.name != "__init__.py" and _is_package(path.parent)):
                found.append((_named(wing), _named(path)))
    return found


def _wing_table() -> dict[str, list[str]]:
    """docs/architecture.md's table of wings: each wing cell (``foundations``, ``answers/``) and the names in it."""
    rows = table_rows(section_of(page_text("docs/architecture.md"), "## The wings of `kb_core`"))
    return {row[0].strip("`"): names_in(" ".join(row[1:])) for row in rows}


def _exists_in(folder: Path, named: str) -> bool:
    return any(_named(p) == named for p in folder.rglob(named.rstrip("/")) if _is_package(p) or p.suffix == ".py")


def test_there_are_wings() -> None:
    assert {"answers/", "builtin/", "app.py", "config_schema.py", "remote.py"} <= set(_wings())
    assert ("answers/", "judge.py") in _inner_modules() and ("builtin/", "parsers/") in _inner_modules()


@pytest.mark.parametrize("wing", _wings())
def test_every_wing_is_in_the_architecture(wing: str) -> None:
    table = _wing_table()
    assert wing in table or wing in table.get("foundations", []), "docs/architecture.md, The wings of `kb_core`"


@pytest.mark.parametrize(("wing", "module"), _inner_modules(), ids=lambda value: value)
def test_every_module_is_in_its_wings_row(wing: str, module: str) -> None:
    assert module in _wing_table().get(wing, []), f"name `{module}` in the row of `{wing}` in docs/architecture.md"


def test_the_architecture_names_no_module_that_does_not_exist() -> None:
    wrong = []
    for wing, names in _wing_table().items():
        if wing == "foundations":
            wrong += [name for name in names if name not in _wings()]
            continue
        if wing not in _wings():
            wrong.append(wing)
        elif wing.endswith("/"):
            wrong += [f"{wing}{name}" for name in names if not _exists_in(KB_CORE / wing, name)]
    assert wrong == []


def test_the_data_flow_names_modules_that_exist() -> None:
    """Its left column (``ingest/source``, ``conversations``) and every ``wing/module`` it mentions."""
    flow = "\n".join(fences(section_of(page_text("docs/architecture.md"), "## Data flow")))
    named = set(re.findall(r"^  ([a-z_]+(?:/[a-z_]+)?) {2,}", flow, flags=re.M))
    mentioned = re.findall(r"(?<![\w/])([a-z_]+)/([a-z_]+)(?![\w/])", flow)
    named |= {f"{wing}/{module}" for wing, module in mentioned if f"{wing}/" in _wings()}
    assert len(named) > 10
    wrong = [n for n in sorted(named) if not (KB_CORE / f"{n}.py").is_file() and not _is_package(KB_CORE / n)]
    assert wrong == []


def _contributing_map() -> set[str]:
    """The paths in the "it lives in" column of CONTRIBUTING.md's map of kb_core."""
    rows = table_rows(section_of(page_text("CONTRIBUTING.md"), "## Where things go"))
    return {span for row in rows for span in re.findall(r"`kb_core/([^`]+)`", row[1])}


@pytest.mark.parametrize("wing", _wings())
def test_every_wing_is_in_contributings_map(wing: str) -> None:
    assert wing in _contributing_map(), f"add `kb_core/{wing}` to a row of CONTRIBUTING.md's map"


def test_contributings_map_names_no_wing_that_does_not_exist() -> None:
    assert sorted(_contributing_map() - set(_wings())) == []
