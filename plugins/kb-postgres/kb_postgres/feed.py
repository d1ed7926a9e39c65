"""The change feed as each knowledge base folder follows it: positions per folder (a consumer) and index.

Every kb process on the schema has a knowledge base folder with its own indexes (Tantivy, sqlite-vec), so
each folder applies the feed on its own. A folder is a *consumer*, named by a random id kept in the folder
(``indexes/feed-consumer.json``, with the folder's path and the machine's name: a copy of the folder on
another path or machine makes a new id, so two folders never share a position). ``feed_positions`` holds
one row per consumer and index: how far it applied the feed, and when it was last seen.

Trimming keeps every entry a folder seen within ``folder_lease_h`` still has to apply; a folder away for
longer is not waited for. Its index then reads as never built (``index_state`` gives ``(0, "")``: the feed
was trimmed past it, recorded in ``outbox_head.trimmed``), and the core rebuilds it from the store.

A write to the feed notifies ``kb_feed_<schema>`` (``pg_notify``, delivered at commit): a server following
the feed (:meth:`PostgresFeed.wait_for_change`) hears of it at once instead of polling.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import psycopg
from psycopg import sql

from kb_postgres.connection import Connection, connect, storage_error
from kb_postgres.settings import PostgresSettings

CONSUMER_FILE = Path("indexes") / "feed-consumer.json"


@attrs.frozen
class Consumer:
    """A knowledge base folder as a follower of the feed: its id, path and machine."""

    consumer_id: str
    folder: str
    host: str


def channel(schema: str) -> str:
    """The notification channel of a schema's feed (PostgreSQL names are at most 63 bytes)."""
    return f"kb_feed_{schema}"[:63]


def consumer_of(kb_dir: Path) -> Consumer:
    """The folder's consumer: the id kept in it when it was made here, else a new one kept there (when the folder
    cannot be written, an id derived from the machine and the path, kept nowhere)."""
    folder, host = str(Path(kb_dir).resolve()), socket.gethostname()
    path = Path(kb_dir) / CONSUMER_FILE
    kept = _read(path)
    if kept is not None and kept.folder == folder and kept.host == host:
        return kept
    made = Consumer(uuid.uuid4().hex, folder, host)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        scratch = path.with_name(f".{path.name}.{made.consumer_id}")
        scratch.write_text(json.dumps(attrs.asdict(made)) + "\n", encoding="utf-8")
        if kept is None:
            try:
                os.link(scratch, path)  # the first process to make it wins; the others read its id
            except FileExistsError:
                made = _read(path) or made
        else:
            os.replace(scratch, path)  # a copied folder: this one gets its own id
        scratch.unlink(missing_ok=True)
    except OSError:
        return Consumer(uuid.uuid5(uuid.NAMESPACE_URL, f"kb://{host}{folder}").hex, folder, host)
    return made


