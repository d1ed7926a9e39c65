"""Plugin discovery through real entry points of installed distributions."""

from __future__ import annotations

import json
from importlib import metadata
from types import ModuleType

import jsonschema
import pytest

import kb_core
from kb_core.errors import NotFoundError
from kb_core.output import schema
from kb_core.extend.registry import load_registry

from kbtest import run_kb

EXPECTED = {
    "tantivy": ("kb-tantivy", "indexes", "tantivy"),
    "sqlitevec": ("kb-sqlitevec", "indexes", "sqlitevec"),
    "llamacpp": ("kb-llamacpp", "language_models", "llamacpp"),
    "ollama": ("kb-ollama", "language_models", "ollama"),
    "parsers": ("kb", "parsers", "markdown"),
    "embedders": ("kb", "embedders", "minilm"),
}


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
    monkeypatch.setenv("KB_LOAD_PLUGINS", "parsers,tantivy")
    registry = load_registry()
    assert sorted(p.name for p in registry.plugins) == ["parsers", "tantivy"]
    with pytest.raises(NotFoundError, match="no language model named 'llamacpp'"):
        registry.get("language_models", "llamacpp")
    monkeypatch.setenv("KB_LOAD_PLUGINS", "")
    assert load_registry().plugins == []


def test_a_third_party_plugin_registers_through_the_same_hooks() -> None:
    plugin = ModuleType("third_party")

    class Upper:
        def parse(self, text: str, path: str):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    @kb_core.hookimpl
    def register_parsers(register):  # type: ignore[no-untyped-def]
        register("upper", lambda config: Upper(), extensions=(".up",))

    plugin.register_parsers = register_parsers  # type: ignore[attr-defined]
    registry = load_registry(extra_plugins=[("third_party", plugin)])
    registration = registry.get("parsers", "upper")
    assert registration.plugin == "third_party" and registration.info["extensions"] == (".up",)
    assert {"upper", "markdown", "text"} <= set(registry.names("parsers"))


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

    @kb_core.hookimpl
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
