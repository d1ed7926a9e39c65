"""The ingest queue ``kb ingest`` workers share (``ingest_jobs``): each file of a folder taken by one worker at a time.

A worker takes files with ``FOR UPDATE SKIP LOCKED`` (two workers never take the same row; neither waits for
the other) and holds each for a lease (``job_lease_s``), which a thread of the worker renews on its own
connection while the files are being read and parsed, outside any transaction. The worker then writes a
file's document and deletes its job in one transaction, and only while the job still carries its token: a
worker killed mid-file leaves its jobs, their leases run out, and another worker takes them again (one at a time:
``tries`` counts the takings), while a worker whose lease ran out (it stalled) writes nothing of them. A file set
aside (the core's decision, after too many takers stopped in it) keeps its row with ``failed_hash`` and
``failed_reason`` (migration 4), and no worker takes it until the core releases it. A batch the core failed to
write (a lost server, a busy lock, a bug) it returns at once (``return_files``): untaken, its takings not
counted, its token no longer renewed, so neither this process nor another waits for the leases to run out.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from typing import Any

import psycopg

from kb_core.plugin.stores import IngestJob, SetAsideFile
from kb_postgres.connection import Connection, connect
from kb_postgres.settings import PostgresSettings


class PostgresQueue:
    """The queue methods of :class:`~kb_postgres.store.PostgresStore` (a mixin over its ``_exec``)."""

    settings: PostgresSettings
    _renewer: LeaseRenewer | None = None

    def _exec(self, query: Any, params: Any = None) -> psycopg.Cursor[tuple[Any, ...]]:  # (PostgresStore's)
        raise NotImplementedError

    def queue_files(self, root: str, paths: Sequence[str]) -> None:
        """Queue these files of ``root`` (those queued or taken already stay as they are)."""
        if paths:
            self._exec(
                "INSERT INTO ingest_jobs (root, path) SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING",
                (root, list(paths)),
            )

    def take_files(self, root: str, limit: int) -> list[IngestJob]:
        """Take up to ``limit`` files of ``root`` nobody holds, by path: a file whose taker's lease ran out alone
        (its taker stopped in it, or in a file taken with it), else queued ones. Never one set aside."""
        token = uuid.uuid4().hex
        rows = self._take(root, token, "token IS NOT NULL AND lease_until < now()", 1) or self._take(
            root, token, "token IS NULL", limit
        )
        if not rows:
            return []
        if self._renewer is None:
            self._renewer = LeaseRenewer(self.settings)
        self._renewer.hold(token)
        return [IngestJob(root, path, token, tries - 1) for path, tries in sorted(rows)]

    def _take(self, root: str, token: str, which: str, limit: int) -> list[tuple[str, int]]:
        rows = self._exec(
            "UPDATE ingest_jobs j SET token = %(token)s, tries = j.tries + 1,"
            " lease_until = now() + make_interval(secs => %(lease)s)"
            f" FROM (SELECT root, path FROM ingest_jobs WHERE root = %(root)s AND failed_hash IS NULL AND {which}"
            "       ORDER BY path LIMIT %(limit)s FOR UPDATE SKIP LOCKED) t"
            " WHERE j.root = t.root AND j.path = t.path RETURNING j.path, j.tries",
            {"token": token, "lease": self.settings.job_lease_s, "root": root, "limit": limit},
        ).fetchall()
        return [(str(path), int(tries)) for path, tries in rows]

    def files_in_progress(self, root: str) -> int:
        """How many files of ``root`` are queued or held (a lease that ran out too: it is taken again)."""
        query = "SELECT count(*) FROM ingest_jobs WHERE root = %s AND failed_hash IS NULL"
        return int(self._exec(query, (root,)).fetchone()[0])  # type: ignore[index]

    def set_aside(self, job: IngestJob, content_hash: str, reason: str) -> bool:
        """Set ``job``'s file aside with its hash and why; False when it no longer carries this worker's token."""
        return (
            self._exec(
                "UPDATE ingest_jobs SET failed_hash = %s, failed_reason = %s, token = NULL, lease_until = NULL"
                " WHERE root = %s AND path = %s AND token = %s",
                (content_hash, reason, job.root, job.path, job.token),
            ).rowcount
            == 1
        )

    def files_set_aside(self, root: str | None = None) -> list[SetAsideFile]:
        """The files set aside (of ``root``, or of every folder), by folder then path."""
        rows = self._exec(
            "SELECT root, path, failed_hash, failed_reason FROM ingest_jobs WHERE failed_hash IS NOT NULL"
            " AND (%(root)s::text IS NULL OR root = %(root)s) ORDER BY root, path",
            {"root": root},
        )
        return [SetAsideFile(*row) for row in rows]

    def release_files(self, root: str, paths: Sequence[str] | None = None) -> int:
        """Delete the set-aside rows of these files of ``root`` (all of them when ``paths`` is None)."""
        return self._exec(
            "DELETE FROM ingest_jobs WHERE root = %s AND failed_hash IS NOT NULL"
            " AND (%s::text[] IS NULL OR path = ANY(%s::text[]))",
            (root, None if paths is None else list(paths), None if paths is None else list(paths)),
        ).rowcount

    def finish_file(self, job: IngestJob) -> bool:
        """Delete ``job`` in the caller's transaction; False when it no longer carries this worker's token."""
        found = self._exec(
            "DELETE FROM ingest_jobs WHERE root = %s AND path = %s AND token = %s", (job.root, job.path, job.token)
        )
        return found.rowcount == 1

    def return_files(self, jobs: Sequence[IngestJob]) -> int:
        """Put ``jobs`` back in the queue untaken (token and lease cleared, this taking not counted), those that
        still carry their token; their tokens are no longer renewed. How many were."""
        tokens = sorted({job.token for job in jobs})
        if self._renewer is not None:
            self._renewer.drop(tokens)  # (first: should the server be lost, the leases run out instead)
        if not jobs:
            return 0
        return self._exec(
            "UPDATE ingest_jobs j SET token = NULL, lease_until = NULL, tries = greatest(j.tries - 1, 0)"
            " FROM unnest(%s::text[], %s::text[], %s::text[]) AS t(root, path, token)"
            " WHERE j.root = t.root AND j.path = t.path AND j.token = t.token",
            ([job.root for job in jobs], [job.path for job in jobs], [job.token for job in jobs]),
        ).rowcount

    def _close_queue(self) -> None:
        if self._renewer is not None:
            self._renewer.close()
            self._renewer = None


class LeaseRenewer:
    """A thread renewing the leases of the files this worker holds, on its own connection (a third of a lease
    apart), until none is held; a token whose files are all finished is dropped."""

    def __init__(self, settings: PostgresSettings) -> None:
        self.settings = settings
        self._tokens: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._conn: Connection | None = None
        self._thread = threading.Thread(target=self._run, name="kb-ingest-lease", daemon=True)
        self._thread.start()

    def hold(self, token: str) -> None:
        """Renew ``token``'s leases from now on."""
        with self._lock:
            self._tokens.add(token)

    def drop(self, tokens: Sequence[str]) -> None:
        """Renew ``tokens``' leases no more."""
        with self._lock:
            self._tokens.difference_update(tokens)

    def _run(self) -> None:
        while not self._stop.wait(self.settings.job_lease_s / 3):
            with self._lock:
                tokens = sorted(self._tokens)
            if not tokens:
                continue
            try:
                if self._conn is None or self._conn.broken:
                    self._conn = connect(self.settings)
                rows = self._conn.execute(
                    "UPDATE ingest_jobs SET lease_until = now() + make_interval(secs => %s)"
                    " WHERE token = ANY(%s) RETURNING token",
                    (self.settings.job_lease_s, tokens),
                ).fetchall()
            except Exception:  # (a lost server or a busy row: the next round tries again; the lease may run out)
                continue
            alive = {row[0] for row in rows}
            with self._lock:
                self._tokens -= set(tokens) - alive

    def close(self) -> None:
        """Stop renewing (the leases held run out)."""
        self._stop.set()
        self._thread.join(5)
        if self._conn is not None:
            self._conn.close()
