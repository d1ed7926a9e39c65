"""The numbers of ``kb mcp``'s tools and its ``--port`` take their ranges from ``kb_core.bounds``, as the CLI,
the configuration and ``kb serve`` do: one line naming the value and what is allowed.

Before (issue 42): a ``limit`` out of 1..1000 was pydantic's report (or silently clamped in process) while
``kb threads list --limit`` took up to 1,000,000; ``k`` gave ``check_k``'s line while ``kb search --k`` gave
another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import kb_core
from kb_core.bounds import LIST_LIMIT, PORT, K
from kb_core.commands import Bounded, Session
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, load_registry
from kb_mcp.command import mcp_command
from kb_mcp.server import build_server
from kb_mcp.tools import KbTools


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KbTools]:
    folder = tmp_path_factory.mktemp("bounds")
    notes = folder / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Backups\n\nBackups are kept for 30 days.\n")
    registry = load_registry(extra_plugins=[("indexes", TestIndexesPlugin()), ("llm", ScriptedPlugin())])
    overrides = {"indexes.enabled": ["test-lexical"], "search.mode": "lexical", "models.llm.backend": "scripted"}
    config = kb_core.load_config(kb_dir=folder / "kb", overrides=overrides, environ={})
    with kb_core.KnowledgeBase(config, registry) as kb:
        kb_core.ingest_paths(kb, [notes])
        yield KbTools(kb)


@given(st.integers(-(2**70), 2**70))
def test_limit_and_k_are_refused_outside_their_bounds_with_the_bounds_line(tools: KbTools, value: int) -> None:
    for call, bound, name in (
        (lambda: tools.threads(limit=value), LIST_LIMIT, "limit"),
        (lambda: tools.answers(limit=value), LIST_LIMIT, "limit"),
        (lambda: tools.search("backups", k=value), K, "k"),
    ):
        if bound.holds(value):
            call()
            continue
        with pytest.raises(kb_core.KbError) as refused:
            call()
        assert refused.value.message.startswith(f"{name} = ") and refused.value.message.endswith(bound.allowed)


def test_the_tools_schemas_state_the_same_bounds(tools: KbTools) -> None:
    listed = asyncio.run(build_server(tools).list_tools())
    properties = {tool.name: tool.input_schema["properties"] for tool in listed}
    for tool, name, bound in (("search", "k", K), ("ask", "k", K), ("threads", "limit", LIST_LIMIT)):
        stated = properties[tool][name]
        assert (stated["minimum"], stated["maximum"]) == (bound.low, bound.high), (tool, name)
    assert (properties["answers"]["limit"]["minimum"], properties["answers"]["limit"]["maximum"]) == (
        LIST_LIMIT.low,
        LIST_LIMIT.high,
    )


def test_kb_mcp_port_is_a_port_bound(tmp_path: Path) -> None:
    (port,) = [p for p in mcp_command.params if isinstance(p, click.Option) and p.name == "port"]
    assert isinstance(port.type, Bounded) and port.type.bound is PORT
    result = CliRunner().invoke(mcp_command, ["--port", "65536"], obj=Session(None, str(tmp_path / "kb"), None))
    assert result.exit_code == 2 and f"65536 is not {PORT.allowed}" in result.output
    assert not (tmp_path / "kb").exists()
