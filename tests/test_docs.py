"""The docs fail when they drift from the code (as datasette's tests/test_docs.py holds its docs to its code).

Each check reads the code and the page that documents it, both ways: what exists is documented, and
what is documented exists.

- hooks: every hook spec of ``kb_core/extend/hookspecs.py`` is a heading of docs/plugins.md with its
  signature, and no hook heading names a hook that is gone;
- configuration: every key of ``kb_core.config.Config`` is a row of docs/install.md's Configuration
  table — checked by tests/test_config_schema.py (``test_every_config_key_has_a_rule`` ties the keys
  to ``RULES``, ``test_every_key_is_documented`` ties ``RULES`` to the table); here only the other
  way: every row of the table is a key;
- commands: every command and subcommand of ``kb`` is an entry of README's "Using it" block (built-in)
  or named in its plugin's README (a plugin's, when the plugin is installed), and every ``kb X`` the
  block names exists;
- plugin options: every option a plugin declares for its ``[backends.NAME]`` table (``register_options``)
  is named in that plugin's README, as is the table;
- distributions: kb-core and every ``plugins/*`` and ``examples/*`` distribution are rows of
  docs/architecture.md's distributions table (with their folder), the plugins items of README's
  "Plugins" list (linking their README), with the kb-core range README states, and nothing listed
  is missing from disk;
- wings: every package and module of ``kb_core`` is named in docs/architecture.md's table of wings
  (a top-level one as a row, or among the foundations; one inside a wing in its row), every wing is
  a row of CONTRIBUTING.md's map, and every module these and the data flow name exists;
- public names: every name in the ``__all__`` of each module of
  :data:`kb_core.extend.surface.PUBLIC_MODULES` is in the page that module maps to (in backticks or
  a heading), and every reference entry of such a page (a list item opening with a backticked name)
  is in the ``__all__`` of a module mapped to it. Driven by ``PUBLIC_MODULES`` alone: a module added
  or a name moved is checked without a change here. ``kb_core``'s docstring names (``:mod:``) exactly the
  public modules.
"""

from __future__ import annotations

import importlib
import inspect
import re
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import click
import pytest
from kbtest import REPO

import kb_core
from kb_core.cli.main import _register_builtin_commands, cli
from kb_core.config_schema import RULES
from kb_core.extend import hookspecs
from kb_core.extend.options import Option
from kb_core.extend.registry import CORE_DISTRIBUTION, Registry, load_registry
from kb_core.extend.surface import PUBLIC_MODULES

KB_CORE = REPO / "kb_core"
IDENTIFIER = r"[A-Za-z_]\w*"


# -- reading markdown ---------------------------------------------------------------------------------


@cache
def _page(relative: str) -> str:
    return (REPO / relative).read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    """The part of ``text`` under the heading line ``heading`` up to the next heading of its level or above."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    assert heading in lines, f"no heading {heading!r}"
    start = lines.index(heading) + 1
    end = next(
        (i for i in range(start, len(lines)) if re.match(rf"#{{1,{level}}} ", lines[i]) and not _in_fence(lines, i)),
        len(lines),
    )
    return "\n".join(lines[start:end])


def _in_fence(lines: list[str], index: int) -> bool:
    return sum(line.startswith("```") for line in lines[:index]) % 2 == 1


def _fences(text: str) -> list[str]:
    """The contents of the fenced code blocks of ``text``."""
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.M | re.S)


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks (examples are not descriptions)."""
    return re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S)


@cache
def _spans(page: str) -> list[str]:
    """The inline code spans of ``page``, outside fenced blocks."""
    return re.findall(r"`([^`]+)`", _prose(_page(page)))


