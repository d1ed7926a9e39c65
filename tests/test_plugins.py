"""Plugin discovery through real entry points of installed distributions."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from types import ModuleType

import jsonschema
import pytest
from kbtest import run_kb

import kb_core
from kb_core.errors import NotFoundError
from kb_core.extend.registry import PluginError, load_registry
from kb_core.output import schema
from kb_core.plugin import hookimpl

EXPECTED = {
    "tantivy": ("kb-tantivy", "indexes", "tantivy"),
    "sqlitevec": ("kb-sqlitevec", "indexes", "sqlitevec"),
    "llamacpp": ("kb-llamacpp", "language_models", "llamacpp"),
    "ollama": ("kb-ollama", "language_models", "ollama"),
    "parsers": ("kb-core", "parsers", "markdown"),
    "embedders": ("kb-core", "embedders", "minilm"),
}


@pytest.mark.needs_plugins
def test_installed_distributions_are_discovered_through_entry_points() -> None:
    registry = load_registry()
    plugins = {p.name: p for p in registry.plugins}
    for name, (distribution, kind, provided) in EXPECTED.items():
        assert plugins[name].distribution == distribution
        assert plugins[name].version == metadata.version(distribution)
        assert provided in plugins[name].provides[kind]
        assert registry.get(kind, provided).plugin == name
    assert registry.get("indexes", "tantivy").info["mode"] == "lexical"
    assert registry.get("indexes", "sqlitevec").info["mode"] == "vector"


def test_kb_load_plugins_restricts_what_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KB_PLUGIN_MODULES", raising=False)
    monkeypatch.setenv("KB_LOAD_PLUGINS", "parsers,embedders")
    registry = load_registry()
    assert sorted(p.name for p in registry.plugins) == ["embedders", "parsers", "stores"]
    with pytest.raises(NotFoundError, match="no language model named 'llamacpp'"):
        registry.get("language_models", "llamacpp")
    monkeypatch.setenv("KB_LOAD_PLUGINS", "")
    only = load_registry()  # the core's store of record loads whatever KB_LOAD_PLUGINS says
    assert [(p.name, p.distribution, p.provides) for p in only.plugins] == [
        ("stores", "kb-core", {"stores": ["sqlite"]})
    ]
    assert only.names("stores") == ["sqlite"] and only.names("parsers") == []


def test_kb_plugin_modules_loads_plugins_that_are_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KB_LOAD_PLUGINS", "")
    monkeypatch.setenv("KB_PLUGIN_MODULES", "kb_core.testing.indexes:TestIndexesPlugin, kb_core.builtin.parsers")
    registry = load_registry()
    assert [(p.name, p.distribution) for p in registry.plugins] == [
        ("stores", "kb-core"),
        ("kb_core.builtin.parsers", "KB_PLUGIN_MODULES"),
        ("kb_core.testing.indexes:TestIndexesPlugin", "KB_PLUGIN_MODULES"),
    ]
    assert registry.get("indexes", "test-lexical").info["mode"] == "lexical"
    assert registry.get("parsers", "markdown").plugin == "kb_core.builtin.parsers"


@pytest.mark.parametrize("spec", ["kb_core.no_such_module", "kb_core.testing.indexes:NoSuchPlugin"])
def test_kb_plugin_modules_naming_nothing_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    monkeypatch.setenv("KB_PLUGIN_MODULES", spec)
    with pytest.raises(PluginError, match=f"KB_PLUGIN_MODULES names '{spec}', which cannot be loaded"):
        load_registry()


def test_a_third_party_plugin_registers_through_the_same_hooks() -> None:
    plugin = ModuleType("third_party")

    class Upper:
        def parse(self, text: str, path: str):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    @hookimpl
    def register_parsers(register):  # type: ignore[no-untyped-def]
        register("upper", lambda config: Upper(), extensions=(".up",))

    plugin.register_parsers = register_parsers  # type: ignore[attr-defined]
    registry = load_registry(extra_plugins=[("third_party", plugin)])
    registration = registry.get("parsers", "upper")
    assert registration.plugin == "third_party" and registration.info["extensions"] == (".up",)
    assert {"upper", "markdown", "text"} <= set(registry.names("parsers"))


@pytest.mark.slow
@pytest.mark.needs_plugins
def test_kb_plugins_json_lists_distributions_versions_and_registrations() -> None:
    result = run_kb("plugins", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    jsonschema.validate(data, schema("plugins.v1"))
    listed = {p["name"]: p for p in data["plugins"]}
    for name, (distribution, kind, provided) in EXPECTED.items():
        assert listed[name]["distribution"] == distribution
        assert provided in listed[name]["provides"][kind]


def test_a_plugin_command_joins_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    import click

    from kb_core.cli.main import main
    from kb_core.extend.registry import reset_registry

    plugin = ModuleType("greeter")

    @click.command()
    @click.argument("name")
    def hello(name: str) -> None:
        """Say hello."""
        click.echo(f"hello {name}")

    @hookimpl
    def register_commands(register):  # type: ignore[no-untyped-def]
        register("hello", hello)

    plugin.register_commands = register_commands  # type: ignore[attr-defined]
    reset_registry(load_registry(extra_plugins=[("greeter", plugin)]))
    try:
        assert main(["hello", "world"]) == 0
        assert capsys.readouterr().out == "hello world\n"
    finally:
        reset_registry(None)
        from kb_core.cli.main import cli

        cli.commands.pop("hello", None)


def _plugin(**hooks: object) -> ModuleType:
    """An in-process plugin module whose hooks are the given functions, marked as hook implementations."""
    module = ModuleType("broken_plugin")
    for name, function in hooks.items():
        setattr(module, name, hookimpl(function))  # type: ignore[arg-type]
    return module


@pytest.mark.parametrize(
    ("hooks", "mistake"),
    [
        ({"register_index": lambda register: None}, "unknown hook 'register_index'"),
        (
            {"register_indexes": lambda register: register("ix", lambda ctx: None)},
            "needs mode='lexical' or mode='vector'",
        ),
        ({"register_indexes": lambda register: register("ix", lambda ctx: None, mode="semantic")}, "not 'semantic'"),
        ({"register_parsers": lambda register: register("org", lambda ctx: None)}, "needs extensions=('.ext', ...)"),
        ({"register_parsers": lambda register: register("org", lambda ctx: None, extensions=("org",))}, "not ('org',)"),
        (
            {"register_language_models": lambda register: register("m", lambda ctx: None, licnce="MIT")},
            "unknown detail licnce for language model 'm'",
        ),
        ({"register_commands": lambda register: register("hello", lambda: None)}, "'hello' is not a click.Command"),
        ({"register_embedders": lambda register: register("", lambda ctx: None)}, "name must be a non-empty string"),
        (
            {"register_embedders": lambda register: register("e", "not a factory")},
            "factory of embedder 'e' is not callable",
        ),
    ],
)
def test_a_plugin_mistake_is_one_error_naming_the_plugin_and_the_mistake(
    hooks: dict[str, object], mistake: str
) -> None:
    with pytest.raises(kb_core.KbError) as raised:
        load_registry(extra_plugins=[("broken", _plugin(**hooks))])
    assert raised.value.message.startswith("plugin 'broken': ")
    assert mistake in raised.value.message


def test_a_well_formed_in_process_plugin_registers_with_its_details() -> None:
    plugin = _plugin(
        register_parsers=lambda register: register("rst", lambda ctx: None, extensions=(".rst",), description="RST")
    )
    registry = load_registry(extra_plugins=[("in-process", plugin)])
    assert registry.get("parsers", "rst").info == {"extensions": (".rst",), "description": "RST"}
    assert registry.get("parsers", "rst").plugin == "in-process"


def test_every_hook_is_documented_in_the_plugin_guide() -> None:
    """Each hook spec has its section in docs/plugins.md, headed by its signature, naming every detail
    its ``register`` callable accepts; the hooks and their signatures come from the specs themselves."""
    import inspect

    import pluggy

    from kb_core.extend import hookspecs

    manager = pluggy.PluginManager("kb")
    manager.add_hookspecs(hookspecs)
    specs = {name: caller.spec for name, caller in vars(manager.hook).items() if getattr(caller, "spec", None)}
    assert specs, "the hook specs were found"
    guide = (Path(__file__).resolve().parents[1] / "docs" / "plugins.md").read_text(encoding="utf-8")
    sections = guide.split("\n### ")
    for name, spec in sorted(specs.items()):
        (parameter,) = inspect.signature(spec.function).parameters.values()
        protocol = getattr(hookspecs, str(parameter.annotation))
        heading = f"`{name}({parameter.name}: {protocol.__name__})`"
        section = next((text for text in sections if text.startswith(heading)), None)
        assert section is not None, f"docs/plugins.md has no section headed {heading}"
        details = inspect.signature(protocol.__call__).parameters.values()
        for detail in (d for d in details if d.kind is inspect.Parameter.KEYWORD_ONLY):
            assert f"{detail.name}=" in section or f"`{detail.name}`" in section, f"{heading}: {detail.name}"


def test_the_public_surface_names_only_what_exists() -> None:
    assert sorted(kb_core.__all__) == sorted(set(kb_core.__all__))
    for name in kb_core.__all__:
        assert getattr(kb_core, name) is not None, name
