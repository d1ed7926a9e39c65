"""Hostile inputs through every command and option of ``kb``, configuration files and ``KB_*`` variables,
``.kbignore`` lines and citations: none gets an internal error (exit 70), a hang or, in a process, more than
2 GB (issue 42). The generators are :mod:`kb_core.testing.hostile`'s, shared with ``bench/robustness.py``,
which runs them at volume; here a few hundred examples in all, on the test indexes and the scripted model
(robustness needs no real model).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kbtest import CORPUS, KB, kb_env

from kb_core.cli.main import main
from kb_core.extend.registry import load_registry, registry, reset_registry
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin
from kb_core.testing.hostile import (
    Places,
    citations,
    cli_arguments,
    config_files,
    environments,
    ignore_lines,
    kb_commands,
    run_in_process,
    run_process,
    runnable,
)

FAST = settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
#: The plugins of a ``kb`` process: the test indexes and the scripted model.
PLUGINS = "kb_core.testing.indexes:TestIndexesPlugin,kb_core.testing.language_models:ScriptedPlugin"
ENV = {"KB_INDEXES__ENABLED": '["test-lexical"]', "KB_PLUGIN_MODULES": None, "KB_HOME": None}


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Places]:
    """The fixture corpus ingested on the lexical test index; the scripted backend registered in process."""
    saved = registry()
    reset_registry(load_registry(extra_plugins=[("test-indexes", TestIndexesPlugin()), ("scripted", ScriptedPlugin())]))
    root = tmp_path_factory.mktemp("hostile")
    (root / "config.toml").write_text("", encoding="utf-8")
    ENV["KB_CONFIG"] = str(root / "config.toml")
    kb_dir = root / "kb"
    outcome = run_in_process(main, ["--kb", str(kb_dir), "ingest", str(CORPUS)], env=ENV)
    assert outcome.ok and outcome.detail.startswith("exit 0"), outcome
    documents = tuple(str(p.relative_to(CORPUS)) for p in sorted(CORPUS.rglob("*")) if p.is_file())
    sandbox = root / "sandbox"
    sandbox.mkdir()
    notes = shutil.copytree(CORPUS / "notes", root / "notes")  # a copy: a generated --kb may name the folder
    yield Places(sandbox=sandbox, kb_dir=kb_dir, documents=documents, folders=(notes,))
    reset_registry(saved)


def test_the_generator_walks_every_command() -> None:
    paths = {path for path, _command in kb_commands()}
    assert {("ask",), ("search",), ("ingest",), ("config", "show"), ("threads", "list")} <= paths
    assert any(len(path) == 2 and path[0] == "eval" for path in paths)


@FAST
@given(data=st.data())
def test_no_command_line_is_an_internal_error_or_a_hang(places: Places, data: st.DataObject) -> None:
    args = data.draw(cli_arguments(places), label="args")
    outcome = run_in_process(main, args, env=ENV)
    assert outcome.ok, outcome


@FAST
@given(
    text=config_files(), command=st.sampled_from([["config", "show"], ["search", "wind"], ["list"], ["ask", "why?"]])
)
def test_no_configuration_file_is_an_internal_error(places: Places, text: str, command: list[str]) -> None:
    config = places.sandbox / "hostile.toml"
    config.write_text(text, encoding="utf-8", errors="surrogatepass")
    args = ["--config", str(config), "--kb", str(places.kb_dir), "--backend", "scripted", *command]
    outcome = run_in_process(main, args, env=ENV)
    assert outcome.ok, (text[:500], outcome)


@FAST
@given(data=st.data())
def test_no_environment_is_an_internal_error(places: Places, data: st.DataObject) -> None:
    env = data.draw(environments(places), label="env")
    command = data.draw(st.sampled_from([["config", "show"], ["search", "wind"], ["ask", "why?"]]), label="command")
    outcome = run_in_process(main, ["--kb", str(places.kb_dir), "--backend", "scripted", *command], env={**ENV, **env})
    assert outcome.ok, (env, outcome)


@FAST
@given(lines=ignore_lines(), in_config=st.booleans(), newline=st.sampled_from(["\n", "\r\n"]))
def test_no_ignore_file_stops_an_ingest(places: Places, lines: list[str], in_config: bool, newline: str) -> None:
    folder = places.sandbox / "ignored"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(CORPUS / "notes", folder)
    config = places.sandbox / "ignore.toml"
    if in_config:
        quoted = ", ".join('"' + line.encode("unicode_escape").decode().replace('"', '\\"') + '"' for line in lines)
        config.write_text(f"[ingest]\nignore = [{quoted}]\n", encoding="utf-8")
    else:
        config.write_text("", encoding="utf-8")
        (folder / ".kbignore").write_bytes(newline.join(lines).encode("utf-8", "surrogatepass"))
    kb_dir = places.sandbox / "ignored-kb"
    shutil.rmtree(kb_dir, ignore_errors=True)
    outcome = run_in_process(main, ["--config", str(config), "--kb", str(kb_dir), "ingest", str(folder)], env=ENV)
    assert outcome.ok, (lines, outcome)


@FAST
@given(data=st.data())
def test_no_citation_is_an_internal_error_or_a_hang(places: Places, data: st.DataObject) -> None:
    citation = data.draw(citations(places.documents), label="citation")
    commands = [c[0] for c in kb_commands() if c[0] in {("inspect",), ("pages",), ("show",)}]
    command = data.draw(st.sampled_from(commands), label="command")
    outcome = run_in_process(main, ["--kb", str(places.kb_dir), *command, citation], env=ENV)
    assert outcome.ok, outcome


@pytest.mark.slow
@settings(max_examples=8, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_real_processes_stay_bounded(places: Places, data: st.DataObject) -> None:
    """A few generated command lines, configurations and environments as real ``kb`` processes under 2 GB."""
    args = data.draw(cli_arguments(places).filter(runnable), label="args")
    env = kb_env(
        {"KB_PLUGIN_MODULES": PLUGINS, "KB_INDEXES__ENABLED": '["test-lexical"]', "KB_CONFIG": str(ENV["KB_CONFIG"])}
    )
    env |= data.draw(st.one_of(st.just({}), environments(places)), label="env")
    outcome = run_process([str(KB), *args], env=env)
    assert outcome.ok, (args, outcome)
