"""The store of record on PostgreSQL: documents, chunks and the change feed (the ledger: :mod:`kb_postgres.ledger`).

One connection per handle (kb opens a handle per :class:`~kb_core.app.KnowledgeBase`; kb-serve keeps a
pool of them), in autocommit mode: a read outside ``transaction()`` sees what was committed, and
``transaction()`` is one PostgreSQL transaction, committed or rolled back whole.

The change feed is read as "entries after the last seq I applied", so entries must become visible in
seq order. Every transaction that appends to the outbox first takes one transaction-scoped advisory
lock per knowledge base (``pg_advisory_xact_lock``), before touching any document row: feed writers
run one at a time and commit in seq order (docs/postgres-probe.md shows the entry a reader misses
without it). Writes that do not touch the feed (answers, threads) do not wait for it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from kb_core import Chunk, Document, KbError
from kb_core.plugin import Problem
from kb_core.plugin.stores import CHUNK_COLUMNS, DOCUMENT_COLUMNS, chunk_values, document_values
from kb_postgres.access import PostgresAccess
from kb_postgres.connection import Connection, connect, storage_error
from kb_postgres.feed import PostgresFeed
from kb_postgres.ledger import PostgresLedger
from kb_postgres.queue import PostgresQueue
from kb_postgres.schema import MIGRATIONS, VERSION_TABLE
from kb_postgres.settings import PostgresSettings

#: The advisory locks' first key ("kb" in ASCII, then which lock); the second is a hash of the schema's name.
FEED_LOCK, MIGRATION_LOCK = 0x6B620001, 0x6B620002

_DOCUMENT = "path, content_hash, size, title, parser, source_root, metadata_json, chunk_count, ingested_at"
_CHUNK_ORDER = "ORDER BY doc_path, ordinal, chunk_id"


def _document(row: Sequence[Any]) -> Document:
    return Document(row[0], row[1], row[2], row[3], row[4], row[5], json.loads(row[6]), row[7], row[8])


def _chunk(row: Sequence[Any]) -> Chunk:
    return Chunk(row[0], row[1], row[2], row[3], row[4], row[5], row[6], tuple(json.loads(row[7])), row[8])


def _like_prefix(prefix: str) -> str:
    r"""A LIKE pattern matching the texts that start with ``prefix`` (``\`` escapes).

    >>> _like_prefix("a_b%")
    'a\\_b\\%%'
    """
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _make_private_folder(path: Path) -> None:
    """Make ``path`` and its missing parents, each a folder only its owner can enter (0700)."""
    try:
        for folder in reversed([path, *path.parents]):
            if not folder.is_dir():
                folder.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise KbError(
            f"cannot make the knowledge base folder {path}: {exc.strerror}", hint="choose another --kb"
        ) from None


class PostgresStore(PostgresFeed, PostgresQueue, PostgresLedger, PostgresAccess):
    """The store of record of one knowledge base in a PostgreSQL schema (``[store] backend = "postgres"``): a
    :class:`~kb_core.plugin.stores.SharedRecordStore`, which any number of kb processes write at once, each
    with its own knowledge base folder following the feed (:mod:`kb_postgres.feed`) and ingest workers sharing
    a queue (:mod:`kb_postgres.queue`)."""

    def __init__(self, settings: PostgresSettings, kb_dir: Path, *, create: bool = True) -> None:
        self.kb_dir = Path(kb_dir)
        self.settings = settings
        self._writing = threading.RLock()  # one transaction at a time on this connection, whatever the thread
        self._depth = 0
        self._conn: Connection = connect(settings)
        try:
            self._migrate(create)
        except BaseException:
            self._conn.close()
            raise
        if create:
            _make_private_folder(self.kb_dir)  # kb keeps its indexes, caches and locks there, as with SQLite

    # -- the connection -------------------------------------------------------------------------

    def _live(self) -> Connection:
        """The connection, made again when the server dropped it (never inside a transaction)."""
        if self._conn.broken and self._depth == 0:
            self._conn = connect(self.settings)
        return self._conn

    def _exec(self, query: Any, params: Sequence[Any] | None = None) -> psycopg.Cursor[tuple[Any, ...]]:
        """Run one statement; its rows are fetched already. A failure is a one-line KbError."""
        try:
            return self._live().execute(query, params)
        except psycopg.Error as exc:
            raise storage_error(self.settings, exc) from None

    def _many(self, query: Any, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each of ``rows`` (pipelined). A failure is a one-line KbError."""
        if not rows:
            return
        try:
            with self._live().cursor() as cursor:
                cursor.executemany(query, rows)
        except psycopg.Error as exc:
            raise storage_error(self.settings, exc) from None

    @contextmanager
    def transaction(self) -> Iterator[PostgresStore]:
        """One transaction, committed on success and rolled back on error (a failed commit too: a one-line
        KbError, a lost server or another writer's lock among them); what was stored before is intact."""
        with self._writing:
            conn = self._live()
            self._depth += 1
            try:
                with conn.transaction():
                    yield self
            except psycopg.Error as exc:
                raise storage_error(self.settings, exc) from None
            finally:
                self._depth -= 1

    def _lock_feed(self) -> None:
        """Take the knowledge base's feed lock until the transaction ends (see the module's docstring)."""
        self._exec("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (FEED_LOCK, self.settings.schema))

    def _append_outbox(self, paths: Sequence[str]) -> None:
        """Append ``paths`` to the outbox in order, numbered from the head's next seq; caller holds the feed lock."""
        if paths:
            self._exec(
                "WITH head AS (UPDATE outbox_head SET seq = seq + %(n)s RETURNING seq - %(n)s AS base)"
                " INSERT INTO index_outbox (seq, doc_path) SELECT head.base + t.ord, t.path"
                " FROM head, unnest(%(paths)s::text[]) WITH ORDINALITY AS t(path, ord)",
                {"n": len(paths), "paths": list(paths)},  # type: ignore[arg-type]
            )
            self._notify()

    def close(self) -> None:
        """Close the connections (and stop renewing the leases of files this handle took)."""
        self._close_queue()
        self._close_listener()
        self._conn.close()

    # -- schema ---------------------------------------------------------------------------------

    @property
    def schema_version(self) -> int:
        """The number of migrations applied."""
        return self._version() or 0

    def _version(self) -> int | None:
        """The migrations applied; None when the schema holds no knowledge base."""
        found = self._exec(
            "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'kb_migrations'", (self.settings.schema,)
        ).fetchone()
        if found is None:
            return None
        return int(self._exec("SELECT coalesce(max(version), 0) FROM kb_migrations").fetchone()[0])  # type: ignore[index]

    def _version_problem(self, version: int) -> Problem | None:
        """The schema against this kb-postgres's migrations: None when they match."""
        where, wanted = self.settings.where, len(MIGRATIONS)
        if version > wanted:
            return Problem(
                "store",
                f"the knowledge base in PostgreSQL at {where} was written by a newer kb-postgres (schema {version})",
                "upgrade kb-postgres",
            )
        if version < wanted:
            return Problem(
                "store",
                f"the knowledge base in PostgreSQL at {where} has {version} of this kb-postgres's {wanted} migrations",
                "run 'kb init' to apply them (every kb using this schema then needs this kb-postgres or newer)",
            )
        return None

    def _check_version(self, version: int, *, behind: bool = False) -> None:
        problem = self._version_problem(version)
        if problem is not None and (behind or version > len(MIGRATIONS)):
            raise KbError(problem.message, hint=problem.fix)

    def check(self) -> list[Problem]:
        """The schema's migrations (another kb may have moved them since this handle opened), and a server that
        cannot be written. kb-postgres uses no extension (no pgvector): none is checked."""
        problems = [self._version_problem(self._version() or 0)]
        if self._exec("SELECT pg_is_in_recovery()").fetchone() == (True,):
            where, fix = self.settings.where, "point [backends.postgres] url at the primary server"
            problems.append(Problem("store", f"the PostgreSQL server at {where} is a read-only standby", fix))
        return [problem for problem in problems if problem is not None]

    def _migrate(self, create: bool) -> None:
        """Make the schema when asked to, and apply the missing migrations in one transaction under an advisory
        lock; the version is read again under it, so two first opens at once never apply one twice. Without
        ``create`` (a command that only reads) a schema behind this kb-postgres is refused, naming ``kb init``."""
        version = self._version()
        if version is None and not create:
            raise KbError(
                f"no knowledge base in PostgreSQL at {self.settings.where}",
                hint="run 'kb init' or 'kb ingest PATH' first, or fix [backends.postgres] url and schema",
            )
        self._check_version(version or 0, behind=not create)  # (a read never changes a schema others share)
        if version == len(MIGRATIONS):
            return
        with self.transaction():
            self._exec("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (MIGRATION_LOCK, self.settings.schema))
            self._exec(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.settings.schema)))
            self._exec(VERSION_TABLE)
            version = self._version() or 0
            self._check_version(version)
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    self._exec(statement)
                self._exec("INSERT INTO kb_migrations (version) VALUES (%s)", (number,))

    # -- documents and chunks ---------------------------------------------------------------------

    def replace_document(self, document: Document, chunks: Sequence[Chunk], mtime_ns: int = 0) -> None:
        """Insert or replace a document with its chunks, and append it to the feed; caller holds a transaction.

        PostgreSQL's text cannot hold NUL (U+0000): a document whose text has one is refused whole, in one line
        naming it (an exit code other than EXIT_STORAGE: the ingest reports that file as failed and goes on). kb's
        ingest hands it none: a text file with a NUL byte is binary, and NULs in a parser's text are removed.
        """
        if "\x00" in document.title or any("\x00" in chunk.text for chunk in chunks):
            raise KbError(
                f"cannot store {document.path!r} in PostgreSQL: its text holds a NUL character (U+0000),"
                " which PostgreSQL text cannot hold",
                hint="remove the NUL characters from the file, or keep this knowledge base in SQLite",
            )
        self._lock_feed()
        self._exec("DELETE FROM chunks WHERE doc_path = %s", (document.path,))
        self._exec(
            f"INSERT INTO documents ({DOCUMENT_COLUMNS}) VALUES ({', '.join(['%s'] * 10)}) ON CONFLICT (path) DO UPDATE"
            " SET content_hash = excluded.content_hash, size = excluded.size, mtime_ns = excluded.mtime_ns,"
            " title = excluded.title, parser = excluded.parser, source_root = excluded.source_root,"
            " metadata_json = excluded.metadata_json, chunk_count = excluded.chunk_count,"
            " ingested_at = excluded.ingested_at",
            document_values(document, len(chunks), mtime_ns),
        )
        self._many(
            f"INSERT INTO chunks ({CHUNK_COLUMNS}) VALUES ({', '.join(['%s'] * 9)})", [chunk_values(c) for c in chunks]
        )
        self._append_outbox([document.path])

    def delete_documents(self, paths: Iterable[str]) -> int:
        """Delete documents (and their chunks), each appended to the feed; caller holds a transaction. The count."""
        wanted = list(dict.fromkeys(paths))
        self._lock_feed()
        rows = self._exec("DELETE FROM documents WHERE path = ANY(%s) RETURNING path", (wanted,))
        removed = {row[0] for row in rows}
        self._append_outbox([path for path in wanted if path in removed])
        return len(removed)

    def get_document(self, path: str) -> Document | None:
        """The document at ``path``, or None."""
        row = self._exec(f"SELECT {_DOCUMENT} FROM documents WHERE path = %s", (path,)).fetchone()
        return _document(row) if row else None

    def list_documents(self, prefix: str = "") -> list[Document]:
        """All documents (those under a path prefix), by path in code point order."""
        rows = self._exec(
            f"SELECT {_DOCUMENT} FROM documents WHERE path LIKE %s ESCAPE '\\' ORDER BY path", (_like_prefix(prefix),)
        )
        return [_document(row) for row in rows]

    def count_documents(self) -> int:
        """How many documents there are."""
        return int(self._exec("SELECT count(*) FROM documents").fetchone()[0])  # type: ignore[index]

    def document_hashes(self, source_root: str | None = None) -> dict[str, str]:
        """path -> content hash, for every document (or those of one source root)."""
        if source_root is None:
            rows = self._exec("SELECT path, content_hash FROM documents")
        else:
            rows = self._exec("SELECT path, content_hash FROM documents WHERE source_root = %s", (source_root,))
        return {row[0]: row[1] for row in rows}

    def document_hashes_of(self, paths: Sequence[str]) -> dict[str, str]:
        """path -> content hash, for those of ``paths`` that are stored."""
        rows = self._exec("SELECT path, content_hash FROM documents WHERE path = ANY(%s)", (list(paths),))
        return {row[0]: row[1] for row in rows}

    def document_owners(self) -> dict[str, str]:
        """path -> the source root (absolute folder) each document came from."""
        return {row[0]: row[1] for row in self._exec("SELECT path, source_root FROM documents")}

    def source_roots(self) -> list[str]:
        """Every folder documents came from, in code point order."""
        return [row[0] for row in self._exec("SELECT DISTINCT source_root FROM documents ORDER BY 1")]

    def repoint_root(self, old: str, new: str) -> int:
        """Make ``new`` the source folder of every document of ``old``; caller holds a transaction."""
        return self._exec("UPDATE documents SET source_root = %s WHERE source_root = %s", (new, old)).rowcount

    def chunks_of(self, doc_paths: Sequence[str]) -> list[Chunk]:
        """The chunks of the given documents, in document then ordinal order."""
        rows = self._exec(
            f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE doc_path = ANY(%s) {_CHUNK_ORDER}", (list(doc_paths),)
        )
        return [_chunk(row) for row in rows]

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """chunk_id -> chunk, for the ids that exist."""
        rows = self._exec(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE chunk_id = ANY(%s)", (list(chunk_ids),))
        return {row[0]: _chunk(row) for row in rows}

    def iter_chunks(self, batch: int = 1000) -> Iterator[list[Chunk]]:
        """Every chunk, in batches, in document then ordinal order (a page at a time: no transaction stays open)."""
        rows = self._exec(f"SELECT {CHUNK_COLUMNS} FROM chunks {_CHUNK_ORDER} LIMIT %s", (batch,)).fetchall()
        while rows:
            yield [_chunk(row) for row in rows]
            last = rows[-1]
            rows = self._exec(
                f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE (doc_path, ordinal, chunk_id) > (%s, %s, %s)"
                f" {_CHUNK_ORDER} LIMIT %s",
                (last[1], last[2], last[0], batch),
            ).fetchall()

    def count_chunks(self) -> int:
        """How many chunks there are."""
        return int(self._exec("SELECT count(*) FROM chunks").fetchone()[0])  # type: ignore[index]

    def sample_chunk_texts(self, count: int, length: int) -> list[str]:
        """The first ``length`` characters of at most ``count`` chunks, the same sample every time (by chunk id)."""
        rows = self._exec("SELECT left(text, %s) FROM chunks ORDER BY chunk_id LIMIT %s", (length, count))
        return [row[0] for row in rows]
