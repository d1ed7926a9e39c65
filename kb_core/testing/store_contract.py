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

import datetime
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core.config import Config
from kb_core.errors import KbError, NotFoundError
from kb_core.extend.record_store import (
    CitationRecord,
    LedgerAnswer,
    RecordStore,
    StoreContext,
    ThreadSummary,
    TurnRecord,
)
from kb_core.testing.fakes import document_chunks, store_document
from kb_core.types import Document

#: Paths that sort differently by code point than by most locales' collation (capitals, accents, digits).
ORDERED_PATHS = ("B.md", "a/b.md", "a.md", "b.md", "e.md", "z/1.md", "\u00e9.md", "\u4e2d.md")
#: Path text the store must keep exactly (no NUL: no store of record need accept it; kb never makes one).
PATH_CHARACTERS = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")


def ledger_answer(answer_id: str, created_at: str = "2026-01-01T00:00:00Z", *, grounded: bool = True) -> LedgerAnswer:
    """A stored answer for the ledger's tests."""
    return LedgerAnswer(
        answer_id,
        created_at,
        f"question of {answer_id}?",
        f"answer of {answer_id}",
        grounded,
        None if grounded else "no_evidence",
        citations_json='[{"marker": 1}]',
        model_json='{"id": "m"}',
        embedding_json=None,
        prompt_template_version="v1",
        retrieval_json='{"k": 5}',
        usage_json="{}",
        packed_chunks_json="[]",
    )


def citation(answer_id: str, marker: int, path: str, text: str | None = "cited words") -> CitationRecord:
    """A citation of ``answer_id`` for the ledger's tests."""
    return CitationRecord(answer_id, marker, f"{path}#{marker}", path, marker, marker + 1, cited_text=text)


def turn(answer_id: str, asked: str, created_at: str) -> TurnRecord:
    """A turn for the thread tests (its position is the store's to give)."""
    return TurnRecord(0, answer_id, asked, asked + " (standalone)", "as_asked", 1.5, 3, created_at, '{"a": 1}')