def _cells(line: str) -> list[str]:
    """The cells of a table row, splitting on ``|`` outside code spans."""
    cells, cell, in_code = [], "", False
    for char in line.strip().strip("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += char
    return [*cells, cell.strip()]


def _rows(text: str) -> list[list[str]]:
    """The body rows of the tables in ``text`` (header and rule rows left out)."""
    rows: list[list[str]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("|") or re.fullmatch(r"[|\s:-]+", line):
            continue
        if i + 1 < len(lines) and re.fullmatch(r"\|[|\s:-]+", lines[i + 1]):
            continue  # a header
        rows.append(_cells(line))
    return rows


def _names_in(cell: str) -> list[str]:
    """The backticked module and package names of a cell (``store.py``, ``parsers/``)."""
    return [span for span in re.findall(r"`([^`]+)`", cell) if re.fullmatch(r"[a-z_]\w*(\.py|/)", span)]


# -- 1. hooks -----------------------------------------------------------------------------------------

HOOKS = sorted(name for name, value in vars(hookspecs).items() if hasattr(value, "kb_spec"))


def _hook_signature(name: str) -> str:
    parameters = inspect.signature(getattr(hookspecs, name)).parameters
    return f"{name}({', '.join(f'{p.name}: {p.annotation}' for p in parameters.values())})"


def _documented_hooks() -> dict[str, str]:
    """Hook-shaped names in docs/plugins.md's headings and table rows, each with how it is written."""
    found: dict[str, str] = {}
    text = _prose(_page("docs/plugins.md"))
    for line in text.splitlines():
        if line.startswith("#"):
            for span in re.findall(r"`([^`]+)`", line):
                found.setdefault(re.split(r"\(", span)[0], span)
    for row in _rows(text):
        for span in re.findall(r"`([^`]+)`", row[0]):
            found.setdefault(re.split(r"\(", span)[0], span)
    return {name: written for name, written in found.items() if name.startswith("register_")}


def test_there_are_hooks() -> None:
    assert "register_parsers" in HOOKS and "register_commands" in HOOKS


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented_with_its_signature(hook: str) -> None:
    documented = _documented_hooks()
    assert hook in documented, f"docs/plugins.md has no heading '### `{_hook_signature(hook)}`'"
    if "(" in documented[hook]:
        assert documented[hook] == _hook_signature(hook), "docs/plugins.md shows another signature"


def test_plugins_md_names_no_hook_that_does_not_exist() -> None:
    assert sorted(set(_documented_hooks()) - set(HOOKS)) == []


# -- 2. configuration (the other way: tests/test_config_schema.py checks every key is in the table) -------


def _configuration_rows() -> list[str]:
    section = _section(_page("docs/install.md"), "## Configuration")
    return [row[0] for row in _rows(section) if row[0].startswith("`")]


@pytest.mark.parametrize("cell", _configuration_rows())
def test_every_row_of_the_configuration_table_is_a_key(cell: str) -> None:
    assert cell.strip("`") in RULES, "docs/install.md's Configuration table names a key Config does not have"


# -- 3. commands --------------------------------------------------------------------------------------


def _builtin_tree() -> click.Group:
    _register_builtin_commands()
    return cli


def _plugin_command_objects() -> set[int]:
    """The ids of the click commands plugins registered (a plugin's command is never a built-in one)."""
    try:
        commands = load_registry().items["commands"].values()
    except Exception:  # a broken plugin is test_plugins' business; the built-ins are checked either way
        return set()
    return {id(registration.factory) for registration in commands}


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in sorted(group.commands.items()):
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from _command_paths(command, (*prefix, name))


def _builtin_commands() -> list[str]:
    tree = _builtin_tree()
    plugins = _plugin_command_objects()
    builtin = click.Group(commands={n: c for n, c in tree.commands.items() if id(c) not in plugins})
    return [" ".join(path) for path in _command_paths(builtin)]


def _using_it_block() -> str:
    return _fences(_section(_page("README.md"), "## Using it"))[0]


def _mentions(text: str, group_names: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The commands ``text`` names as ``kb NAME ...``: for a group, its subcommands (``list|show ID``)."""
    found: list[tuple[str, ...]] = []
    for match in re.finditer(r"(?<![\w$-])kb ([a-z][a-z-]*)((?:\S| (?!\s))*)", text):
        name, rest = match.group(1), match.group(2)
        if name not in group_names:
            found.append((name,))
            continue
        subcommands = re.findall(r"(?:^ |\|)([a-z][a-z-]*)(?=[\s|]|$)", rest)
        found += [(name, sub) for sub in subcommands] or [(name,)]
    return found


def _group_names() -> dict[str, set[str]]:
    tree = _builtin_tree()
    return {n: set(c.commands) for n, c in tree.commands.items() if isinstance(c, click.Group)}


def _block_entries() -> set[str]:
    """The commands the "Using it" block lists: each line opening with ``kb``, its usage before the two spaces
    that start its description (prose after them may say "kb" as a noun). ``kb threads list|show ID`` is
    ``threads``, ``threads list`` and ``threads show``."""
    lines = [line.strip() for line in _using_it_block().splitlines() if line.strip().startswith("kb ")]
    assert len(lines) > 10
    entries: set[str] = set()
    for line in lines:
        paths = _mentions(line.split("  ")[0], _group_names())
        entries |= {" ".join(path) for path in paths} | {path[0] for path in paths}
    return entries


@pytest.mark.parametrize("command", _builtin_commands())
def test_every_builtin_command_is_in_readme(command: str) -> None:
    assert command in _block_entries(), f"README's 'Using it' block has no line 'kb {command} ...'"


def test_every_command_readme_lists_exists() -> None:
    wrong = sorted(_block_entries() - set(_builtin_commands()))
    assert wrong == [], "README's 'Using it' block lists built-in commands only, and real ones"


def test_every_plugin_command_is_in_its_plugins_readme() -> None:
    registry = load_registry()
    distributions = {plugin.name: plugin.distribution for plugin in registry.plugins}
    folders = _distributions()
    missing = []
    for name, registration in registry.items["commands"].items():
        distribution = distributions[registration.plugin]
        if distribution not in folders:  # a plugin loaded from KB_PLUGIN_MODULES or in process: no README
            continue
        readme = _page(str((folders[distribution] / "README.md").relative_to(REPO)))
        for path in _command_paths(click.Group(commands={name: registration.factory})):
            if not re.search(rf"(?<![\w-])kb (?:--\S+ \S+ )*{' '.join(path)}(?![\w-])", readme):
                missing.append(f"kb {' '.join(path)} ({distribution}/README.md)")
    assert missing == []


def _undocumented_options(registry: Registry) -> list[str]:
    """Each declared ``[backends.NAME]`` option its plugin's README does not name (in backticks, or ``key =`` in a
    code block)."""
    distributions = {plugin.name: plugin.distribution for plugin in registry.plugins}
    folders = _distributions()
    missing = []
    for table, declared in registry.options.items():
        distribution = distributions[registry.options_plugins[table]]
        if distribution not in folders:  # a plugin loaded from KB_PLUGIN_MODULES or in process: no README
            continue
        readme = _page(str((folders[distribution] / "README.md").relative_to(REPO)))
        if f"[backends.{table}]" not in readme:
            missing.append(f"[backends.{table}] ({distribution}/README.md)")
        spans = re.findall(r"`([^`\n]+)`", _prose(readme)) + re.findall(r"^\s*(\w+) =", readme, flags=re.M)
        for key in declared:
            if not any(re.search(rf"(?<![\w.]){key}(?!\w)", span) for span in spans):
                missing.append(f"[backends.{table}] {key} ({distribution}/README.md)")
    return missing


@pytest.mark.needs_plugins  # kb's own plugins declare the options it reads
def test_every_plugin_option_is_in_its_plugins_readme() -> None:
    registry = load_registry()
    assert {"documents", "tesseract", "openai"} <= set(registry.options)
    assert _undocumented_options(registry) == []


def test_an_undocumented_option_fails_the_docs_check() -> None:
    registry = load_registry()
    if "tantivy" not in registry.options:
        pytest.skip("kb-tantivy is not installed")
    undeclared = Option.flag(True, "an option no README names")
    registry.options["tantivy"] = {**registry.options["tantivy"], "zz_not_in_the_readme": undeclared}
    assert _undocumented_options(registry) == ["[backends.tantivy] zz_not_in_the_readme (kb-tantivy/README.md)"]


# -- 4. distributions ---------------------------------------------------------------------------------


@cache
def _distributions() -> dict[str, Path]:
    """Every distribution of the repository and its folder: kb-core, plugins/*, examples/*."""
    found = {CORE_DISTRIBUTION: REPO}
    for pyproject in sorted([*REPO.glob("plugins/*/pyproject.toml"), *REPO.glob("examples/*/pyproject.toml")]):
        found[tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"]] = pyproject.parent
    return found


def _plugins_section() -> str:
    return _section(_page("README.md"), "## Plugins")


def _readme_plugins() -> dict[str, str]:
    """README's "Plugins" list: each distribution and the README it links."""
    return dict(re.findall(r"^- \[([\w-]+)\]\(([^)]+)\)", _plugins_section(), flags=re.M))


def _architecture_distributions() -> dict[str, str]:
    """docs/architecture.md's distributions table: each distribution and its folder."""
    rows = _rows(_section(_page("docs/architecture.md"), "## Distributions"))
    return {
        name: (re.findall(r"`([^`]+)`", row[1]) or [""])[0] for row in rows for name in re.findall(r"`([^`]+)`", row[0])
    }


def _folder(distribution: str) -> str:
    folder = _distributions()[distribution]
    return "." if folder == REPO else f"{folder.relative_to(REPO)}/"


def test_there_are_distributions() -> None:
    assert {"kb-core", "kb-tantivy", "kb-org"} <= set(_distributions())


@pytest.mark.parametrize("distribution", sorted(_distributions()))
def test_every_distribution_is_in_the_architecture_table(distribution: str) -> None:
    table = _architecture_distributions()
    assert distribution in table, "add a row to docs/architecture.md, Distributions"
    assert table[distribution] == _folder(distribution), "the folder in docs/architecture.md is another"


@pytest.mark.parametrize("distribution", sorted(set(_distributions()) - {CORE_DISTRIBUTION}))
def test_every_plugin_is_in_readmes_plugins_list(distribution: str) -> None:
    listed = _readme_plugins()
    assert distribution in listed, "add an item to README's 'Plugins' list"
    assert listed[distribution] == f"{_folder(distribution)}README.md", "README links another page"


@pytest.mark.parametrize("distribution", sorted(set(_distributions()) - {CORE_DISTRIBUTION}))
def test_every_plugin_depends_on_the_range_readme_states(distribution: str) -> None:
    stated = re.findall(rf"`({CORE_DISTRIBUTION}[<>=!~][^`]*)`", _plugins_section())
    assert len(stated) == 1, "README's 'Plugins' section states the kb-core range every plugin depends on"
    pyproject = tomllib.loads((_distributions()[distribution] / "pyproject.toml").read_text(encoding="utf-8"))
    assert stated[0] in pyproject["project"]["dependencies"]


def test_no_listed_distribution_is_missing_from_disk() -> None:
    on_disk = set(_distributions())
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
    rows = _rows(_section(_page("docs/architecture.md"), "## The wings of `kb_core`"))
    return {row[0].strip("`"): _names_in(" ".join(row[1:])) for row in rows}


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
    flow = "\n".join(_fences(_section(_page("docs/architecture.md"), "## Data flow")))
    named = set(re.findall(r"^  ([a-z_]+(?:/[a-z_]+)?) {2,}", flow, flags=re.M))
    mentioned = re.findall(r"(?<![\w/])([a-z_]+)/([a-z_]+)(?![\w/])", flow)
    named |= {f"{wing}/{module}" for wing, module in mentioned if f"{wing}/" in _wings()}
    assert len(named) > 10
    wrong = [n for n in sorted(named) if not (KB_CORE / f"{n}.py").is_file() and not _is_package(KB_CORE / n)]
    assert wrong == []


def _contributing_map() -> set[str]:
    """The paths in the "it lives in" column of CONTRIBUTING.md's map of kb_core."""
    rows = _rows(_section(_page("CONTRIBUTING.md"), "## Where things go"))
    return {span for row in rows for span in re.findall(r"`kb_core/([^`]+)`", row[1])}


@pytest.mark.parametrize("wing", _wings())
def test_every_wing_is_in_contributings_map(wing: str) -> None:
    assert wing in _contributing_map(), f"add `kb_core/{wing}` to a row of CONTRIBUTING.md's map"


def test_contributings_map_names_no_wing_that_does_not_exist() -> None:
    assert sorted(_contributing_map() - set(_wings())) == []


# -- 6. public names ----------------------------------------------------------------------------------


def _public_names() -> list[tuple[str, str]]:
    """(module, name) for every name in the ``__all__`` of every public module."""
    return [(module, name) for module in PUBLIC_MODULES for name in importlib.import_module(module).__all__]


def _documents(page: str, name: str) -> bool:
    """Whether ``page`` names ``name`` in backticks (``name``, ``kb_core.name``, ``name(...)``) or a heading."""
    span = re.compile(rf"(?:{IDENTIFIER}(?:\.{IDENTIFIER})*\.)?{re.escape(name)}(?:\(.*\))?", re.S)
    if any(span.fullmatch(s.strip()) for s in _spans(page)):
        return True
    headings = (line for line in _prose(_page(page)).splitlines() if line.startswith("#"))
    return any(re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", line) for line in headings)


def test_there_are_public_names() -> None:
    assert "kb_core" in PUBLIC_MODULES and len(_public_names()) > 50
    assert all((REPO / page).is_file() for page in PUBLIC_MODULES.values())


@pytest.mark.parametrize(("module", "name"), _public_names(), ids=lambda value: value)
def test_every_public_name_is_documented(module: str, name: str) -> None:
    page = PUBLIC_MODULES[module]
    assert _documents(page, name), f"{module}.{name} is public: describe `{name}` in {page}"


@pytest.mark.parametrize("page", sorted(set(PUBLIC_MODULES.values())))
def test_every_reference_entry_is_a_public_name(page: str) -> None:
    public = {name for module, name in _public_names() if PUBLIC_MODULES[module] == page}
    entries = re.findall(rf"^[-*] `({IDENTIFIER})[(`]", _prose(_page(page)), flags=re.M)
    assert entries or page != "docs/python-api.md"
    assert sorted(set(entries) - public) == [], f"{page} describes names its modules do not export"


def test_kb_cores_docstring_names_exactly_the_public_modules() -> None:
    docstring = kb_core.__doc__ or ""
    assert set(re.findall(r":mod:`(kb_core(?:\.\w+)*)`", docstring)) == set(PUBLIC_MODULES) - {"kb_core"}
    assert "PUBLIC_MODULES" in docstring


# -- and every kb_core name the docs give in backticks exists -----------------------------------------


def _resolves(reference: str) -> bool:
    """Whether ``kb_core.a.b`` is a module, or a name in the longest module it starts with."""
    parts = reference.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


@pytest.mark.parametrize(
    "page", ["README.md", "CONTRIBUTING.md", *sorted(str(p.relative_to(REPO)) for p in REPO.glob("docs/*.md"))]
)
def test_every_kb_core_reference_exists(page: str) -> None:
    references = {m for span in _spans(page) for m in re.findall(r"^kb_core(?:\.\w+)*", span)}
    assert sorted(r for r in references if not _resolves(r)) == []
