"""Every tool argument that names a stored path, a prefix, a glob, a citation or an id is refused with kb's one line
when it holds a NUL or a lone surrogate, before any store query: on SQLite and on PostgreSQL (whose text cannot
hold a NUL: the query failed there instead of finding nothing)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kb_core
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, load_registry
from kb_mcp.tools import KbTools

#: Each tool's argument that reaches a store query, as a call of ``tools`` with the value.
CALLS: dict[str, Callable[[KbTools, str], Any]] = {
    "list_documents prefix": lambda tools, v: tools.list_documents(v),
    "fetch target": lambda tools, v: tools.fetch(v),
    "threads thread_id": lambda tools, v: tools.threads(thread_id=v),
    "ask thread_id": lambda tools, v: tools.ask("How long are backups kept?", thread_id=v),
    "answers answer_id": lambda tools, v: tools.answers(answer_id=v),
    "search path": lambda tools, v: tools.search("backups", path=v),
}
around = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=10)
faulty = st.builds(
    lambda a, fault, b: f"{a}{fault}{b}", around, st.sampled_from(["\x00", "\ud800", "\udfff", "\udcff"]), around
)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def tools(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KbTools]:
    """The tools over a small knowledge base with one stored answer, on SQLite or on PostgreSQL (pgserver;
    skipped without kb-postgres or pgserver)."""
    folder = tmp_path_factory.mktemp("nul")
    (folder / "notes").mkdir()
    (folder / "notes" / "a.md").write_text("# Backups\n\nBackups are kept for 30 days.\n", encoding="utf-8")
    overrides: dict[str, Any] = {
        "indexes.enabled": ["test-lexical"],
        "search.mode": "lexical",
        "models.llm.backend": "scripted",
    }
    with ExitStack() as stack:
        if request.param == "postgres":
            testing = pytest.importorskip("kb_postgres.testing")
            try:
                url = stack.enter_context(testing.postgres_server(prefix="kb-mcp-nul-pg-"))
            except ImportError as exc:
                pytest.skip(f"could not import 'pgserver': {exc}")
            schema = f"kb_mcp_nul_{uuid.uuid4().hex[:10]}"
            overrides |= {"store.backend": "postgres", "backends.postgres.url": url, "backends.postgres.schema": schema}
        registry = load_registry(extra_plugins=[("indexes", TestIndexesPlugin()), ("llm", ScriptedPlugin())])
        config = kb_core.load_config(kb_dir=folder / "kb", overrides=overrides, environ={})
        kb = stack.enter_context(kb_core.KnowledgeBase(config, registry))
        kb_core.ingest_paths(kb, [folder / "notes"])
        tools = KbTools(kb)
        tools.ask("How long are backups kept?")  # a thread and a stored answer to look up
        yield tools


@settings(max_examples=80, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(value=faulty, call=st.sampled_from(sorted(CALLS)))
def test_a_nul_or_a_lone_surrogate_is_one_line_before_any_store_query(tools: KbTools, value: str, call: str) -> None:
    with pytest.raises(kb_core.KbError) as refused:
        CALLS[call](tools, value)
    line = str(refused.value)
    assert "NUL character (U+0000)" in line or "not valid Unicode" in line, (call, line)
    assert "\n" not in line and refused.value.exit_code == 2, (call, line)


def test_the_same_arguments_without_the_fault_still_work(tools: KbTools) -> None:
    assert tools.list_documents("a").payload["documents"]
    assert tools.fetch("a.md").payload["path"] == "a.md"
    assert tools.search("backups", path="a*").payload.hits
    listed = tools.threads().payload["threads"]
    assert listed and tools.threads(thread_id=listed[0].thread_id).payload.thread_id == listed[0].thread_id
