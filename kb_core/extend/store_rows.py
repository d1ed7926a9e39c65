"""How a SQL store of record lays documents, chunks and the ledger's records out in rows, once for every store
that has tables: the core's SQLite store (:mod:`kb_core.storage.store`, :mod:`kb_core.storage.sqlite_ledger`) and
kb-postgres use these, and keep only their SQL.

A row read back becomes the record that was written: the columns are named here in the order the
conversions read and write them, so a store selects ``<its row id>, CITATION_COLUMNS`` and hands the row to
:func:`citation_from_row`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from kb_core.extend.record_store import CitationRecord, LedgerEntry, ThreadSummary
from kb_core.types import Chunk, Document

__all__ = [
    "CHUNK_COLUMNS",
    "CITATION_COLUMNS",
    "DOCUMENT_COLUMNS",
    "chunk_values",
    "citation_check_values",
    "citation_from_row",
    "citation_values",
    "document_values",
    "entry_from_row",
    "summary_from_row",
]

#: The columns of ``documents`` a store writes, in the order of :func:`document_values`.
DOCUMENT_COLUMNS = (
    "path, content_hash, size, mtime_ns, title, parser, source_root, metadata_json, chunk_count, ingested_at"
)
#: The columns of ``chunks``, in the order of :func:`chunk_values`.
CHUNK_COLUMNS = "chunk_id, doc_path, ordinal, text, content_hash, start_line, end_line, heading_path_json, token_count"


def now_iso() -> str:
    """The current UTC time as ISO-8601 text with seconds (as every stored time is written)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def document_values(document: Document, chunk_count: int, mtime_ns: int) -> tuple[Any, ...]:
    """The values of :data:`DOCUMENT_COLUMNS` for ``document`` (its metadata as JSON text; ingested now unless
    it says when)."""
    d = document
    metadata = json.dumps(d.metadata, ensure_ascii=False, default=str)
    ingested_at = d.ingested_at or now_iso()
    return (
        d.path,
        d.content_hash,
        d.size,
        mtime_ns,
        d.title,
        d.parser,
        d.source_root,
        metadata,
        chunk_count,
        ingested_at,
    )


def chunk_values(chunk: Chunk) -> tuple[Any, ...]:
    """The values of :data:`CHUNK_COLUMNS` for ``chunk`` (its heading path as JSON text)."""
    c = chunk
    heading_path = json.dumps(list(c.heading_path), ensure_ascii=False)
    return (
        c.chunk_id,
        c.doc_path,
        c.ordinal,
        c.text,
        c.content_hash,
        c.start_line,
        c.end_line,
        heading_path,
        c.token_count,
    )


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
