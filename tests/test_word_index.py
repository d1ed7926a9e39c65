"""kb_core.testing's WordIndex: it honours the index contract, and the core runs on it alone.

These tests are what lets the core's own behaviour (ingest, sync, search, fusion, answers) be
tested without kb-tantivy or kb-sqlitevec installed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core.answers.pipeline import AskOptions, ask
from kb_core.app import KnowledgeBase
from kb_core.config import load_config
from kb_core.extend.contracts import IndexContext
from kb_core.extend.registry import load_registry
from kb_core.ingest.pipeline import ingest_paths
from kb_core.retrieval.search import search
from kb_core.testing import IndexContract, ScriptedPlugin, TestIndexesPlugin, WordIndex
from kb_core.testing.indexes import words
from kb_core.types import SearchQuery


class TestLexicalWordIndex(IndexContract):
    mode = "lexical"

    @pytest.fixture
    def index_factory(self) -> Callable[[IndexContext], Any]:
        return lambda ctx: WordIndex(ctx, "lexical")


class TestVectorWordIndex(IndexContract):
    mode = "vector"

    @pytest.fixture
    def index_factory(self) -> Callable[[IndexContext], Any]:
        return lambda ctx: WordIndex(ctx, "vector")


def test_words_are_lowercased_and_cjk_runs_are_bigrams() -> None:
    assert words("Grey HERONS nest, 2024!") == {"grey", "herons", "nest", "2024"}
    assert words("서울특별시 인구") == {"서울", "울특", "특별", "별시", "인구"}


@pytest.fixture
def fake_kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    """A knowledge base over the fixture notes with the test indexes and the scripted backend only."""
    registry = load_registry(
        extra_plugins=[("test-indexes", TestIndexesPlugin()), ("scripted", ScriptedPlugin(["Port 7341 [#1]."]))]
    )
    overrides = {"indexes.enabled": ["test-lexical", "test-vector"], "models.llm.backend": "scripted"}
    kb = KnowledgeBase(load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={}), registry)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "daemon.md").write_text("# Daemon\n\nThe daemon listens on TCP port 7341.\n", encoding="utf-8")
    (notes / "garden.md").write_text("# Garden\n\nPrune roses in late winter.\n", encoding="utf-8")
    ingest_paths(kb, [notes])
    yield kb
    kb.close()


def test_the_core_ingests_searches_and_answers_on_the_test_indexes(fake_kb: KnowledgeBase) -> None:
    for mode in ("lexical", "vector", "hybrid"):
        hits = search(fake_kb, SearchQuery("which TCP port does the daemon listen on", k=2, mode=mode)).hits
        assert hits and hits[0].doc_path == "daemon.md", mode
        assert all(0.0 <= h.score <= 1.0 for h in hits) and hits[0].snippet
    answer = ask(fake_kb, "Which TCP port does the daemon listen on?", AskOptions(mode="lexical"))
    assert answer.grounded and [c.citation.path for c in answer.citations] == ["daemon.md"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=80), k=st.integers(min_value=1, max_value=8))
def test_any_query_ranks_in_range_and_never_raises(fake_kb: KnowledgeBase, text: str, k: int) -> None:
    for name in ("test-lexical", "test-vector"):
        hits = fake_kb.index(name).search(SearchQuery(text, k=k))
        assert len(hits) <= k and [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(0.0 <= h.score <= 1.0 for h in hits)
