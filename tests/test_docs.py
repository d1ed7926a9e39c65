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
- public names: every name in the ``__all__`` of each module of
  :data:`kb_core.extend.surface.PUBLIC_MODULES` is in the page that module maps to (in backticks or
  a heading), and every reference entry of such a page (a list item opening with a backticked name)
  is in the ``__all__`` of a module mapped to it. Driven by ``PUBLIC_MODULES`` alone: a module added
  or a name moved is checked without a change here. ``kb_core``'s docstring names (``:mod:``) exactly the
  public modules;
- the plugin reference: every name of ``kb_core.plugin`` has its own heading in docs/plugins.md's
  "Reference: ``kb_core.plugin``" with a Python example under it, every such heading is a name, and
  the examples run (each in a namespace of its own, as llm's and datasette's docs hold theirs to the
  code); every Python block of the docs compiles.

tests/test_docs_layout.py holds the distributions and the wings of ``kb_core`` to their docs.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterator

import click
import pytest
from docs_reading import code_spans, fences, page_text, prose, repo_distributions, section_of, table_rows
from kbtest import REPO

import kb_core
import kb_core.plugin
from kb_core.cli.main import _register_builtin_commands, cli
from kb_core.config_schema import RULES
from kb_core.extend import hookspecs
from kb_core.extend.options import Option
from kb_core.extend.registry import Registry, load_registry
from kb_core.extend.surface import PUBLIC_MODULES

IDENTIFIER = r"[A-Za-z_]\w*"
PLUGINS_PAGE = "docs/plugins.md"
REFERENCE = "## Reference: `kb_core.plugin`"


# -- 1. hooks -----------------------------------------------------------------------------------------

HOOKS = sorted(name for name, value in vars(hookspecs).items() if hasattr(value, "kb_spec"))


def _hook_signature(name: str) -> str:
    parameters = inspect.signature(getattr(hookspecs, name)).parameters
    return f"{name}({', '.join(f'{p.name}: {p.annotation}' for p in parameters.values())})"


def _documented_hooks() -> dict[str, str]:
    """Hook-shaped names in docs/plugins.md's headings and table rows, each with how it is written."""
    found: dict[str, str] = {}
    text = prose(page_text("docs/plugins.md"))
    for line in text.splitlines():
        if line.startswith("#"):
            for span in re.findall(r"`([^`]+)`", line):
                found.setdefault(re.split(r"\(", span)[0], span)
    for row in table_rows(text):
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
    section = section_of(page_text("docs/install.md"), "## Configuration")
    return [row[0] for row in table_rows(section) if row[0].startswith("`")]


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
    return fences(section_of(page_text("README.md"), "## Using it"))[0]


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
    folders = repo_distributions()
    missing = []
    for name, registration in registry.items["commands"].items():
        distribution = distributions[registration.plugin]
        if distribution not in folders:  # a plugin loaded from KB_PLUGIN_MODULES or in process: no README
            continue
        readme = page_text(str((folders[distribution] / "README.md").relative_to(REPO)))
        for path in _command_paths(click.Group(commands={name: registration.factory})):
            if not re.search(rf"(?<![\w-])kb (?:--\S+ \S+ )*{' '.join(path)}(?![\w-])", readme):
                missing.append(f"kb {' '.join(path)} ({distribution}/README.md)")
    assert missing == []


def _undocumented_options(registry: Registry) -> list[str]:
    """Each declared ``[backends.NAME]`` option its plugin's README does not name (in backticks, or ``key =`` in a
    code block)."""
    distributions = {plugin.name: plugin.distribution for plugin in registry.plugins}
    folders = repo_distributions()
    missing = []
    for table, declared in registry.options.items():
        distribution = distributions[registry.options_plugins[table]]
        if distribution not in folders:  # a plugin loaded from KB_PLUGIN_MODULES or in process: no README
            continue
        readme = page_text(str((folders[distribution] / "README.md").relative_to(REPO)))
        if f"[backends.{table}]" not in readme:
            missing.append(f"[backends.{table}] ({distribution}/README.md)")
        spans = re.findall(r"`([^`\n]+)`", prose(readme)) + re.findall(r"^\s*(\w+) =", readme, flags=re.M)
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


