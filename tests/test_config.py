"""Configuration: precedence, provenance, validation, and --config honoured by every command."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from kbtest import run_kb

from kb_core.cli.main import cli
from kb_core.config import effective_values, load_config
from kb_core.errors import ConfigError


def test_precedence_default_file_env_flag(tmp_path: Path) -> None:
    config_file = tmp_path / "c.toml"
    config_file.write_text('[search]\ndefault_k = 7\nmode = "lexical"\n[rag]\nscore_gate = 0.4\n')
    env = {"KB_SEARCH__DEFAULT_K": "12", "KB_HOME": str(tmp_path / "home")}
    config = load_config(config_file, overrides={"rag.score_gate": 0.5}, environ=env)
    assert config.search.mode == "lexical"
    assert config.search.default_k == 12
    assert config.rag.score_gate == 0.5
    assert config.kb_dir == str((tmp_path / "home").resolve())
    sources = {key: source for key, _, source in effective_values(config)}
    assert sources["search.mode"] == f"file:{config_file}"
    assert sources["search.default_k"] == "env:KB_SEARCH__DEFAULT_K"
    assert sources["rag.score_gate"] == "flag"
    assert sources["search.rrf_k"] == "default"


def test_kb_config_env_names_the_file(tmp_path: Path) -> None:
    config_file = tmp_path / "c.toml"
    config_file.write_text("[search]\nfanout = 99\n")
    assert load_config(environ={"KB_CONFIG": str(config_file)}).search.fanout == 99


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[search\n", "not valid TOML"),
        ("[search]\ndefault_k = 'many'\n", "search.default_k"),
        ("[search]\nunknown_key = 1\n", "unknown_key"),
    ],
)
def test_invalid_config_is_one_clear_line(tmp_path: Path, text: str, fragment: str) -> None:
    config_file = tmp_path / "c.toml"
    config_file.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(config_file, environ={})
    assert fragment in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_config_file_is_an_error_when_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml", environ={})


def _all_command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            paths.extend(_all_command_paths(command, prefix + (name,)))
        else:
            paths.append(prefix + (name,))
    return paths


@pytest.mark.slow
def test_every_subcommand_honours_config(tmp_path: Path) -> None:
    """A broken --config file must stop every command with the same one-line error (none ignores it)."""
    from kb_core.cli.main import _register_builtin_commands

    _register_builtin_commands()
    broken = tmp_path / "broken.toml"
    broken.write_text("[search]\ndefault_k = 'x'\n")
    commands = _all_command_paths(cli)
    assert {("ingest",), ("list",), ("doctor",), ("config", "show"), ("plugins",)} <= set(commands)
    for path in commands:
        result = run_kb("--config", str(broken), *path, *_dummy_args(path))
        assert result.returncode == 2, (path, result.stderr)
        assert "invalid configuration" in result.stderr and "search.default_k" in result.stderr, (path, result.stderr)
        assert "Traceback" not in result.stderr


def _dummy_args(path: tuple[str, ...]) -> list[str]:
    needs = {
        "ingest": ["."],
        "inspect": ["x"],
        "rm": ["x"],
        "search": ["q"],
        "ask": ["q"],
        "retrieval": ["--queries", "q", "--qrels", "r"],
        "answers": ["--golden", "g"],
        "compare": ["a", "b"],
    }
    return needs.get(path[-1], [])


@pytest.mark.slow
def test_config_file_kb_dir_is_used_by_commands(tmp_path: Path) -> None:
    kb_dir = tmp_path / "from-config"
    config_file = tmp_path / "c.toml"
    config_file.write_text(f'kb_dir = "{kb_dir}"\n')
    result = run_kb("--config", str(config_file), "init", "--json")
    assert result.returncode == 0, result.stderr
    assert (kb_dir / "kb.sqlite3").exists()
    shown = run_kb("--config", str(config_file), "config", "show")
    assert f"kb_dir = '{kb_dir}'  (file:{config_file})" in shown.stdout


def test_config_show_never_prints_a_secret(tmp_path: Path) -> None:
    from kb_core.config import effective_values

    config_file = tmp_path / "kb.toml"
    config_file.write_text(
        '[backends.openai]\napi_key = "sk-very-secret"\napi_key_env = "MY_KEY"\n[backends.serve]\ntoken = "t0ken"\n'
    )
    shown = {key: value for key, value, _ in effective_values(load_config(config_file, tmp_path / "kb", environ={}))}
    backends = shown["backends"]
    assert backends["openai"]["api_key"] == "***" and backends["serve"]["token"] == "***"
    assert backends["openai"]["api_key_env"] == "MY_KEY"  # the name of a variable is not a secret
    assert "sk-very-secret" not in repr(shown) and "t0ken" not in repr(shown)
