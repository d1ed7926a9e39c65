"""The ledger's records as SQL rows (kb_core.extend.store_rows): what a store writes reads back as the record."""

from __future__ import annotations

import re

import attrs
from hypothesis import given
from hypothesis import strategies as st

from kb_core.extend import store_rows as rows
from kb_core.extend.record_store import CitationRecord, LedgerEntry, ThreadSummary
from kb_core.types import Chunk, Document

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
    assert rows.citation_from_row((record.row_id, *rows.citation_values(record))) == record


@given(CITATIONS)
def test_a_recheck_writes_the_place_and_state_then_the_row(record: CitationRecord) -> None:
    values = rows.citation_check_values(record)
    assert values[-1] == record.row_id and len(values) == 10
    assert values[:-1] == rows.citation_values(record)[4:]  # (start_line to checked_at)


def test_the_columns_are_the_records_fields_in_order() -> None:
    names = [name.strip() for name in rows.CITATION_COLUMNS.split(",")]
    assert names == [field.name for field in CitationRecord.__attrs_attrs__][:-1]  # all but row_id
    record = CitationRecord("a", 2, "c", "d.md", 3, 4, "t", "f", "h", "stale", "r", "n", "x", row_id=9)
    assert rows.citation_values(record) == ("a", 2, "c", "d.md", 3, 4, "t", "f", "h", "stale", "r", "n", "x")
    assert rows.citation_check_values(record) == (3, 4, "t", "f", "h", "stale", "r", "n", "x", 9)


def test_entries_and_summaries_from_rows() -> None:
    assert rows.entry_from_row(("a", "t", "q?", 1, None)) == LedgerEntry("a", "t", "q?", True, None, "")
    assert rows.entry_from_row(("a", "t", "q?", 0, "no_context", "words")) == LedgerEntry(
        "a", "t", "q?", False, "no_context", "words"
    )
    assert rows.entry_from_row(("a", "t", "q?", 0, None)).grounded is False
    assert rows.summary_from_row(("th", "t1", "t2", 3, "first?")) == ThreadSummary("th", "t1", "t2", 3, "first?")
    assert rows.summary_from_row(("th", "t1", "t1", 0, None)) == ThreadSummary("th", "t1", "t1", 0, "")


def test_a_documents_values_fill_its_columns() -> None:
    document = Document("a.md", "h", 12, "Title", "markdown", "/src", {"lang": "ko", "n": 1}, 0, "2024-01-02T03:04:05Z")
    values = rows.document_values(document, 3, 77)
    assert len(values) == len(rows.DOCUMENT_COLUMNS.split(", ")) == 10
    assert dict(zip(rows.DOCUMENT_COLUMNS.split(", "), values)) == {
        "path": "a.md",
        "content_hash": "h",
        "size": 12,
        "mtime_ns": 77,
        "title": "Title",
        "parser": "markdown",
        "source_root": "/src",
        "metadata_json": '{"lang": "ko", "n": 1}',
        "chunk_count": 3,
        "ingested_at": "2024-01-02T03:04:05Z",
    }
    unstamped = rows.document_values(attrs.evolve(document, ingested_at=""), 3, 77)[-1]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", unstamped)  # now, when the document does not say


def test_a_chunks_values_fill_its_columns() -> None:
    chunk = Chunk("c1", "a.md", 2, "text 한국어", "ch", 3, 9, ("Intro", "단계"), 5)
    values = rows.chunk_values(chunk)
    assert len(values) == len(rows.CHUNK_COLUMNS.split(", ")) == 9
    assert values == ("c1", "a.md", 2, "text 한국어", "ch", 3, 9, '["Intro", "단계"]', 5)