# -- 6. public names ----------------------------------------------------------------------------------


def _public_names() -> list[tuple[str, str]]:
    """(module, name) for every name in the ``__all__`` of every public module."""
    return [(module, name) for module in PUBLIC_MODULES for name in importlib.import_module(module).__all__]


def _documents(page: str, name: str) -> bool:
    """Whether ``page`` names ``name`` in backticks (``name``, ``kb_core.name``, ``name(...)``) or a heading."""
    span = re.compile(rf"(?:{IDENTIFIER}(?:\.{IDENTIFIER})*\.)?{re.escape(name)}(?:\(.*\))?", re.S)
    if any(span.fullmatch(s.strip()) for s in code_spans(page)):
        return True
    headings = (line for line in prose(page_text(page)).splitlines() if line.startswith("#"))
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
    entries = re.findall(rf"^[-*] `({IDENTIFIER})[(`]", prose(page_text(page)), flags=re.M)
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
    references = {m for span in code_spans(page) for m in re.findall(r"^kb_core(?:\.\w+)*", span)}
    assert sorted(r for r in references if not _resolves(r)) == []


# -- 7. the plugin reference: a heading and a running example for every name of kb_core.plugin --------


def _reference_entries(text: str) -> dict[str, list[str]]:
    """Each ``### `name``` heading of the plugin reference and the Python blocks under it (``name(...)`` counts
    as ``name``; a module's heading, ``kb_core.plugin.remote``, is not an entry)."""
    reference = section_of(text, REFERENCE)
    parts = re.split(r"^### `([^`]+)`[^\n]*\n", reference, flags=re.M)
    entries: dict[str, list[str]] = {}
    for heading, body in zip(parts[1::2], parts[2::2]):
        name = heading.split("(")[0]
        if "." not in name:
            entries[name] = re.findall(r"^```python\n(.*?)^```", body, flags=re.M | re.S)
    return entries


def _unheaded(names: list[str], text: str) -> list[str]:
    """The names without a heading of their own and a Python example under it."""
    entries = _reference_entries(text)
    return [name for name in names if not entries.get(name)]


def test_the_reference_has_an_entry_per_name() -> None:
    assert len(_reference_entries(page_text(PLUGINS_PAGE))) >= 40


@pytest.mark.parametrize("name", kb_core.plugin.__all__)
def test_every_plugin_name_has_a_heading_and_an_example(name: str) -> None:
    assert _unheaded([name], page_text(PLUGINS_PAGE)) == [], (
        f"add '### `{name}`' under '{REFERENCE}' in {PLUGINS_PAGE}, with a short ```python example"
    )


def test_a_name_without_its_heading_fails_the_check() -> None:
    text = page_text(PLUGINS_PAGE)
    assert _unheaded(["Token", "hookimpl"], text) == []
    without = text.replace("### `Token`\n", "Token, under no heading:\n")
    assert _unheaded(["Token", "hookimpl"], without) == ["Token"]


def test_every_reference_heading_is_a_plugin_name() -> None:
    assert sorted(set(_reference_entries(page_text(PLUGINS_PAGE))) - set(kb_core.plugin.__all__)) == []


@pytest.mark.parametrize("name", sorted(_reference_entries(page_text(PLUGINS_PAGE))))
def test_every_reference_example_runs(name: str) -> None:
    for number, code in enumerate(_reference_entries(page_text(PLUGINS_PAGE))[name], start=1):
        exec(compile(code, f"{PLUGINS_PAGE}, {name}, example {number}", "exec"), {"__name__": f"example_{name}"})


@pytest.mark.parametrize(
    "page",
    ["README.md", *sorted(str(p.relative_to(REPO)) for p in [*REPO.glob("docs/*.md"), *REPO.glob("*/*/README.md")])],
)
def test_every_python_block_of_the_docs_compiles(page: str) -> None:
    for code in re.findall(r"^```python\n(.*?)^```", page_text(page), flags=re.M | re.S):
        compile(code, page, "exec")
