"""How a SQL store of record lays the ledger's records out in rows, once for every store that has tables: the
core's SQLite store (:mod:`kb_core.storage.sqlite_ledger`) and kb-postgres use these, and keep only their SQL.

A row read back becomes the record that was written: the columns are named here in the order the
conversions read and write them, so a store selects ``<its row id>, CITATION_COLUMNS`` and hands the row to
:func:`citation_from_row`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kb_core.extend.record_store import CitationRecord, LedgerEntry, ThreadSummary

__all__ = [
    "CITATION_COLUMNS",
    "citation_check_values",
    "citation_from_row",
    "citation_values",
    "entry_from_row",
    "summary_from_row",
]

#: The columns of ``answer_citations`` a store writes and reads, in the order of :func:`citation_values`.
CITATION_COLUMNS = (
    "answer_id, marker, chunk_id, doc_path, start_line, end_line, cited_text, fingerprint, doc_hash, state, reason,"
    " now_text, checked_at"
)
_CITATION_NAMES = tuple(CITATION_COLUMNS.split(", "))  # (each the CitationRecord field of that name)
_CHECKED_NAMES = _CITATION_NAMES[_CITATION_NAMES.index("start_line") :]  # (a citation's place and state)


def citation_values(record: CitationRecord) -> tuple[Any, ...]:
    """The values of :data:`CITATION_COLUMNS` for ``record``, in order (what an insert stores)."""
    return tuple(getattr(record, name) for name in _CITATION_NAMES)


def citation_check_values(record: CitationRecord) -> tuple[Any, ...]:
    """What a re-check changes, then the row's id: ``start_line, end_line, cited_text, fingerprint, doc_hash,
    state, reason, now_text, checked_at, row_id`` (what ``update_citations`` writes, and where)."""
    return tuple(getattr(record, name) for name in _CHECKED_NAMES) + (record.row_id,)


def citation_from_row(row: Sequence[Any]) -> CitationRecord:
    """The citation of a row of ``SELECT <the store's row id>, <CITATION_COLUMNS>``."""
    return CitationRecord(**dict(zip(_CITATION_NAMES, row[1:])), row_id=row[0])


def entry_from_row(row: Sequence[Any]) -> LedgerEntry:
    """The answer of a row of ``SELECT answer_id, created_at, question, grounded, refusal_reason[, answer]``."""
    return LedgerEntry(row[0], row[1], row[2], bool(row[3]), row[4], row[5] if len(row) > 5 else "")


def summary_from_row(row: Sequence[Any]) -> ThreadSummary:
    """The thread of a row of ``thread_id, created_at, updated_at, <its turns>, <its first question or NULL>``."""
    return ThreadSummary(row[0], row[1], row[2], int(row[3]), row[4] or "")
