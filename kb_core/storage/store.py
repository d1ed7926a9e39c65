"""The store of record: one SQLite file (``kb.sqlite3``) that owns identity and content.

Documents are keyed by their path inside the knowledge base; chunks by a deterministic id.
The answer ledger and threads are in :mod:`kb_core.storage.sqlite_ledger`; the contract this
store fills, and another store of record (a plugin's) would, is
:class:`kb_core.extend.record_store.RecordStore`.
Every change to a document appends to ``index_outbox`` in the same transaction, and every
derived index records in ``index_state`` the last outbox entry it applied. That is how an
interrupted run is detected and completed (see :mod:`kb_core.ingest.index_sync`).

SQLite comes from ``pysqlite3`` (extension loading, needed by sqlite-vec), in WAL mode so that
searches keep working while an ingest writes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

try:
    from pysqlite3 import dbapi2 as sqlite3
except ImportError:  # pragma: no cover - the interpreter's own module is a fallback
    import sqlite3

from kb_core.errors import EXIT_STORAGE, KbError
from kb_core.extend.store_rows import CHUNK_COLUMNS, DOCUMENT_COLUMNS, chunk_values, document_values, now_iso
from kb_core.storage.access import SqliteAccess
from kb_core.storage.schema import MIGRATIONS
from kb_core.storage.sqlite_files import (
    connect_read_only,
    create_private_file,
    make_private_dir,
    storage_error_for,
    writable,
)
from kb_core.storage.sqlite_ledger import SqliteLedger
from kb_core.types import Chunk, Document, Problem

DB_NAME = "kb.sqlite3"


def _row_to_chunk(row: sqlite3.Row) -> Chunk:
    return Chunk(
        chunk_id=row["chunk_id"],
        doc_path=row["doc_path"],
        ordinal=row["ordinal"],
        text=row["text"],
        content_hash=row["content_hash"],
        start_line=row["start_line"],
        end_line=row["end_line"],
        heading_path=tuple(json.loads(row["heading_path_json"])),
        token_count=row["token_count"],
    )


def _row_to_document(row: sqlite3.Row) -> Document:
    return Document(
        path=row["path"],
        content_hash=row["content_hash"],
        size=row["size"],
        title=row["title"],
        parser=row["parser"],
        source_root=row["source_root"],
        metadata=json.loads(row["metadata_json"]),
        chunk_count=row["chunk_count"],
        ingested_at=row["ingested_at"],
    )


class StoreOfRecord(SqliteLedger, SqliteAccess):
    """The SQLite store of record of one knowledge base directory: kb's built-in
    :class:`~kb_core.extend.record_store.RecordStore` (``[store] backend = "sqlite"``)."""

    def __init__(self, kb_dir: Path, *, create: bool = True) -> None:
        self.kb_dir = Path(kb_dir)
        self.path = self.kb_dir / DB_NAME
        if not self.path.exists() and not create:
            raise KbError(f"no knowledge base at {self.kb_dir}", hint="run 'kb init' or 'kb ingest PATH' first")
        self.read_only = self.path.exists() and not writable(self.path)
        try:
            if self.read_only:
                self.conn = connect_read_only(self.path)
            else:
                make_private_dir(self.kb_dir)
                create_private_file(self.path)
                self.conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False)
                self.conn.execute("PRAGMA busy_timeout = 30000")
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.Error) as exc:
            raise KbError(f"cannot open the knowledge base at {self.kb_dir}: {exc}") from None
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA foreign_keys=ON")
        self._writing = threading.RLock()  # one write transaction at a time on this connection, whatever the thread
        self._migrate()

    # -- schema ---------------------------------------------------------------------------

    @property
    def schema_version(self) -> int:
        """The number of migrations applied."""
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def _check_version(self, version: int) -> None:
        if version > len(MIGRATIONS):
            raise KbError(
                f"the knowledge base at {self.kb_dir} was written by a newer kb (schema {version})",
                hint="upgrade kb",
            )

    def _migrate(self) -> None:
        """Apply the missing migrations; the version is read again inside the write transaction,
        so concurrent first opens (``kb list`` and ``kb init`` at once) never apply one twice."""
        version = self.schema_version
        self._check_version(version)
        if version == len(MIGRATIONS):
            return
        if self.read_only:
            raise KbError(
                f"the knowledge base at {self.kb_dir} is read-only and needs an upgrade (schema {version})",
                hint="open it once where it is writable",
            )
        with self.transaction():
            version = self.schema_version
            self._check_version(version)
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {number}")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE), committed on success, rolled back on error.

        A full disk or a read-only knowledge base becomes a one-line :class:`KbError`; the
        transaction is rolled back, so what was stored before is intact.
        """
        if self.read_only:
            raise KbError(
                f"the knowledge base at {self.kb_dir} is read-only",
                hint="search and list work; to change it, copy it somewhere writable",
                exit_code=EXIT_STORAGE,
            )
        with self._writing:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self.conn
                except BaseException:
                    if self.conn.in_transaction:
                        self.conn.execute("ROLLBACK")
                    raise
                self.conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                raise storage_error_for(self.kb_dir, exc) from None

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def check(self) -> list[Problem]:
        """SQLite's own check of the file (``PRAGMA quick_check``: pages, records, indexes; linear in its size)."""
        try:
            rows = [str(row[0]) for row in self.conn.execute("PRAGMA quick_check(3)")]
        except sqlite3.DatabaseError as exc:
            rows = [str(exc)]
        if rows == ["ok"]:
            return []
        found = [line for row in rows for line in row.splitlines() if line and not line.startswith("*** ")][:3]
        return [
            Problem(
                "store",
                f"{self.path} is damaged: {'; '.join(found)}",
                f"keep a copy of it, then make a new knowledge base (kb --kb NEW ingest PATH) or restore {DB_NAME}"
                " from a backup",
            )
        ]

    # -- documents and chunks ---------------------------------------------------------------

    def document_hashes(self, source_root: str | None = None) -> dict[str, str]:
        """path -> content hash, for every document (or those of one source root)."""
        if source_root is None:
            rows = self.conn.execute("SELECT path, content_hash FROM documents")
        else:
            rows = self.conn.execute("SELECT path, content_hash FROM documents WHERE source_root = ?", (source_root,))
        return {row[0]: row[1] for row in rows}

    def rows_in(self, query: str, values: Sequence[str]) -> Iterator[sqlite3.Row]:
        """The rows of ``query`` for every one of ``values``: its ``{marks}`` is filled with a ``?`` each,
        500 values at a time (SQLite bounds the parameters of one statement)::

            store.rows_in("SELECT * FROM chunks WHERE chunk_id IN ({marks})", ids)
        """
        for start in range(0, len(values), 500):
            part = list(values[start : start + 500])
            yield from self.conn.execute(query.format(marks=",".join("?" * len(part))), part)

    def document_hashes_of(self, paths: Sequence[str]) -> dict[str, str]:
        """path -> content hash, for those of ``paths`` that are stored."""
        query = "SELECT path, content_hash FROM documents WHERE path IN ({marks})"
        return {row[0]: row[1] for row in self.rows_in(query, paths)}

    def document_owners(self) -> dict[str, str]:
        """path -> the source root (absolute folder) each document came from."""
        return {row[0]: row[1] for row in self.conn.execute("SELECT path, source_root FROM documents")}

    def source_roots(self) -> list[str]:
        """Every folder documents came from."""
        return [row[0] for row in self.conn.execute("SELECT DISTINCT source_root FROM documents ORDER BY 1")]

    def repoint_root(self, old: str, new: str) -> int:
        """Make ``new`` the source folder of every document of ``old``; caller holds a transaction."""
        return int(self.conn.execute("UPDATE documents SET source_root = ? WHERE source_root = ?", (new, old)).rowcount)

    def replace_document(self, document: Document, chunks: Sequence[Chunk], mtime_ns: int = 0) -> None:
        """Insert or replace a document with its chunks; caller holds a transaction."""
        c = self.conn
        c.execute("DELETE FROM chunks WHERE doc_path = ?", (document.path,))
        c.execute(
            f"INSERT OR REPLACE INTO documents ({DOCUMENT_COLUMNS}) VALUES ({', '.join('?' * 10)})",
            document_values(document, len(chunks), mtime_ns),
        )
        c.executemany(
            f"INSERT INTO chunks ({CHUNK_COLUMNS}) VALUES ({', '.join('?' * 9)})", [chunk_values(ch) for ch in chunks]
        )
        c.execute("INSERT INTO index_outbox (doc_path) VALUES (?)", (document.path,))

    def delete_documents(self, paths: Iterable[str]) -> int:
        """Delete documents (and their chunks); caller holds a transaction. Returns the count."""
        removed = 0
        for path in paths:
            cur = self.conn.execute("DELETE FROM documents WHERE path = ?", (path,))
            if cur.rowcount:
                removed += 1
                self.conn.execute("INSERT INTO index_outbox (doc_path) VALUES (?)", (path,))
        return removed

    def get_document(self, path: str) -> Document | None:
        """The document at ``path``, or None."""
        row = self.conn.execute("SELECT * FROM documents WHERE path = ?", (path,)).fetchone()
        return _row_to_document(row) if row else None

    def list_documents(self, prefix: str = "") -> list[Document]:
        """All documents, ordered by path, optionally under a path prefix."""
        rows = self.conn.execute(
            "SELECT * FROM documents WHERE substr(path, 1, ?) = ? ORDER BY path", (len(prefix), prefix)
        )
        return [_row_to_document(r) for r in rows]

    def count_documents(self) -> int:
        """How many documents there are."""
        return int(self.conn.execute("SELECT count(*) FROM documents").fetchone()[0])

    def count_chunks(self) -> int:
        """How many chunks there are."""
        return int(self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def chunks_of(self, doc_paths: Sequence[str]) -> list[Chunk]:
        """The chunks of the given documents, in document then ordinal order."""
        query = "SELECT * FROM chunks WHERE doc_path IN ({marks}) ORDER BY doc_path, ordinal"
        return [_row_to_chunk(row) for row in self.rows_in(query, doc_paths)]

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """chunk_id -> chunk, for the ids that exist."""
        query = "SELECT * FROM chunks WHERE chunk_id IN ({marks})"
        return {row["chunk_id"]: _row_to_chunk(row) for row in self.rows_in(query, chunk_ids)}

    def iter_chunks(self, batch: int = 1000) -> Iterator[list[Chunk]]:
        """Every chunk, in batches, in document then ordinal order."""
        cursor = self.conn.execute("SELECT * FROM chunks ORDER BY doc_path, ordinal")
        while rows := cursor.fetchmany(batch):
            yield [_row_to_chunk(r) for r in rows]

    def sample_chunk_texts(self, count: int, length: int) -> list[str]:
        """The first ``length`` characters of at most ``count`` chunks, the same sample every time (by chunk id)."""
        rows = self.conn.execute("SELECT substr(text, 1, ?) FROM chunks ORDER BY chunk_id LIMIT ?", (length, count))
        return [row[0] for row in rows]

    # -- the index outbox ---------------------------------------------------------------------

    def last_seq(self) -> int:
        """The newest outbox sequence number (0 when nothing was ever written)."""
        row = self.conn.execute("SELECT max(seq) FROM index_outbox").fetchone()
        latest = row[0] or 0
        seq_row = self.conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'index_outbox'").fetchone()
        return max(latest, seq_row[0] if seq_row else 0)

    def pending_paths(self, after_seq: int, limit: int) -> list[tuple[int, str]]:
        """(seq, doc_path) outbox entries newer than ``after_seq``, oldest first."""
        rows = self.conn.execute(
            "SELECT seq, doc_path FROM index_outbox WHERE seq > ? ORDER BY seq LIMIT ?", (after_seq, limit)
        )
        return [(r[0], r[1]) for r in rows]

    def index_state(self, name: str) -> tuple[int, str]:
        """(applied_seq, fingerprint) of an index; (0, "") when it never ran."""
        row = self.conn.execute("SELECT applied_seq, fingerprint FROM index_state WHERE name = ?", (name,)).fetchone()
        return (row[0], row[1]) if row else (0, "")

    def set_index_state(self, name: str, applied_seq: int, fingerprint: str) -> None:
        """Record how far an index got (its own transaction)."""
        self.conn.execute(
            "INSERT INTO index_state (name, applied_seq, fingerprint, updated_at) VALUES (?,?,?,?)"
            " ON CONFLICT(name) DO UPDATE SET applied_seq = excluded.applied_seq,"
            " fingerprint = excluded.fingerprint, updated_at = excluded.updated_at",
            (name, applied_seq, fingerprint, now_iso()),
        )

    def trim_outbox(self, index_names: Sequence[str]) -> None:
        """Forget outbox entries that every named index has applied."""
        if not index_names:
            return
        floor = min(self.index_state(n)[0] for n in index_names)
        self.conn.execute("DELETE FROM index_outbox WHERE seq <= ?", (floor,))
