"""kb-sqlitevec against the real default embedder and a real store of record."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core import (
    Chunk,
    Embedder,
    KbError,
    SearchIndex,
    SearchQuery,
    load_config,
    load_registry,
    make_snippet,
    similarity_to_score,
)
from kb_core.testing import StoreOfRecord, real_embedder, store_document
from kb_sqlitevec.index import SqliteVecIndex, metadata_matches

REINDEX = "kb reindex --store sqlitevec"

CORPUS: dict[str, list[str]] = {
    "biology/photosynthesis.md": [
        "Photosynthesis converts light energy into chemical energy stored in glucose inside plant leaves.",
        "Chlorophyll in the chloroplasts absorbs mostly red and blue light.",
    ],
    "computing/python.md": [
        "Python is a programming language popular for data analysis and scripting.",
        "A Python list comprehension builds a new list from an iterable in one expression.",
    ],
    "notes/cooking.md": [
        "To bake sourdough bread, feed the starter, mix flour and water, and let the dough rise overnight.",
    ],
    "notes/finance.md": [
        "The central bank raised interest rates to slow inflation in the economy.",
    ],
}
ON_TOPIC = {
    "how do plants turn sunlight into energy": "biology/photosynthesis.md",
    "writing a list comprehension in python": "computing/python.md",
    "how long should bread dough rise": "notes/cooking.md",
    "why do central banks raise interest rates": "notes/finance.md",
}
OFF_TOPIC = ["who won the football world cup in 1998", "how do I repair a flat bicycle tyre", "symptoms of the flu"]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The real default embedder (all-MiniLM-L6-v2 int8), loaded once for the module."""
    return real_embedder()


