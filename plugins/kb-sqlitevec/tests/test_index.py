"""kb-sqlitevec against the real default embedder and a real store of record.

What every vector index must do is ``kb_core.testing.VectorIndexContract``; the tests here are sqlitevec's own.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core import SearchQuery
from kb_core.plugin import Embedder, IndexContext, Problem, make_snippet, similarity_to_score
from kb_core.testing import (
    ON_TOPIC,
    VECTOR_CORPUS,
    CountingEmbedder,
    StoreOfRecord,
    VectorIndexContract,
    store_document,
)
from kb_sqlitevec import make_index
from kb_sqlitevec.index import SqliteVecIndex, metadata_matches

OpenIndex = Any
FINGERPRINT = "sqlitevec-1;model=all-MiniLM-L6-v2-int8;dims=384"


class TestSqliteVecIndex(VectorIndexContract):
    name = "sqlitevec"

    @pytest.fixture
    def index_factory(self) -> Any:
        return make_index

    def check_made(self, made: SqliteVecIndex, context: IndexContext) -> None:
        assert (context.directory / "vectors.sqlite3").is_file()
        assert made.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    def default_fingerprint(self, index: SqliteVecIndex) -> str:
        return FINGERPRINT

    def check_model_change(
        self, index: SqliteVecIndex, previous: SqliteVecIndex, problem: Problem, change: str
    ) -> None:
        tables = index.conn.execute("SELECT count(*) FROM sqlite_master WHERE sql LIKE '%USING vec0%'").fetchone()[0]
        assert tables == 1

    def test_a_fan_out_without_snippets_finds_the_same_hits_without_texts(self, index: SqliteVecIndex) -> None:
        """A fusion fan-out asks for no snippets: the same hits, without reading the chunks' texts."""
        query = SearchQuery(next(iter(ON_TOPIC)), k=3)
        without = index.search(attrs.evolve(query, snippets=False))
        assert [(h.chunk_id, h.score) for h in without] == [(h.chunk_id, h.score) for h in index.search(query)]
        assert all(h.snippet == "" for h in without)

    def test_floor_from_embedder_shifts_scores(
        self, open_index: OpenIndex, embedder: Embedder, corpus: list[Any]
    ) -> None:
        floored = CountingEmbedder(embedder)
        floored.similarity_floors = {"latin": 0.5, "han": 0.9}  # the floor of the query's script applies
        idx = open_index(floored)
        idx.upsert(corpus)
        hit = idx.search(SearchQuery("how do plants turn sunlight into energy", k=1))[0]
        assert hit.score == pytest.approx(similarity_to_score(hit.raw_score, 0.5))
        assert hit.score < hit.raw_score

    def test_a_text_indexed_for_another_document_is_not_embedded_again(
        self, open_index: OpenIndex, embedder: Embedder, store: StoreOfRecord, corpus: list[Any]
    ) -> None:
        counting = CountingEmbedder(embedder)
        idx = open_index(counting)
        idx.upsert(corpus)
        idx.commit()
        counting.embedded.clear()
        twin = store_document(
            store, "copies/photosynthesis.md", VECTOR_CORPUS["biology/photosynthesis.md"] + ["A brand new line."]
        )
        idx.upsert(twin)
        idx.commit()
        assert counting.embedded == ["A brand new line."]
        hits = idx.search(SearchQuery("photosynthesis light energy", k=2))
        assert {h.doc_path for h in hits} == {"biology/photosynthesis.md", "copies/photosynthesis.md"}
        assert hits[0].raw_score == pytest.approx(hits[1].raw_score, abs=1e-6)

    def test_one_upsert_embeds_a_repeated_text_once(
        self, open_index: OpenIndex, embedder: Embedder, store: StoreOfRecord
    ) -> None:
        counting = CountingEmbedder(embedder)
        idx = open_index(counting)
        same = "The same paragraph appears in two documents."
        idx.upsert(store_document(store, "a.md", [same]) + store_document(store, "b.md", [same]))
        assert counting.embedded == [same]
        assert idx.count() == 2


@given(
    st.dictionaries(
        st.text(max_size=5),
        st.one_of(st.text(max_size=5), st.integers(), st.booleans(), st.lists(st.text(max_size=3)), st.none()),
    ),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5)),
)
def test_metadata_matching_never_raises(metadata: dict[str, Any], wanted: dict[str, str]) -> None:
    import json

    def as_texts(value: Any) -> set[str]:
        items = value if isinstance(value, list) else [value]
        return {(str(v).lower() if isinstance(v, bool) else str(v)) for v in items if v is not None}

    expected = all(w in as_texts(metadata.get(k)) for k, w in wanted.items())
    assert metadata_matches(json.dumps(metadata), json.dumps(wanted)) is expected


@given(st.text())
def test_snippets_are_bounded(text: str) -> None:
    snippet = make_snippet(text)
    assert len(snippet) <= 301
    assert "\n" not in snippet
