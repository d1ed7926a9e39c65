"""The answer ledger and threads part of :class:`~kb_core.testing.store_contract.RecordStoreContract`."""

from __future__ import annotations

import datetime

import attrs
import pytest

from kb_core.errors import NotFoundError
from kb_core.extend.record_store import CitationRecord, LedgerAnswer, RecordStore, ThreadSummary, TurnRecord


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


class LedgerContract:
    """The ledger's and threads' tests of the store contract (they use its ``store`` fixture)."""

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


__all__ = ["LedgerContract", "citation", "ledger_answer", "turn"]