class RecordStoreContract:
    """What every store of record must do. Provide a ``store_factory`` fixture (and ``store_options``)."""

    @pytest.fixture
    def store_factory(self) -> Callable[[StoreContext], RecordStore]:
        """The factory your plugin registers with ``register_stores``."""
        raise NotImplementedError("define a 'store_factory' fixture in your RecordStoreContract subclass")

    @pytest.fixture
    def store_options(self) -> dict[str, object]:
        """Your ``[backends.<name>]`` table, naming a store that is new and empty for each test."""
        return {}

    @pytest.fixture
    def open_store(
        self, store_factory: Callable[[StoreContext], RecordStore], store_options: dict[str, object], tmp_path: Path
    ) -> Iterator[Callable[..., RecordStore]]:
        """``open_store(create=True)``: another handle on the test's store (closed after the test)."""
        opened: list[RecordStore] = []

        def open_one(create: bool = True) -> RecordStore:
            context = StoreContext(Config(), dict(store_options), directory=tmp_path / "kb", create=create)
            opened.append(store_factory(context))
            return opened[-1]

        yield open_one
        for handle in opened:
            handle.close()

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

    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
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

    # -- the answer ledger --------------------------------------------------------------------------

    def test_answers_round_trip_newest_first(self, store: RecordStore) -> None:
        with store.transaction():
            store.insert_answer(ledger_answer("ans_a", "2026-01-01T00:00:00Z"))
            store.insert_answer(ledger_answer("ans_c", "2026-01-02T00:00:00Z", grounded=False))
            store.insert_answer(ledger_answer("ans_b", "2026-01-02T00:00:00Z"))  # same time, stored last
            store.insert_eval_run("run_1", "2026-01-03T00:00:00Z", "answers", "{}", '{"grounded": 1}', None)
        entries, total = store.answer_entries(None)
        assert total == 3 and [e.answer_id for e in entries] == ["ans_b", "ans_c", "ans_a"]
        assert all(e.answer == "" for e in entries) and (entries[1].grounded, entries[1].refusal_reason) == (
            False,
            "no_evidence",
        )
        limited, total = store.answer_entries(1)
        assert [e.answer_id for e in limited] == ["ans_b"] and total == 3
        entry = store.answer_entry("ans_a")
        assert entry is not None and (entry.question, entry.answer, entry.grounded) == (
            "question of ans_a?",
            "answer of ans_a",
            True,
        )
        assert store.answer_entry("ans_none") is None
        assert store.answer_citations_json("ans_a") == '[{"marker": 1}]' and store.answer_citations_json("x") is None

    def test_citations_round_trip_replace_and_update(self, store: RecordStore) -> None:
        with store.transaction():
            store.insert_answer(ledger_answer("ans_a"))
            store.insert_answer(ledger_answer("ans_b"))
            store.insert_citations([citation("ans_b", 2, "y.md"), citation("ans_b", 1, "x.md")])
            store.insert_citations([citation("ans_a", 1, "y.md", text=None), citation("ans_a", 1, "z.md")])
        rows = store.citations_of(["ans_b", "ans_a", "ans_none"])
        assert [(r.answer_id, r.marker, r.doc_path) for r in rows] == [
            ("ans_a", 1, "z.md"),  # the same marker again replaced the row
            ("ans_b", 1, "x.md"),
            ("ans_b", 2, "y.md"),
        ]
        assert len({r.row_id for r in rows}) == 3 and all(r.row_id for r in rows)
        assert [r.answer_id for r in store.citations_citing(["x.md"])] == ["ans_b", "ans_b"]  # all of its citations
        assert len(store.citations_citing(None)) == 3 and store.citations_citing(["none.md"]) == []
        changed = attrs.evolve(rows[2], start_line=9, end_line=10, state="stale", reason="changed", now_text="now")
        with store.transaction():
            store.update_citations([changed])
        assert store.citations_of(["ans_b"])[1] == changed and store.citations_of(["ans_a"]) == rows[:1]

    def test_only_answers_with_a_broken_citation_are_stale(self, store: RecordStore) -> None:
        with store.transaction():
            for answer_id in ("ans_a", "ans_b", "ans_c"):
                store.insert_answer(ledger_answer(answer_id))
            store.insert_citations(
                [
                    attrs.evolve(citation("ans_a", 1, "x.md"), state="stale"),
                    attrs.evolve(citation("ans_b", 1, "x.md"), state="valid"),
                    attrs.evolve(citation("ans_c", 1, "x.md"), state="unverifiable"),
                ]
            )
        entries, total = store.answer_entries(None, stale_only=True)
        assert sorted(e.answer_id for e in entries) == ["ans_a", "ans_c"] and total == 2

    def test_purging_answers(self, store: RecordStore) -> None:
        with store.transaction():
            for answer_id, day in (("ans_a", "01"), ("ans_b", "02"), ("ans_c", "03")):
                store.insert_answer(ledger_answer(answer_id, f"2026-01-{day}T12:00:00Z"))
                store.insert_citations([citation(answer_id, 1, "x.md")])
        with pytest.raises(NotFoundError):
            store.purge_answers(["ans_a", "ans_none"])
        assert store.answer_entries(None)[1] == 3  # an unknown id deletes nothing
        assert store.purge_answers(["ans_a"]) == ["ans_a"] and store.citations_of(["ans_a"]) == []
        assert store.purge_answers(before=datetime.date(2026, 1, 3)) == ["ans_b"]
        assert store.purge_answers(everything=True) == ["ans_c"] and store.answer_entries(None) == ([], 0)
        assert store.citations_citing(None) == []

    # -- threads ------------------------------------------------------------------------------------

    def add_turn(self, store: RecordStore, thread_id: str, answer_id: str, at: str) -> int:
        with store.transaction():
            if store.thread_record(thread_id) is None:
                store.create_thread(thread_id, at)
            store.insert_answer(ledger_answer(answer_id, at))
            return store.append_turn(thread_id, turn(answer_id, f"asked {answer_id}", at))

    def test_turns_are_numbered_and_kept_in_order(self, store: RecordStore) -> None:
        assert self.add_turn(store, "thr_1", "ans_1", "2026-01-01T00:00:00Z") == 1
        assert self.add_turn(store, "thr_1", "ans_2", "2026-01-02T00:00:00Z") == 2
        record = store.thread_record("thr_1")
        assert record is not None and (record.created_at, record.updated_at) == (
            "2026-01-01T00:00:00Z",
            "2026-01-02T00:00:00Z",
        )
        turns = store.turns_of("thr_1")
        assert [(t.position, t.answer_id, t.asked) for t in turns] == [
            (1, "ans_1", "asked ans_1"),
            (2, "ans_2", "asked ans_2"),
        ]
        assert turns[0] == attrs.evolve(turn("ans_1", "asked ans_1", "2026-01-01T00:00:00Z"), position=1)
        assert store.thread_record("thr_none") is None and store.turns_of("thr_none") == []

    def test_threads_are_listed_by_their_newest_turn(self, store: RecordStore) -> None:
        self.add_turn(store, "thr_old", "ans_1", "2026-01-01T00:00:00Z")
        self.add_turn(store, "thr_new", "ans_2", "2026-01-02T00:00:00Z")
        with store.transaction():
            store.create_thread("thr_empty", "2026-01-03T00:00:00Z")
        self.add_turn(store, "thr_old", "ans_3", "2026-01-01T00:00:00Z")  # continued last (whatever its clock says)
        assert store.thread_summaries(None) == [
            ThreadSummary("thr_old", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 2, "asked ans_1"),
            ThreadSummary("thr_new", "2026-01-02T00:00:00Z", "2026-01-02T00:00:00Z", 1, "asked ans_2"),
            ThreadSummary("thr_empty", "2026-01-03T00:00:00Z", "2026-01-03T00:00:00Z", 0, ""),
        ]
        assert [s.thread_id for s in store.thread_summaries(1)] == ["thr_old"]

    def test_deleting_a_thread_deletes_its_turns_and_answers(self, store: RecordStore) -> None:
        self.add_turn(store, "thr_1", "ans_1", "2026-01-01T00:00:00Z")
        self.add_turn(store, "thr_1", "ans_2", "2026-01-02T00:00:00Z")
        self.add_turn(store, "thr_2", "ans_3", "2026-01-03T00:00:00Z")
        assert store.delete_thread("thr_1") == 2 and store.delete_thread("thr_1") is None
        assert store.thread_record("thr_1") is None and store.turns_of("thr_1") == []
        assert [e.answer_id for e in store.answer_entries(None)[0]] == ["ans_3"]

    def test_purging_a_turns_answer_deletes_the_turn_and_an_emptied_thread(self, store: RecordStore) -> None:
        self.add_turn(store, "thr_1", "ans_1", "2026-01-01T00:00:00Z")
        self.add_turn(store, "thr_2", "ans_2", "2026-01-02T00:00:00Z")
        self.add_turn(store, "thr_2", "ans_3", "2026-01-03T00:00:00Z")
        store.purge_answers(["ans_1", "ans_2"])
        assert store.thread_record("thr_1") is None
        assert [t.answer_id for t in store.turns_of("thr_2")] == ["ans_3"]


__all__ = ["ORDERED_PATHS", "RecordStoreContract", "ledger_answer"]
