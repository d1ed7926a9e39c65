"""kb-qdrant against the real default embedder, a real store of record and real Qdrant (local mode, or a server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from kb_core import (
    Chunk,
    IndexContext,
    KbError,
    SearchIndex,
    SearchQuery,
    load_config,
    load_registry,
    make_snippet,
    similarity_to_score,
)
from kb_core.testing import StoreOfRecord
from kb_qdrant.index import QdrantIndex
from kb_qdrant.settings import QdrantSettings

OpenIndex = Any
REINDEX = "kb reindex --store qdrant"
ON_TOPIC = {
    "how do plants turn sunlight into energy": "biology/photosynthesis.md",
    "writing a list comprehension in python": "computing/python.md",
    "how long should bread dough rise": "notes/cooking.md",
    "why do central banks raise interest rates": "notes/finance.md",
}
OFF_TOPIC = ["who won the football world cup in 1998", "how do I repair a flat bicycle tyre", "symptoms of the flu"]


def paths(hits: list[Any]) -> set[str]:
    return {h.doc_path for h in hits}


def test_satisfies_store_and_retriever(index: QdrantIndex) -> None:
    assert isinstance(index, SearchIndex)
    assert index.mode == "vector" and index.name == "qdrant"


def test_registered_as_vector_index_and_made_through_the_factory(tmp_path: Path, embedder: Any) -> None:
    registration = load_registry().get("indexes", "qdrant")
    assert registration.info["mode"] == "vector"
    config = load_config(kb_dir=tmp_path, environ={})
    store = StoreOfRecord(tmp_path)
    ctx = IndexContext(config, name="qdrant", directory=tmp_path / "idx", store=store, embedder=embedder)
    made = registration.factory(ctx)
    assert made.settings.url is None and made.settings.path == tmp_path / "idx" / "local"
    assert made.fingerprint == f"qdrant-1;model=all-MiniLM-L6-v2-int8;dims=384;at=local:{tmp_path / 'idx' / 'local'}"
    with pytest.raises(KbError, match="open in another kb process"):
        registration.factory(ctx)  # local mode: one client per folder
    made.close()
    with pytest.raises(KbError, match="needs an embedder"):
        registration.factory(attrs.evolve(ctx, embedder=None))
    store.close()


def test_search_ranks_the_relevant_document_first(index: QdrantIndex, corpus: list[Chunk]) -> None:
    chunks = {c.chunk_id: c for c in corpus}
    for question, path in ON_TOPIC.items():
        hits = index.search(SearchQuery(question, k=3))
        assert hits[0].doc_path == path, question
        assert [h.rank for h in hits] == [1, 2, 3]
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        top, chunk = hits[0], chunks[hits[0].chunk_id]
        assert top.retriever == "qdrant"
        assert (top.citation.path, top.citation.start_line, top.citation.end_line) == (
            path,
            chunk.start_line,
            chunk.end_line,
        )
        assert top.heading_path == chunk.heading_path and top.snippet == make_snippet(chunk.text)
        floor = index.embedder.similarity_floors["latin"]
        assert top.score == pytest.approx(similarity_to_score(top.raw_score, floor))


def test_scores_separate_on_topic_from_off_topic_questions(index: QdrantIndex) -> None:
    on = [index.search(SearchQuery(q, k=1))[0].score for q in ON_TOPIC]
    off = [index.search(SearchQuery(q, k=1))[0].score for q in OFF_TOPIC]
    assert all(0.0 <= s <= 1.0 for s in on + off)
    assert min(on) > 0.3 > max(off), (on, off)


def test_queries_in_scripts_the_embedder_does_not_model_score_zero(index: QdrantIndex) -> None:
    chinese = index.search(SearchQuery("植物如何利用阳光制造能量", k=5))
    assert chinese and all(h.score == 0.0 for h in chinese)
    assert [h.raw_score for h in chinese] == sorted((h.raw_score for h in chinese), reverse=True)


def test_path_glob_and_metadata_filters(index: QdrantIndex) -> None:
    q = "energy, bread, python and interest rates"
    assert paths(index.search(SearchQuery(q, k=10, path_glob="notes/*"))) == {"notes/cooking.md", "notes/finance.md"}
    assert paths(index.search(SearchQuery(q, k=10, path_glob="*/python.md"))) == {"computing/python.md"}
    assert index.search(SearchQuery(q, k=10, path_glob="nowhere/*")) == []
    assert paths(index.search(SearchQuery(q, k=10, metadata={"lang": "en"}))) == {
        "biology/photosynthesis.md",
        "computing/python.md",
    }
    assert paths(index.search(SearchQuery(q, k=10, metadata={"tags": "notes"}))) == {
        "notes/cooking.md",
        "notes/finance.md",
    }  # a list value matches any of its items
    assert paths(index.search(SearchQuery(q, k=10, metadata={"draft": "true"}))) == {"notes/finance.md"}
    both = index.search(SearchQuery(q, k=10, path_glob="notes/*", metadata={"draft": "false"}))
    assert paths(both) == {"notes/cooking.md"}
    assert index.search(SearchQuery(q, k=10, metadata={"lang": "fr"})) == []
    filtered = index.search(SearchQuery(q, k=1, path_glob="computing/*"))
    assert len(filtered) == 1 and filtered[0].doc_path == "computing/python.md"  # k nearest among the matches


def test_replayed_upserts_and_deletes_change_nothing(index: QdrantIndex, corpus: list[Chunk]) -> None:
    before = [(h.chunk_id, h.raw_score) for h in index.search(SearchQuery("python programming", k=10))]
    index.upsert(corpus)
    index.upsert(corpus[:3])
    index.delete(["never/indexed.md"])
    index.commit()
    assert index.count() == len(corpus)
    after = [(h.chunk_id, h.raw_score) for h in index.search(SearchQuery("python programming", k=10))]
    assert [c for c, _ in after] == [c for c, _ in before]
    assert [s for _, s in after] == pytest.approx([s for _, s in before], abs=1e-5)
    assert len({c for c, _ in after}) == len(after) == len(corpus)
    assert index.check() == []


def test_delete_removes_every_chunk_of_a_document(index: QdrantIndex, corpus: list[Chunk]) -> None:
    index.delete(["computing/python.md"])
    index.delete(["computing/python.md"])
    index.commit()
    assert index.count() == len(corpus) - 2
    assert "computing/python.md" not in paths(index.search(SearchQuery("python list comprehension", k=10)))


def test_a_batch_applies_in_order_delete_then_upsert(index: QdrantIndex, store: StoreOfRecord, helpers: Any) -> None:
    """What the sync engine does for a changed document: delete its path, upsert its new chunks."""
    new = helpers.store_document(
        store, "computing/python.md", ["Python 3.13 removed the global interpreter lock option."]
    )
    index.delete(["computing/python.md"])
    index.upsert(new)
    index.commit()
    hits = index.search(SearchQuery("python", k=10, path_glob="computing/*"))
    assert [h.chunk_id for h in hits] == [new[0].chunk_id]


def test_nothing_is_durable_before_commit(open_index: OpenIndex, corpus: list[Chunk]) -> None:
    idx = open_index()
    idx.upsert(corpus)
    idx.commit()
    idx.delete(["notes/cooking.md"])
    idx.upsert([attrs.evolve(corpus[0], chunk_id="extra", doc_path="extra.md")])
    idx.clear()
    idx.close()
    reopened = open_index()
    assert reopened.count() == len(corpus)
    assert reopened.search(SearchQuery("sourdough bread", k=1))[0].doc_path == "notes/cooking.md"


def test_reopening_gives_the_same_results(open_index: OpenIndex, corpus: list[Chunk]) -> None:
    first = open_index()
    first.upsert(corpus)
    first.commit()
    expected = [(h.chunk_id, round(h.score, 5)) for h in first.search(SearchQuery("interest rates", k=4))]
    first.close()
    second = open_index()
    assert second.count() == len(corpus)
    assert [(h.chunk_id, round(h.score, 5)) for h in second.search(SearchQuery("interest rates", k=4))] == expected


def test_unchanged_text_is_not_embedded_again(
    open_index: OpenIndex, embedder: Any, store: StoreOfRecord, corpus: list[Chunk], helpers: Any
) -> None:
    counting = helpers.counting(embedder)
    idx = open_index(counting)
    idx.upsert(corpus)
    idx.commit()
    assert sorted(counting.embedded) == sorted(c.text for c in corpus)
    counting.embedded.clear()
    idx.upsert(corpus)  # a replayed batch
    idx.clear()  # a rebuild with the same model
    idx.upsert(corpus)
    idx.commit()
    assert counting.embedded == [] and idx.count() == len(corpus)
    same = "The same paragraph appears in two documents."
    idx.upsert(
        helpers.store_document(store, "a.md", [same]) + helpers.store_document(store, "b.md", [same, "A new line."])
    )
    assert counting.embedded == [same, "A new line."]


def test_embedders_without_embed_array_are_called_in_batches(
    open_index: OpenIndex, embedder: Any, corpus: list[Chunk], helpers: Any
) -> None:
    plain = helpers.counting(embedder, with_array=False)
    idx = open_index(plain, batch_size=4)
    idx.upsert(corpus)
    idx.commit()
    assert len(plain.embedded) == len(corpus)
    assert idx.search(SearchQuery("sourdough bread", k=1))[0].doc_path == "notes/cooking.md"


def test_a_changed_model_is_detected_until_reindexed(
    index: QdrantIndex, open_index: OpenIndex, embedder: Any, corpus: list[Chunk], helpers: Any
) -> None:
    old_collection = index.collection
    index.close()
    idx = open_index(helpers.renamed(embedder))
    assert idx.collection != old_collection and idx.collection.startswith(idx.settings.collection_prefix + "_another")
    assert "model=another/model v2" in idx.fingerprint
    (problem,) = idx.check()
    assert problem.fix == REINDEX and old_collection in problem.message
    with pytest.raises(KbError, match=REINDEX):
        idx.search(SearchQuery("python", k=3))
    with pytest.raises(KbError, match=REINDEX):
        idx.upsert(corpus)
    idx.clear()  # what kb reindex does
    idx.upsert(corpus)
    idx.commit()
    assert idx.check() == [] and idx.count() == len(corpus)
    assert old_collection not in idx._collections()
    assert idx.search(SearchQuery("sourdough bread", k=1))[0].doc_path == "notes/cooking.md"


def test_an_empty_index_searches_to_nothing(open_index: OpenIndex) -> None:
    idx = open_index()
    assert idx.count() == 0 and idx.search(SearchQuery("anything", k=5)) == [] and idx.check() == []
    assert idx.search(SearchQuery("anything", k=0)) == []


def test_an_unreachable_server_is_one_clear_problem(store: StoreOfRecord, embedder: Any) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    idx = QdrantIndex(QdrantSettings(url=f"http://127.0.0.1:{port}", path=None, timeout_s=2), embedder, store)
    (problem,) = idx.check()
    assert problem.message.startswith(f"cannot reach the Qdrant server at http://127.0.0.1:{port} while listing")
    assert "[backends.qdrant] url" in problem.fix and "\n" not in problem.message
    with pytest.raises(KbError, match="cannot reach the Qdrant server"):
        idx.search(SearchQuery("x", k=3))
    idx.close()


def test_corpus_fixture_matches_the_shared_documents(helpers: Any) -> None:
    assert set(helpers.corpus) == set(ON_TOPIC.values())
