"""The ledger's records as SQL rows (kb_core.extend.store_rows): what a store writes reads back as the record."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kb_core.extend.record_store import CitationRecord, LedgerEntry, ThreadSummary
from kb_core.extend.store_rows import (
    CITATION_COLUMNS,
    citation_check_values,
    citation_from_row,
    citation_values,
    entry_from_row,
    summary_from_row,
)

TEXT = st.text(max_size=20)
CITATIONS = st.builds(
    CitationRecord,
    answer_id=TEXT,
    marker=st.integers(1, 99),
    chunk_id=TEXT,
    doc_path=TEXT,
    start_line=st.integers(1, 10**6),
    end_line=st.integers(1, 10**6),
    cited_text=st.none() | TEXT,
    fingerprint=st.none() | TEXT,
    doc_hash=st.none() | TEXT,
    state=st.sampled_from(["unchecked", "fresh", "stale", "unverifiable"]),
    reason=TEXT,
    now_text=st.none() | TEXT,
    checked_at=st.none() | TEXT,
    row_id=st.integers(1, 2**62),
)


@given(CITATIONS)
def test_a_citation_reads_back_as_it_was_written(record: CitationRecord) -> None:
    assert citation_from_row((record.row_id, *citation_values(record))) == record


@given(CITATIONS)
def test_a_recheck_writes_the_place_and_state_then_the_row(record: CitationRecord) -> None:
    values = citation_check_values(record)
    assert values[-1] == record.row_id and len(values) == 10
    assert values[:-1] == citation_values(record)[4:]  # (start_line to checked_at)


def test_the_columns_are_the_records_fields_in_order() -> None:
    names = [name.strip() for name in CITATION_COLUMNS.split(",")]
    assert names == [field.name for field in CitationRecord.__attrs_attrs__][:-1]  # all but row_id
    record = CitationRecord("a", 2, "c", "d.md", 3, 4, "t", "f", "h", "stale", "r", "n", "x", row_id=9)
    assert citation_values(record) == ("a", 2, "c", "d.md", 3, 4, "t", "f", "h", "stale", "r", "n", "x")
    assert citation_check_values(record) == (3, 4, "t", "f", "h", "stale", "r", "n", "x", 9)


def test_entries_and_summaries_from_rows() -> None:
    assert entry_from_row(("a", "t", "q?", 1, None)) == LedgerEntry("a", "t", "q?", True, None, "")
    assert entry_from_row(("a", "t", "q?", 0, "no_context", "words")) == LedgerEntry(
        "a", "t", "q?", False, "no_context", "words"
    )
    assert entry_from_row(("a", "t", "q?", 0, None)).grounded is False
    assert summary_from_row(("th", "t1", "t2", 3, "first?")) == ThreadSummary("th", "t1", "t2", 3, "first?")
    assert summary_from_row(("th", "t1", "t1", 0, None)) == ThreadSummary("th", "t1", "t1", 0, "")