class Counting:
    """Delegates to the real embedder and records every text it is asked to embed."""

    def __init__(self, inner: Embedder, *, with_array: bool = True) -> None:
        self.inner = inner
        self.embedded: list[str] = []
        self.calls: list[int] = []
        if with_array:
            self.embed_array = self._embed_array

    def __getattr__(self, name: str) -> Any:
        if name == "embed_array":  # only when constructed without it
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _embed_array(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        self.calls.append(len(texts))
        return self.inner.embed_array(texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        self.calls.append(len(texts))
        return self.inner.embed_documents(texts)


class Renamed(Counting):
    """The same vectors under another model id: what a model change looks like to the index."""

    @property
    def model_ref(self) -> Any:
        return attrs.evolve(self.inner.model_ref, id="another-model")


class Truncated(Counting):
    """The first 128 dimensions, renormalised: a change of dimension."""

    dimensions = 128

    def _embed_array(self, texts: Sequence[str]) -> np.ndarray:
        vectors = super()._embed_array(texts)[:, :128]
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_query(self, text: str) -> list[float]:
        vector = np.asarray(self.inner.embed_query(text))[:128]
        return (vector / np.linalg.norm(vector)).tolist()


@pytest.fixture
def store(tmp_path: Path) -> StoreOfRecord:
    return StoreOfRecord(tmp_path)


@pytest.fixture
def corpus(store: StoreOfRecord) -> list[Chunk]:
    chunks: list[Chunk] = []
    for path, texts in CORPUS.items():
        lang = "en" if not path.startswith("notes/") else "en-gb"
        chunks += store_document(store, path, texts, {"lang": lang, "tags": ["kb", path.split("/")[0]]})
    return chunks


def open_index(store: StoreOfRecord, embedder: Any, batch_size: int = 32) -> SqliteVecIndex:
    return SqliteVecIndex(store.kb_dir / "indexes" / "sqlitevec", embedder, store, batch_size=batch_size)


@pytest.fixture
def index(store: StoreOfRecord, embedder: Embedder, corpus: list[Chunk]) -> SqliteVecIndex:
    idx = open_index(store, embedder)
    idx.upsert(corpus)
    idx.commit()
    yield idx
    idx.close()


def test_satisfies_store_and_retriever(index: SqliteVecIndex) -> None:
    assert isinstance(index, SearchIndex)
    assert index.mode == "vector" and index.name == "sqlitevec"


def test_registered_as_vector_index_and_made_through_the_factory(tmp_path: Path, embedder: Embedder) -> None:
    from kb_core import IndexContext

    registration = load_registry().get("indexes", "sqlitevec")
    assert registration.info["mode"] == "vector"
    config = load_config(kb_dir=tmp_path, environ={})
    ctx = IndexContext(
        config, name="sqlitevec", directory=tmp_path / "idx", store=StoreOfRecord(tmp_path), embedder=embedder
    )
    made = registration.factory(ctx)
    assert (tmp_path / "idx" / "vectors.sqlite3").is_file()
    assert made.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    made.close()
    with pytest.raises(KbError, match="needs an embedder"):
        registration.factory(attrs.evolve(ctx, embedder=None))


def test_search_ranks_the_relevant_document_first(index: SqliteVecIndex, corpus: list[Chunk]) -> None:
    texts = {c.chunk_id: c.text for c in corpus}
    for question, path in ON_TOPIC.items():
        hits = index.search(SearchQuery(question, k=3))
        assert hits[0].doc_path == path, question
        assert [h.rank for h in hits] == [1, 2, 3]
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        top = hits[0]
        assert top.retriever == "sqlitevec"
        assert str(top.citation).startswith(path + "#L")
        assert top.heading_path[0] == "Top"
        assert top.snippet == make_snippet(texts[top.chunk_id])
        floor = index.embedder.similarity_floors["latin"]  # an English question: the Latin-script floor
        assert top.score == pytest.approx(similarity_to_score(top.raw_score, floor))
    # a fusion fan-out asks for no snippets: the same hits, without reading the chunks' texts
    query = SearchQuery(next(iter(ON_TOPIC)), k=3)
    without = index.search(attrs.evolve(query, snippets=False))
    assert [(h.chunk_id, h.score) for h in without] == [(h.chunk_id, h.score) for h in index.search(query)]
    assert all(h.snippet == "" for h in without)


def test_scores_separate_on_topic_from_off_topic_questions(index: SqliteVecIndex) -> None:
    on = [index.search(SearchQuery(q, k=1))[0].score for q in ON_TOPIC]
    off = [index.search(SearchQuery(q, k=1))[0].score for q in OFF_TOPIC]
    assert all(0.0 <= s <= 1.0 for s in on + off)
    assert min(on) > 0.3 > max(off), (on, off)


def test_floor_from_embedder_shifts_scores(store: StoreOfRecord, embedder: Embedder, corpus: list[Chunk]) -> None:
    floored = Counting(embedder)
    floored.similarity_floors = {"latin": 0.5, "han": 0.9}  # the floor of the query's script applies
    idx = open_index(store, floored)
    idx.upsert(corpus)
    hit = idx.search(SearchQuery("how do plants turn sunlight into energy", k=1))[0]
    assert hit.score == pytest.approx(similarity_to_score(hit.raw_score, 0.5))
    assert hit.score < hit.raw_score
    idx.close()


def test_queries_in_scripts_the_embedder_does_not_model_score_zero(
    store: StoreOfRecord, embedder: Embedder, corpus: list[Chunk]
) -> None:
    """all-MiniLM-L6-v2 models English only: a Chinese query's similarities are no evidence."""
    assert embedder.scripts == {"latin"}
    idx = open_index(store, embedder)
    idx.upsert(corpus)
    chinese = idx.search(SearchQuery("植物如何利用阳光制造能量", k=5))
    assert chinese and all(h.score == 0.0 for h in chinese)
    assert [h.raw_score for h in chinese] == sorted((h.raw_score for h in chinese), reverse=True)
    mixed = idx.search(SearchQuery("python 列表推导式怎么写", k=1))[0]  # 1 of 5 words in a modeled script
    assert mixed.score == 0.0
    mostly = idx.search(SearchQuery("python list comprehension 怎么写", k=1))[0]  # 3 of 5
    assert mostly.score == pytest.approx(similarity_to_score(mostly.raw_score, embedder.similarity_floors["latin"]))
    assert mostly.score > 0
    english = idx.search(SearchQuery("how do plants turn sunlight into energy", k=1))[0]
    assert english.score == pytest.approx(similarity_to_score(english.raw_score, embedder.similarity_floors["latin"]))
    idx.close()


def test_replayed_upserts_and_deletes_change_nothing(index: SqliteVecIndex, corpus: list[Chunk]) -> None:
    before = [(h.chunk_id, h.raw_score) for h in index.search(SearchQuery("python programming", k=10))]
    index.upsert(corpus)
    index.upsert(corpus[:3])
    index.delete(["never/indexed.md"])
    index.commit()
    assert index.count() == len(corpus)
    after = [(h.chunk_id, h.raw_score) for h in index.search(SearchQuery("python programming", k=10))]
    assert [c for c, _ in after] == [c for c, _ in before]
    assert [s for _, s in after] == pytest.approx([s for _, s in before], abs=1e-6)
    assert len({c for c, _ in after}) == len(after) == len(corpus)
    assert index.check() == []


def test_delete_removes_every_chunk_of_a_document(index: SqliteVecIndex, corpus: list[Chunk]) -> None:
    index.delete(["computing/python.md"])
    index.delete(["computing/python.md"])
    index.commit()
    assert index.count() == len(corpus) - 2
    hits = index.search(SearchQuery("python list comprehension", k=10))
    assert "computing/python.md" not in {h.doc_path for h in hits}
    assert index.search(SearchQuery("anything", k=5, path_glob="computing/*")) == []
    assert index.check() == []


def test_nothing_is_durable_before_commit(store: StoreOfRecord, embedder: Embedder, corpus: list[Chunk]) -> None:
    idx = open_index(store, embedder)
    idx.upsert(corpus)
    idx.commit()
    idx.delete(["notes/cooking.md"])
    idx.upsert([attrs.evolve(corpus[0], chunk_id="extra", doc_path="extra.md")])
    idx.close()
    reopened = open_index(store, embedder)
    assert reopened.count() == len(corpus)
    assert reopened.search(SearchQuery("sourdough bread", k=1))[0].doc_path == "notes/cooking.md"
    reopened.close()


def test_reopening_from_disk_gives_the_same_results(
    store: StoreOfRecord, embedder: Embedder, corpus: list[Chunk]
) -> None:
    first = open_index(store, embedder)
    first.upsert(corpus)
    first.commit()
    expected = [(h.chunk_id, round(h.score, 5)) for h in first.search(SearchQuery("interest rates", k=4))]
    first.close()
    second = open_index(store, embedder)
    assert second.count() == len(corpus)
    assert [(h.chunk_id, round(h.score, 5)) for h in second.search(SearchQuery("interest rates", k=4))] == expected
    assert second.fingerprint == first.fingerprint == "sqlitevec-1;model=all-MiniLM-L6-v2-int8;dims=384"
    second.close()


def test_unchanged_text_is_never_embedded_twice(store: StoreOfRecord, embedder: Embedder, corpus: list[Chunk]) -> None:
    counting = Counting(embedder)
    idx = open_index(store, counting)
    idx.upsert(corpus)
    idx.commit()
    assert sorted(counting.embedded) == sorted(c.text for c in corpus)
    counting.embedded.clear()

    idx.upsert(corpus)  # a replayed batch
    idx.clear()  # a rebuild
    idx.upsert(corpus)
    idx.commit()
    assert counting.embedded == []
    assert idx.count() == len(corpus)

    twin = store_document(
        store, "copies/photosynthesis.md", CORPUS["biology/photosynthesis.md"] + ["A brand new line."]
    )
    idx.upsert(twin)
    idx.commit()
    assert counting.embedded == ["A brand new line."]
    hits = idx.search(SearchQuery("photosynthesis light energy", k=2))
    assert {h.doc_path for h in hits} == {"biology/photosynthesis.md", "copies/photosynthesis.md"}
    assert hits[0].raw_score == pytest.approx(hits[1].raw_score, abs=1e-6)
    idx.close()


def test_one_upsert_embeds_a_repeated_text_once(store: StoreOfRecord, embedder: Embedder) -> None:
    counting = Counting(embedder)
    idx = open_index(store, counting)
    same = "The same paragraph appears in two documents."
    idx.upsert(store_document(store, "a.md", [same]) + store_document(store, "b.md", [same]))
    assert counting.embedded == [same]
    assert idx.count() == 2
    idx.close()


def test_embedders_without_embed_array_are_called_in_batches(
    store: StoreOfRecord, embedder: Embedder, corpus: list[Chunk]
) -> None:
    plain = Counting(embedder, with_array=False)
    idx = open_index(store, plain, batch_size=2)
    idx.upsert(corpus)
    assert plain.calls == [2, 2, 2]
    assert idx.search(SearchQuery("sourdough bread", k=1))[0].doc_path == "notes/cooking.md"
    idx.close()


@pytest.mark.parametrize("changed", [Renamed, Truncated])
def test_a_changed_model_is_detected_until_reindexed(
    index: SqliteVecIndex, store: StoreOfRecord, embedder: Embedder, corpus: list[Chunk], changed: type[Counting]
) -> None:
    index.close()
    other = changed(embedder)
    idx = open_index(store, other)
    assert idx.fingerprint != "sqlitevec-1;model=all-MiniLM-L6-v2-int8;dims=384"
    problems = idx.check()
    assert len(problems) == 1 and problems[0].fix == REINDEX and "all-MiniLM-L6-v2-int8" in problems[0].message
    with pytest.raises(KbError, match=REINDEX):
        idx.search(SearchQuery("python", k=3))
    with pytest.raises(KbError, match=REINDEX):
        idx.upsert(corpus[:1])

    idx.clear()
    idx.upsert(corpus)
    idx.commit()
    assert idx.check() == []
    assert idx.search(SearchQuery("sourdough bread dough", k=1))[0].doc_path == "notes/cooking.md"
    assert sorted(other.embedded) == sorted(c.text for c in corpus)  # another model: cache misses
    tables = idx.conn.execute("SELECT count(*) FROM sqlite_master WHERE sql LIKE '%USING vec0%'").fetchone()[0]
    assert tables == 1
    idx.close()


def test_path_glob_filters_before_ranking(index: SqliteVecIndex) -> None:
    hits = index.search(SearchQuery("python list comprehension", k=3, path_glob="notes/*"))
    assert sorted(h.doc_path for h in hits) == ["notes/cooking.md", "notes/finance.md"]
    assert [h.rank for h in hits] == [1, 2]
    only = index.search(SearchQuery("python", k=5, path_glob="*/photo*.md"))
    assert {h.doc_path for h in only} == {"biology/photosynthesis.md"} and len(only) == 2
    assert index.search(SearchQuery("python", k=5, path_glob="nothing/*")) == []


def test_metadata_filters(index: SqliteVecIndex) -> None:
    gb = index.search(SearchQuery("photosynthesis", k=10, metadata={"lang": "en-gb"}))
    assert {h.doc_path for h in gb} == {"notes/cooking.md", "notes/finance.md"}
    tagged = index.search(SearchQuery("photosynthesis", k=10, metadata={"tags": "computing"}))
    assert {h.doc_path for h in tagged} == {"computing/python.md"}
    both = index.search(SearchQuery("bread", k=10, metadata={"lang": "en", "tags": "biology"}, path_glob="bio*"))
    assert {h.doc_path for h in both} == {"biology/photosynthesis.md"}
    assert index.search(SearchQuery("bread", k=10, metadata={"lang": "fr"})) == []


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


def test_k_bounds_and_empty_index(store: StoreOfRecord, embedder: Embedder, corpus: list[Chunk]) -> None:
    idx = open_index(store, embedder)
    assert idx.search(SearchQuery("anything", k=5)) == []
    assert idx.check() == []
    idx.upsert(corpus)
    assert idx.search(SearchQuery("anything", k=0)) == []
    assert len(idx.search(SearchQuery("anything", k=100))) == len(corpus)
    idx.close()