def _read(path: Path) -> Consumer | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Consumer(str(data["consumer_id"]), str(data["folder"]), str(data["host"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class PostgresFeed:
    """The feed methods of :class:`~kb_postgres.store.PostgresStore` (a mixin over its ``_exec``)."""

    kb_dir: Path
    settings: PostgresSettings
    _consumer: Consumer | None = None
    _listener: Connection | None = None
    _seen: dict[str, float]

    def _exec(self, query: Any, params: Any = None) -> psycopg.Cursor[tuple[Any, ...]]:  # (PostgresStore's)
        raise NotImplementedError

    def consumer(self) -> Consumer:
        """This handle's folder as a consumer of the feed (read or made on first use)."""
        if self._consumer is None:
            self._consumer = consumer_of(self.kb_dir)
            self._seen = {}
        return self._consumer

    def last_seq(self) -> int:
        """The newest outbox sequence number (0 when nothing was ever written; trimming does not lower it)."""
        return int(self._exec("SELECT seq FROM outbox_head").fetchone()[0])  # type: ignore[index]

    def pending_paths(self, after_seq: int, limit: int) -> list[tuple[int, str]]:
        """(seq, doc_path) outbox entries newer than ``after_seq``, oldest first."""
        rows = self._exec(
            "SELECT seq, doc_path FROM index_outbox WHERE seq > %s ORDER BY seq LIMIT %s", (after_seq, limit)
        )
        return [(row[0], row[1]) for row in rows]

    def index_state(self, name: str) -> tuple[int, str]:
        """(applied_seq, fingerprint) of this folder's index ``name``; (0, "") when it never ran, or when the feed
        was trimmed past it while the folder was away (it must be rebuilt). Reading it renews the folder's lease."""
        me = self.consumer()
        row = self._exec(
            "SELECT p.applied_seq, p.fingerprint, h.trimmed FROM outbox_head h"
            " LEFT JOIN feed_positions p ON p.consumer_id = %s AND p.name = %s",
            (me.consumer_id, name),
        ).fetchone()
        assert row is not None  # (outbox_head has its one row)
        applied, fingerprint, trimmed = row
        if applied is None:
            return (0, "")
        self._renew(name)
        return (0, "") if applied < trimmed else (int(applied), str(fingerprint))

    def _renew(self, name: str) -> None:
        """Mark this folder's index ``name`` as seen now (at most every quarter of the lease, and every minute)."""
        now = time.monotonic()
        if now - self._seen.get(name, -1e9) < min(60.0, self.settings.folder_lease_s / 4):
            return
        self._seen[name] = now
        self._exec(
            "UPDATE feed_positions SET seen_at = now() WHERE consumer_id = %s AND name = %s",
            (self.consumer().consumer_id, name),
        )

    def set_index_state(self, name: str, applied_seq: int, fingerprint: str) -> None:
        """Record how far this folder's index ``name`` got (its own statement, or part of the caller's transaction)."""
        me = self.consumer()
        self._exec(
            "INSERT INTO feed_positions (consumer_id, name, folder, host, applied_seq, fingerprint)"
            " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (consumer_id, name) DO UPDATE"
            " SET applied_seq = excluded.applied_seq, fingerprint = excluded.fingerprint, folder = excluded.folder,"
            " host = excluded.host, updated_at = now(), seen_at = now()",
            (me.consumer_id, name, me.folder, me.host, applied_seq, fingerprint),
        )
        self._seen[name] = time.monotonic()

    def trim_outbox(self, index_names: Sequence[str]) -> None:
        """Forget the entries every index of every folder seen within the lease has applied (this folder's
        ``index_names`` among them); remember how far, so a folder back from longer away rebuilds."""
        if not index_names:
            return
        self._exec(
            "WITH floor AS (SELECT min(applied_seq) AS seq FROM feed_positions"
            "  WHERE seen_at > now() - make_interval(secs => %s)),"
            " gone AS (DELETE FROM index_outbox WHERE seq <= (SELECT seq FROM floor) RETURNING seq)"
            " UPDATE outbox_head SET trimmed = greatest(trimmed, (SELECT seq FROM floor))"
            " WHERE (SELECT seq FROM floor) > trimmed",
            (self.settings.folder_lease_s,),
        )

    def wait_for_change(self, after_seq: int, timeout_s: float) -> int:
        """The newest seq once it passes ``after_seq`` (a notification wakes the wait), or after ``timeout_s``."""
        listener = self._listening()  # (listening before reading the head: no commit falls between the two)
        head = self.last_seq()
        if head > after_seq:
            return head
        try:
            for _ in listener.notifies(timeout=timeout_s, stop_after=1):
                pass
        except psycopg.Error as exc:
            self._close_listener()
            raise storage_error(self.settings, exc) from None
        return self.last_seq()

    def _listening(self) -> Connection:
        if self._listener is None or self._listener.broken:
            self._listener = connect(self.settings)
            try:
                self._listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel(self.settings.schema))))
            except psycopg.Error as exc:
                self._close_listener()
                raise storage_error(self.settings, exc) from None
        assert self._listener is not None
        return self._listener

    def _notify(self) -> None:
        """Tell the followers the feed moved (delivered when the caller's transaction commits)."""
        self._exec("SELECT pg_notify(%s, '')", (channel(self.settings.schema),))

    def _close_listener(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
