"""kb-qdrant against the real default embedder, a real store of record and real Qdrant (local mode, or a server).

What every vector index must do is ``kb_core.testing.VectorIndexContract``; the tests here are Qdrant's own.
"""

from __future__ import annotations

from typing import Any

import pytest

from kb_core import KbError, SearchQuery
from kb_core.plugin import IndexContext, Problem
from kb_core.testing import ON_TOPIC, VECTOR_CORPUS, StoreOfRecord, VectorIndexContract, free_port, store_document
from kb_qdrant import make_index
from kb_qdrant.index import QdrantIndex
from kb_qdrant.settings import QdrantSettings


class TestQdrantIndex(VectorIndexContract):
    name = "qdrant"
    raw_score_tolerance = 1e-5

    @pytest.fixture
    def index_factory(self) -> Any:
        return make_index

    @pytest.fixture
    def backend_options(self, qdrant_target: dict[str, object]) -> dict[str, object]:
        return qdrant_target

    def check_made(self, made: QdrantIndex, context: IndexContext) -> None:
        local = context.directory / "local"
        assert made.settings.url is None and made.settings.path == local
        assert made.fingerprint == f"qdrant-1;model=all-MiniLM-L6-v2-int8;dims=384;at=local:{local}"
        with pytest.raises(KbError, match="open in another kb process"):
            make_index(context)  # local mode: one client per folder

    def default_fingerprint(self, index: QdrantIndex) -> str:
        return f"qdrant-1;model=all-MiniLM-L6-v2-int8;dims=384;at={index.settings.where}"

    def check_model_change(self, index: QdrantIndex, previous: QdrantIndex, problem: Problem, change: str) -> None:
        old_collection = previous.collection
        assert index.collection != old_collection and old_collection in problem.message
        if change == "renamed":
            assert index.collection.startswith(index.settings.collection_prefix + "_another")
            assert "model=another/model v2" in index.fingerprint
        assert old_collection not in index._collections()

    def test_a_batch_applies_in_order_delete_then_upsert(self, index: QdrantIndex, store: StoreOfRecord) -> None:
        """What the sync engine does for a changed document: delete its path, upsert its new chunks."""
        new = store_document(store, "computing/python.md", ["Python 3.13 removed the global interpreter lock option."])
        index.delete(["computing/python.md"])
        index.upsert(new)
        index.commit()
        hits = index.search(SearchQuery("python", k=10, path_glob="computing/*"))
        assert [h.chunk_id for h in hits] == [new[0].chunk_id]

    def test_an_unreachable_server_is_one_clear_problem(self, store: StoreOfRecord, embedder: Any) -> None:
        port = free_port()  # nothing listens on it
        idx = QdrantIndex(QdrantSettings(url=f"http://127.0.0.1:{port}", path=None, timeout_s=2), embedder, store)
        (problem,) = idx.check()
        assert problem.message.startswith(f"cannot reach the Qdrant server at http://127.0.0.1:{port} while listing")
        assert "[backends.qdrant] url" in problem.fix and "\n" not in problem.message
        with pytest.raises(KbError, match="cannot reach the Qdrant server"):
            idx.search(SearchQuery("x", k=3))
        idx.close()


def test_corpus_fixture_matches_the_shared_documents() -> None:
    assert set(VECTOR_CORPUS) == set(ON_TOPIC.values())
