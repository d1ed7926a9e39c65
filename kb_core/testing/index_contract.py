"""The contract of an index (an Index that is also a Retriever), as a pytest class.

::

    import pytest
    from kb_core.testing import IndexContract
    from kb_tantivy import make_index

    class TestTantivyContract(IndexContract):
        mode = "lexical"

        @pytest.fixture
        def index_factory(self):
            return make_index

The kit builds a real store of record in a temporary folder, stores a small corpus in it, hands
your factory an :class:`~kb_core.extend.contracts.IndexContext` (with a
:class:`~kb_core.testing.HashingEmbedder` for a vector index, unless you override the
``embedder`` fixture) and applies batches the way kb's sync engine does.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from kb_core.config import Config
from kb_core.extend.contracts import Embedder, Index, IndexContext, Retriever
from kb_core.storage.store import StoreOfRecord
from kb_core.storage.view import ReadOnlyStore
from kb_core.testing.fakes import HashingEmbedder, document_chunks, store_document
from kb_core.types import Problem, SearchQuery

#: The corpus every index is tested on: three documents, each with its own words.
CORPUS: dict[str, tuple[str, ...]] = {
    "birds/herons.md": ("Grey herons nest in the wetlands every spring.", "Heron chicks fledge after fifty days."),
    "coast/lighthouse.md": ("The lighthouse keeper logs every passing ship.", "The lamp is cleaned each morning."),
    "geology/volcano.md": ("Basalt forms when volcano lava cools quickly.",),
}


class IndexContract:
    """What every index must do. Provide ``mode`` and an ``index_factory`` fixture."""

    #: ``"lexical"`` or ``"vector"``: the mode the index registers.
    mode: str = "lexical"
    #: The name the index is registered under (its folder and sync-state name).
    name: str = "under-test"

    @pytest.fixture
    def index_factory(self) -> Callable[[IndexContext], Any]:
        """The factory your plugin registers."""
        raise NotImplementedError("define an 'index_factory' fixture in your IndexContract subclass")

    @pytest.fixture
    def embedder(self) -> Embedder:
        """The embedder a vector index receives (fast and deterministic by default)."""
        return HashingEmbedder()

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[StoreOfRecord]:
        """A real store of record holding :data:`CORPUS`."""
        store = StoreOfRecord(tmp_path / "kb")
        for path, texts in CORPUS.items():
            store_document(store, path, texts)
        yield store
        store.close()

    @pytest.fixture
    def index(
        self, index_factory: Callable[[IndexContext], Any], store: StoreOfRecord, embedder: Embedder, tmp_path: Path
    ) -> Iterator[Any]:
        """The index under test, made by its factory and filled with the corpus."""
        directory = tmp_path / "kb" / "indexes" / self.name
        directory.mkdir(parents=True)
        context = IndexContext(
            Config(),
            name=self.name,
            directory=directory,
            store=ReadOnlyStore(store),
            embedder=embedder if self.mode == "vector" else None,
        )
        index = index_factory(context)
        self.apply(index, list(CORPUS))
        yield index
        index.close()

    @staticmethod
    def apply(index: Any, paths: list[str]) -> None:
        """Apply one batch as kb's sync engine does: delete every path, upsert what exists, commit."""
        index.delete(paths)
        index.upsert([c for p in paths if p in CORPUS for c in document_chunks(p, CORPUS[p])])
        index.commit()

    @staticmethod
    def total() -> int:
        return sum(len(texts) for texts in CORPUS.values())

    def test_is_an_index_and_a_retriever_of_its_mode(self, index: Any) -> None:
        assert isinstance(index, Retriever) and isinstance(index, Index)
        assert index.mode == self.mode
        assert isinstance(index.name, str) and index.name
        assert isinstance(index.fingerprint, str) and index.fingerprint

    def test_hits_are_ranked_scored_in_0_1_and_cite_their_chunk(self, index: Any, store: StoreOfRecord) -> None:
        assert index.count() == self.total()
        hits = index.search(SearchQuery("lighthouse keeper ship", k=3, mode=self.mode))
        assert hits and hits[0].doc_path == "coast/lighthouse.md"
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        stored = store.get_chunks([h.chunk_id for h in hits])
        for hit in hits:
            assert 0.0 <= hit.score <= 1.0
            assert hit.citation == stored[hit.chunk_id].citation

    def test_a_replayed_batch_changes_nothing(self, index: Any) -> None:
        before = [h.chunk_id for h in index.search(SearchQuery("heron wetlands", k=5, mode=self.mode))]
        self.apply(index, list(CORPUS))
        self.apply(index, ["birds/herons.md"])
        assert index.count() == self.total()
        assert [h.chunk_id for h in index.search(SearchQuery("heron wetlands", k=5, mode=self.mode))] == before

    def test_a_deleted_document_is_no_longer_found(self, index: Any) -> None:
        index.delete(["coast/lighthouse.md"])
        index.commit()
        assert index.count() == self.total() - len(CORPUS["coast/lighthouse.md"])
        hits = index.search(SearchQuery("lighthouse keeper ship", k=5, mode=self.mode))
        assert all(h.doc_path != "coast/lighthouse.md" for h in hits)

    def test_clear_empties_it_and_a_rebuild_restores_it(self, index: Any) -> None:
        index.clear()
        index.commit()
        assert index.count() == 0
        assert index.search(SearchQuery("basalt volcano", k=3, mode=self.mode)) == []
        self.apply(index, list(CORPUS))
        assert index.count() == self.total()

    def test_a_path_filter_keeps_only_matching_documents(self, index: Any) -> None:
        hits = index.search(SearchQuery("the every each", k=10, mode=self.mode, path_glob="birds/*"))
        assert all(fnmatch.fnmatchcase(h.doc_path, "birds/*") for h in hits)

    def test_a_restricted_search_returns_k_allowed_hits(self, index: Any, store: StoreOfRecord) -> None:
        """Grants (``path_prefixes``) are applied before ranking: with many better matches outside them, the
        search still returns ``k`` hits, all inside (a filter after the fact would return none)."""
        extra = {f"open/{n:02}.md": ("Harbour lantern glow, harbour lantern glow.",) for n in range(30)}
        extra |= {f"kept/{n}.md": (f"The harbour lantern number {n} hangs in the hall.",) for n in range(3)}
        extra["kept-not/x.md"] = ("Harbour lantern glow, harbour lantern glow.",)
        for path, texts in extra.items():
            store_document(store, path, texts)
        index.upsert([c for path, texts in extra.items() for c in document_chunks(path, texts)])
        index.commit()
        query = SearchQuery("harbour lantern glow", k=3, mode=self.mode, path_prefixes=("kept/",))
        hits = index.search(query)
        assert sorted(h.doc_path for h in hits) == ["kept/0.md", "kept/1.md", "kept/2.md"]
        assert [h.rank for h in hits] == [1, 2, 3]
        two = index.search(attrs.evolve(query, k=10, path_prefixes=("kept/1", "birds/", "nowhere/")))
        assert "kept/1.md" in {h.doc_path for h in two}
        assert all(h.doc_path == "kept/1.md" or h.doc_path.startswith("birds/") for h in two)
        assert index.search(attrs.evolve(query, path_prefixes=())) == []
        assert len(index.search(attrs.evolve(query, path_prefixes=None))) == 3

    def test_a_search_without_snippets_finds_the_same_hits(self, index: Any) -> None:
        """kb fuses indexes over a fan-out asked with ``snippets=False``: only the snippets may differ."""
        query = SearchQuery("lighthouse keeper ship", k=3, mode=self.mode)
        bare = index.search(attrs.evolve(query, snippets=False))
        assert [(h.chunk_id, h.score, h.citation) for h in bare] == [
            (h.chunk_id, h.score, h.citation) for h in index.search(query)
        ]

    def test_check_reports_problems_as_a_list(self, index: Any) -> None:
        problems = index.check()
        assert isinstance(problems, list) and all(isinstance(p, Problem) for p in problems)
