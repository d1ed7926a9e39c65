"""The contract of a store of record (a :class:`~kb_core.extend.record_store.RecordStore`), as a pytest class.

::

    import pytest
    from kb_core.testing import RecordStoreContract
    from kb_acme import open_acme

    class TestAcmeStore(RecordStoreContract):
        @pytest.fixture
        def store_factory(self):
            return open_acme  # what the plugin registers with register_stores

        @pytest.fixture
        def store_options(self, acme_database):
            return {"url": acme_database.url}  # a new, empty store for each test

The kit opens every handle through your factory with a :class:`~kb_core.extend.record_store.StoreContext`
whose ``directory`` is a temporary folder and whose ``options`` are ``store_options``: each test's store
starts empty, and every handle a test opens reaches the same store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core.errors import KbError
from kb_core.extend.record_store import (
    RecordStore,
)
from kb_core.testing.fakes import document_chunks, store_document
from kb_core.testing.store_kit import StoreKit
from kb_core.testing.store_ledger_contract import LedgerContract, ledger_answer
from kb_core.types import Document

#: Paths that sort differently by code point than by most locales' collation (capitals, accents, digits).
ORDERED_PATHS = ("B.md", "a/b.md", "a.md", "b.md", "e.md", "z/1.md", "\u00e9.md", "\u4e2d.md")
#: Path text the store must keep exactly (no NUL: no store of record need accept it; kb never makes one).
PATH_CHARACTERS = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")


class RecordStoreContract(LedgerContract, StoreKit):
    """What every store of record must do. Provide a ``store_factory`` fixture (and ``store_options``)."""

    @pytest.fixture
    def store(self, open_store: Callable[..., RecordStore]) -> RecordStore:
        """The store under test, new and empty."""
        return open_store()

    # -- lifecycle ----------------------------------------------------------------------------------

    def test_is_a_record_store_with_its_schema_applied(self, store: RecordStore, tmp_path: Path) -> None:
        assert isinstance(store, RecordStore)
        assert store.schema_version >= 1
        assert store.count_documents() == 0 and store.count_chunks() == 0 and store.last_seq() == 0
        assert store.answer_entries(None) == ([], 0) and store.thread_summaries(None) == []

    def test_a_healthy_store_checks_with_no_problem(self, store: RecordStore) -> None:
        store_document(store, "a.md", ("alpha",))
        assert store.check() == []  # (kb doctor shows each Problem a store reports; a new store has none)

    def test_a_store_that_is_not_there_is_not_made_without_create(self, open_store: Callable[..., RecordStore]) -> None:
        with pytest.raises(KbError):
            open_store(create=False)

    def test_reopened_and_second_handles_see_what_was_stored(self, open_store: Callable[..., RecordStore]) -> None:
        first = open_store()
        chunks = store_document(first, "notes/a.md", ("one", "two"))
        second = open_store(create=False)
        assert second.schema_version == first.schema_version
        assert second.get_document("notes/a.md") is not None
        assert set(second.get_chunks([c.chunk_id for c in chunks])) == {c.chunk_id for c in chunks}
        store_document(second, "notes/b.md", ("three",))
        assert first.count_documents() == 2  # the other handle's commit is seen

    def test_a_failed_transaction_stores_nothing(self, store: RecordStore) -> None:
        def fail_midway() -> None:
            with store.transaction():
                store.replace_document(Document("x.md", "h", 1, "x", "text", "/src"), document_chunks("x.md", ("a",)))
                store.insert_answer(ledger_answer("ans_1"))
                raise RuntimeError("stop")

        with pytest.raises(RuntimeError):
            fail_midway()
        assert store.get_document("x.md") is None and store.count_chunks() == 0
        assert store.answer_entry("ans_1") is None and store.last_seq() == 0

    # -- documents and chunks -----------------------------------------------------------------------

    def test_documents_round_trip_and_list_in_code_point_order(self, store: RecordStore) -> None:
        for path in reversed(ORDERED_PATHS):
            store_document(store, path, (f"text of {path}",), metadata={"lang": "en", "tags": ["x", path]})
        listed = store.list_documents()
        assert [d.path for d in listed] == sorted(ORDERED_PATHS)
        assert [d.path for d in store.list_documents("a")] == ["a.md", "a/b.md"]  # "." before "/"
        document = store.get_document("\u00e9.md")
        assert document is not None
        assert document.metadata == {"lang": "en", "tags": ["x", "\u00e9.md"]}
        assert (document.title, document.parser, document.source_root, document.chunk_count) == (
            "\u00e9.md",
            "text",
            "/src",
            1,
        )
        assert document.ingested_at
        assert store.count_documents() == len(ORDERED_PATHS)

    @settings(
        max_examples=20,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
    )
    @given(
        paths=st.sets(st.text(PATH_CHARACTERS, min_size=1, max_size=12), min_size=1, max_size=6),
        prefix=st.text(PATH_CHARACTERS, max_size=3),
    )
    def test_any_path_is_kept_exactly_and_found_by_its_prefix(
        self, store: RecordStore, paths: set[str], prefix: str
    ) -> None:
        with store.transaction():
            store.delete_documents([d.path for d in store.list_documents()])
        for path in paths:
            store_document(store, path, ("words",))
        assert [d.path for d in store.list_documents()] == sorted(paths)
        assert [d.path for d in store.list_documents(prefix)] == sorted(p for p in paths if p.startswith(prefix))

    def test_replacing_a_document_replaces_its_chunks(self, store: RecordStore) -> None:
        old = store_document(store, "a.md", ("one", "two", "three"))
        new = store_document(store, "a.md", ("uno",))
        assert store.count_chunks() == 1 and store.get_document("a.md").chunk_count == 1  # type: ignore[union-attr]
        assert store.get_chunks([c.chunk_id for c in old if c.chunk_id != new[0].chunk_id]) == {}
        assert store.chunks_of(["a.md"]) == new

    def test_chunks_come_back_whole_and_in_order(self, store: RecordStore) -> None:
        b = store_document(store, "b.md", ("b1", "b2"))
        a = store_document(store, "a.md", ("a1", "a2", "a3"))
        assert store.chunks_of(["b.md", "a.md", "missing.md"]) == a + b
        assert store.get_chunks([a[1].chunk_id, "nope"]) == {a[1].chunk_id: a[1]}
        assert [c for batch in store.iter_chunks(batch=2) for c in batch] == a + b
        assert [len(batch) for batch in store.iter_chunks(batch=2)] == [2, 2, 1]

    def test_many_ids_at_once(self, store: RecordStore) -> None:
        chunks = store_document(store, "big.md", tuple(f"part {i}" for i in range(1200)))
        ids = [c.chunk_id for c in chunks]
        assert len(store.get_chunks(ids + ["missing"])) == 1200
        assert len(store.document_hashes_of([f"p{i}.md" for i in range(1500)] + ["big.md"])) == 1

    def test_a_sample_of_chunk_texts_is_cut_bounded_and_the_same_each_time(self, store: RecordStore) -> None:
        store_document(store, "a.md", tuple(f"{i:03d} and more words" for i in range(30)))
        sample = store.sample_chunk_texts(10, 3)
        assert len(sample) == 10 and all(len(text) == 3 for text in sample)
        assert store.sample_chunk_texts(10, 3) == sample and len(store.sample_chunk_texts(100, 5)) == 30

    def test_hashes_owners_and_source_roots(self, store: RecordStore) -> None:
        with store.transaction():
            for path, root in (("a.md", "/one"), ("b.md", "/two"), ("c.md", "/one")):
                store.replace_document(Document(path, f"hash-{path}", 1, path, "text", root), [])
        assert store.document_hashes() == {"a.md": "hash-a.md", "b.md": "hash-b.md", "c.md": "hash-c.md"}
        assert store.document_hashes("/one") == {"a.md": "hash-a.md", "c.md": "hash-c.md"}
        assert store.document_hashes_of(["b.md", "zz.md"]) == {"b.md": "hash-b.md"}
        assert store.document_owners() == {"a.md": "/one", "b.md": "/two", "c.md": "/one"}
        assert store.source_roots() == ["/one", "/two"]
        with store.transaction():
            assert store.repoint_root("/one", "/three") == 2
        assert store.source_roots() == ["/three", "/two"]

    def test_deleting_documents_deletes_their_chunks(self, store: RecordStore) -> None:
        store_document(store, "a.md", ("one", "two"))
        store_document(store, "b.md", ("three",))
        with store.transaction():
            assert store.delete_documents(["a.md", "missing.md"]) == 1
        assert store.get_document("a.md") is None and store.chunks_of(["a.md"]) == []
        assert store.count_chunks() == 1 and store.count_documents() == 1

    # -- the change feed ----------------------------------------------------------------------------

    def test_every_change_is_in_the_feed_in_order(self, store: RecordStore) -> None:
        store_document(store, "a.md", ("one",))
        store_document(store, "b.md", ("two",))
        with store.transaction():
            store.delete_documents(["a.md", "missing.md"])
        entries = store.pending_paths(0, 100)
        assert [path for _, path in entries] == ["a.md", "b.md", "a.md"]
        seqs = [seq for seq, _ in entries]
        assert seqs == sorted(set(seqs)) and store.last_seq() == seqs[-1]
        assert store.pending_paths(seqs[0], 1) == entries[1:2]

    def test_index_state_and_trimming_never_reuse_a_position(self, store: RecordStore) -> None:
        assert store.index_state("lexical") == (0, "")
        store_document(store, "a.md", ("one",))
        store_document(store, "b.md", ("two",))
        seqs = [seq for seq, _ in store.pending_paths(0, 100)]
        store.set_index_state("lexical", seqs[1], "tok-1")
        store.set_index_state("vector", seqs[0], "emb-1")
        assert store.index_state("lexical") == (seqs[1], "tok-1")
        store.trim_outbox(["lexical", "vector"])  # vector has not applied b.md yet
        assert store.pending_paths(0, 100) == [(seqs[1], "b.md")]
        store.set_index_state("vector", seqs[1], "emb-2")
        store.trim_outbox(["lexical", "vector"])
        assert store.pending_paths(0, 100) == [] and store.last_seq() == seqs[1]
        store_document(store, "c.md", ("three",))
        ((seq, path),) = store.pending_paths(seqs[1], 100)
        assert path == "c.md" and seq > seqs[1]  # an index that applied b.md still sees c.md

    def test_two_writers_at_once_lose_nothing(self, open_store: Callable[..., RecordStore]) -> None:
        handles = [open_store(), open_store()]
        failures: list[BaseException] = []

        def write(number: int) -> None:
            try:
                for i in range(15):
                    store_document(handles[number], f"w{number}/{i:02d}.md", (f"text {number} {i}",))
            except BaseException as exc:  # reported below, with the test's failure
                failures.append(exc)

        workers = [threading.Thread(target=write, args=(n,)) for n in (0, 1)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert failures == []
        entries = handles[0].pending_paths(0, 100)
        assert sorted(path for _, path in entries) == sorted(f"w{n}/{i:02d}.md" for n in (0, 1) for i in range(15))
        assert len({seq for seq, _ in entries}) == 30 and handles[1].count_documents() == 30


__all__ = ["ORDERED_PATHS", "PATH_CHARACTERS", "RecordStoreContract"]
