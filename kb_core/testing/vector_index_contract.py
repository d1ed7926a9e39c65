"""The contract of a vector index with a real embedder, as a pytest class.

:class:`~kb_core.testing.IndexContract` checks the mechanics every index shares with a fast fake
embedder. This one checks what a *vector* index adds, with the real default embedder
(all-MiniLM-L6-v2 int8) on a small English corpus: questions find their document by meaning,
scores separate on-topic from off-topic questions, a query in a script the embedder does not model
scores 0, unchanged text is never embedded again, and a change of embedding model (another id,
other dimensions) is reported until ``kb reindex``::

    import pytest
    from kb_core.testing import VectorIndexContract
    from kb_myvec import make_index

    class TestMyVectorIndex(VectorIndexContract):
        name = "myvec"  # the name the index registers

        @pytest.fixture
        def index_factory(self):
            return make_index

The kit makes every index through your factory, as kb does, on a real store of record (fixture
``store``) holding :data:`VECTOR_CORPUS` (fixture ``corpus``, with metadata ``lang``, ``tags`` and
``draft``); ``open_index(embedder=None, batch_size=32)`` opens another one on the same folder, closed
after the test. Override ``backend_options`` to give the factory your ``[backends.<name>]`` table
(a server's URL), and the ``check_*`` methods to add what only your index promises.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from kb_core.config import Config, load_config
from kb_core.errors import KbError
from kb_core.extend.contracts import Embedder, IndexContext, SearchIndex
from kb_core.extend.registry import load_registry
from kb_core.retrieval.vectors import make_snippet, similarity_to_score
from kb_core.storage.store import StoreOfRecord
from kb_core.storage.view import ReadOnlyStore
from kb_core.testing.fakes import MODEL_CHANGES, CountingEmbedder, store_document
from kb_core.testing.real import real_embedder
from kb_core.types import Chunk, Problem, SearchQuery

#: The corpus a vector index is tested on: four documents on unrelated topics.
VECTOR_CORPUS: dict[str, list[str]] = {
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
#: A question for each document of :data:`VECTOR_CORPUS`, and the document that answers it.
ON_TOPIC: dict[str, str] = {
    "how do plants turn sunlight into energy": "biology/photosynthesis.md",
    "writing a list comprehension in python": "computing/python.md",
    "how long should bread dough rise": "notes/cooking.md",
    "why do central banks raise interest rates": "notes/finance.md",
}
#: Questions no document of :data:`VECTOR_CORPUS` answers.
OFF_TOPIC = ["who won the football world cup in 1998", "how do I repair a flat bicycle tyre", "symptoms of the flu"]

OpenIndex = Callable[..., Any]


def paths(hits: list[Any]) -> set[str]:
    """The documents ``hits`` come from."""
    return {h.doc_path for h in hits}


@functools.cache
def _default_embedder() -> Embedder:
    return real_embedder()


class VectorIndexContract:
    """What every vector index must do with a real embedder. Provide ``name`` and an ``index_factory`` fixture."""

    #: The name the index registers (its folder, its retriever name, ``kb reindex --store <name>``).
    name: str = "under-test"
    #: How far a raw score may move when a replayed batch rewrites the same vectors.
    raw_score_tolerance: float = 1e-6

    # -- what the plugin provides ---------------------------------------------------------------

    @pytest.fixture
    def index_factory(self) -> Callable[[IndexContext], Any]:
        """The factory your plugin registers."""
        raise NotImplementedError("define an 'index_factory' fixture in your VectorIndexContract subclass")

    @pytest.fixture
    def backend_options(self) -> dict[str, Any]:
        """The ``[backends.<name>]`` table the factory is given (none by default)."""
        return {}

    def check_made(self, made: Any, context: IndexContext) -> None:
        """More checks of an index your factory just made from ``context`` (before it is closed)."""

    def default_fingerprint(self, index: Any) -> str | None:
        """The fingerprint ``index``, made with the default embedder, must have (None: any)."""
        return None

    def check_model_change(self, index: Any, previous: Any, problem: Problem, change: str) -> None:
        """More checks after ``kb reindex`` adopted a changed model (``change``, a key of :data:`MODEL_CHANGES`).

        ``previous`` is the closed index of the default embedder and ``problem`` what ``check()`` reported
        before the reindex.
        """

    # -- the kit's fixtures ----------------------------------------------------------------------

    @pytest.fixture
    def embedder(self) -> Embedder:
        """The real default embedder (loaded once per process)."""
        return _default_embedder()

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[StoreOfRecord]:
        """A real store of record, empty."""
        store = StoreOfRecord(tmp_path / "kb")
        yield store
        store.close()

    @pytest.fixture
    def corpus(self, store: StoreOfRecord) -> list[Chunk]:
        """:data:`VECTOR_CORPUS` in the store, with metadata ``lang`` (``en-gb`` under notes/), ``tags``, ``draft``."""
        chunks: list[Chunk] = []
        for path, texts in VECTOR_CORPUS.items():
            lang = "en-gb" if path.startswith("notes/") else "en"
            metadata = {"lang": lang, "tags": ["kb", path.split("/")[0]], "draft": path.endswith("finance.md")}
            chunks += store_document(store, path, texts, metadata)
        return chunks

    @pytest.fixture
    def open_index(
        self,
        index_factory: Callable[[IndexContext], Any],
        store: StoreOfRecord,
        embedder: Embedder,
        backend_options: dict[str, Any],
    ) -> Iterator[OpenIndex]:
        """``open_index(embedder=None, batch_size=32)``: an index on the store's folder, made by the factory."""
        opened: list[Any] = []

        def build(with_embedder: Any = None, batch_size: int = 32) -> Any:
            config = Config(backends={self.name: backend_options})
            config.models.embedding.batch_size = batch_size
            context = IndexContext(
                config,
                name=self.name,
                directory=store.kb_dir / "indexes" / self.name,
                store=ReadOnlyStore(store),
                embedder=with_embedder or embedder,
            )
            index = index_factory(context)
            opened.append(index)
            return index

        yield build
        for index in opened:
            index.close()

    @pytest.fixture
    def index(self, open_index: OpenIndex, corpus: list[Chunk]) -> Any:
        """An index of the default embedder holding the corpus, committed."""
        index = open_index()
        index.upsert(corpus)
        index.commit()
        return index

    @property
    def reindex(self) -> str:
        """The fix a model change asks for."""
        return f"kb reindex --store {self.name}"

    # -- the contract ----------------------------------------------------------------------------

    def test_satisfies_store_and_retriever(self, index: Any) -> None:
        assert isinstance(index, SearchIndex)
        assert index.mode == "vector" and index.name == self.name

    def test_registered_as_vector_index_and_made_through_the_factory(
        self, store: StoreOfRecord, embedder: Embedder
    ) -> None:
        registration = load_registry().get("indexes", self.name)
        assert registration.info["mode"] == "vector"
        config = load_config(kb_dir=store.kb_dir, environ={})
        ctx = IndexContext(config, name=self.name, directory=store.kb_dir / "idx", store=store, embedder=embedder)
        made = registration.factory(ctx)
        self.check_made(made, ctx)
        made.close()
        with pytest.raises(KbError, match="needs an embedder"):
            registration.factory(attrs.evolve(ctx, embedder=None))

    def test_search_ranks_the_relevant_document_first(self, index: Any, corpus: list[Chunk]) -> None:
        chunks = {c.chunk_id: c for c in corpus}
        for question, path in ON_TOPIC.items():
            hits = index.search(SearchQuery(question, k=3))
            assert hits[0].doc_path == path, question
            assert [h.rank for h in hits] == [1, 2, 3]
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
            top, chunk = hits[0], chunks[hits[0].chunk_id]
            assert top.retriever == self.name
            assert str(top.citation).startswith(path + "#L")
            assert (top.citation.path, top.citation.start_line, top.citation.end_line) == (
                path,
                chunk.start_line,
                chunk.end_line,
            )
            assert top.heading_path[0] == "Top"
            assert top.heading_path == chunk.heading_path and top.snippet == make_snippet(chunk.text)
            floor = index.embedder.similarity_floors["latin"]  # an English question: the Latin-script floor
            assert top.score == pytest.approx(similarity_to_score(top.raw_score, floor))

    def test_scores_separate_on_topic_from_off_topic_questions(self, index: Any) -> None:
        on = [index.search(SearchQuery(q, k=1))[0].score for q in ON_TOPIC]
        off = [index.search(SearchQuery(q, k=1))[0].score for q in OFF_TOPIC]
        assert all(0.0 <= s <= 1.0 for s in on + off)
        assert min(on) > 0.3 > max(off), (on, off)

    def test_queries_in_scripts_the_embedder_does_not_model_score_zero(self, index: Any, embedder: Embedder) -> None:
        """all-MiniLM-L6-v2 models English only: a Chinese query's similarities are no evidence."""
        assert embedder.scripts == {"latin"}
        chinese = index.search(SearchQuery("植物如何利用阳光制造能量", k=5))
        assert chinese and all(h.score == 0.0 for h in chinese)
        assert [h.raw_score for h in chinese] == sorted((h.raw_score for h in chinese), reverse=True)
        mixed = index.search(SearchQuery("python 列表推导式怎么写", k=1))[0]  # 1 of 5 words in a modeled script
        assert mixed.score == 0.0
        mostly = index.search(SearchQuery("python list comprehension 怎么写", k=1))[0]  # 3 of 5
        floor = embedder.similarity_floors["latin"]
        assert mostly.score == pytest.approx(similarity_to_score(mostly.raw_score, floor))
        assert mostly.score > 0
        english = index.search(SearchQuery("how do plants turn sunlight into energy", k=1))[0]
        assert english.score == pytest.approx(similarity_to_score(english.raw_score, floor))

    def test_path_glob_filters_before_ranking(self, index: Any) -> None:
        hits = index.search(SearchQuery("python list comprehension", k=3, path_glob="notes/*"))
        assert sorted(h.doc_path for h in hits) == ["notes/cooking.md", "notes/finance.md"]
        assert [h.rank for h in hits] == [1, 2]
        only = index.search(SearchQuery("python", k=5, path_glob="*/photo*.md"))
        assert paths(only) == {"biology/photosynthesis.md"} and len(only) == 2
        assert index.search(SearchQuery("python", k=5, path_glob="nothing/*")) == []
        q = "energy, bread, python and interest rates"
        assert paths(index.search(SearchQuery(q, k=10, path_glob="notes/*"))) == {
            "notes/cooking.md",
            "notes/finance.md",
        }
        assert paths(index.search(SearchQuery(q, k=10, path_glob="*/python.md"))) == {"computing/python.md"}
        assert index.search(SearchQuery(q, k=10, path_glob="nowhere/*")) == []
        filtered = index.search(SearchQuery(q, k=1, path_glob="computing/*"))
        assert len(filtered) == 1 and filtered[0].doc_path == "computing/python.md"  # k nearest among the matches

    def test_metadata_filters(self, index: Any) -> None:
        gb = index.search(SearchQuery("photosynthesis", k=10, metadata={"lang": "en-gb"}))
        assert paths(gb) == {"notes/cooking.md", "notes/finance.md"}
        tagged = index.search(SearchQuery("photosynthesis", k=10, metadata={"tags": "computing"}))
        assert paths(tagged) == {"computing/python.md"}
        both = index.search(SearchQuery("bread", k=10, metadata={"lang": "en", "tags": "biology"}, path_glob="bio*"))
        assert paths(both) == {"biology/photosynthesis.md"}
        assert index.search(SearchQuery("bread", k=10, metadata={"lang": "fr"})) == []
        q = "energy, bread, python and interest rates"
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

    def test_replayed_upserts_and_deletes_change_nothing(self, index: Any, corpus: list[Chunk]) -> None:
        before = [(h.chunk_id, h.raw_score) for h in index.search(SearchQuery("python programming", k=10))]
        index.upsert(corpus)
        index.upsert(corpus[:3])
        index.delete(["never/indexed.md"])
        index.commit()
        assert index.count() == len(corpus)
        after = [(h.chunk_id, h.raw_score) for h in index.search(SearchQuery("python programming", k=10))]
        assert [c for c, _ in after] == [c for c, _ in before]
        assert [s for _, s in after] == pytest.approx([s for _, s in before], abs=self.raw_score_tolerance)
        assert len({c for c, _ in after}) == len(after) == len(corpus)
        assert index.check() == []

    def test_delete_removes_every_chunk_of_a_document(self, index: Any, corpus: list[Chunk]) -> None:
        index.delete(["computing/python.md"])
        index.delete(["computing/python.md"])
        index.commit()
        assert index.count() == len(corpus) - 2
        hits = index.search(SearchQuery("python list comprehension", k=10))
        assert "computing/python.md" not in {h.doc_path for h in hits}
        assert index.search(SearchQuery("anything", k=5, path_glob="computing/*")) == []
        assert index.check() == []

    def test_nothing_is_durable_before_commit(self, open_index: OpenIndex, corpus: list[Chunk]) -> None:
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

    def test_reopening_gives_the_same_results(self, open_index: OpenIndex, corpus: list[Chunk]) -> None:
        first = open_index()
        first.upsert(corpus)
        first.commit()
        expected = [(h.chunk_id, round(h.score, 5)) for h in first.search(SearchQuery("interest rates", k=4))]
        first.close()
        second = open_index()
        assert second.count() == len(corpus)
        assert [(h.chunk_id, round(h.score, 5)) for h in second.search(SearchQuery("interest rates", k=4))] == expected
        assert second.fingerprint == first.fingerprint
        assert self.default_fingerprint(first) in (None, first.fingerprint)

    def test_unchanged_text_is_not_embedded_again(
        self, open_index: OpenIndex, embedder: Embedder, store: StoreOfRecord, corpus: list[Chunk]
    ) -> None:
        counting = CountingEmbedder(embedder)
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
        idx.upsert(store_document(store, "a.md", [same]) + store_document(store, "b.md", [same, "A new line."]))
        assert counting.embedded == [same, "A new line."]

    def test_embedders_without_embed_array_are_called_in_batches(
        self, open_index: OpenIndex, embedder: Embedder, corpus: list[Chunk]
    ) -> None:
        plain = CountingEmbedder(embedder, with_array=False)
        idx = open_index(plain, batch_size=2)
        idx.upsert(corpus)
        idx.commit()
        assert plain.calls == [2, 2, 2]
        assert len(plain.embedded) == len(corpus)
        assert idx.search(SearchQuery("sourdough bread", k=1))[0].doc_path == "notes/cooking.md"

    @pytest.mark.parametrize("change", list(MODEL_CHANGES))
    def test_a_changed_model_is_detected_until_reindexed(
        self, index: Any, open_index: OpenIndex, embedder: Embedder, corpus: list[Chunk], change: str
    ) -> None:
        index.close()
        other = MODEL_CHANGES[change](embedder)
        idx = open_index(other)
        assert idx.fingerprint != index.fingerprint
        problems = idx.check()
        assert len(problems) == 1 and problems[0].fix == self.reindex
        assert embedder.model_ref.id in problems[0].message
        with pytest.raises(KbError, match=self.reindex):
            idx.search(SearchQuery("python", k=3))
        with pytest.raises(KbError, match=self.reindex):
            idx.upsert(corpus)
        idx.clear()  # what kb reindex does
        idx.upsert(corpus)
        idx.commit()
        assert idx.check() == [] and idx.count() == len(corpus)
        assert idx.search(SearchQuery("sourdough bread dough", k=1))[0].doc_path == "notes/cooking.md"
        assert sorted(other.embedded) == sorted(c.text for c in corpus)  # another model: nothing reused
        self.check_model_change(idx, index, problems[0], change)

    def test_an_empty_index_searches_to_nothing(self, open_index: OpenIndex, corpus: list[Chunk]) -> None:
        idx = open_index()
        assert idx.count() == 0 and idx.search(SearchQuery("anything", k=5)) == [] and idx.check() == []
        assert idx.search(SearchQuery("anything", k=0)) == []
        idx.upsert(corpus)
        idx.commit()
        assert idx.search(SearchQuery("anything", k=0)) == []
        assert len(idx.search(SearchQuery("anything", k=100))) == len(corpus)
