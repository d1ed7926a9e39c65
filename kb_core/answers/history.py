"""Stored questions and answers: see them and delete them (``kb answers list`` / ``purge``).

Every ``kb ask`` is kept in the ``answers`` table. Deleting uses SQLite's ``secure_delete`` and
truncates the write-ahead log, so the text of a purged question does not linger in the file.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from kb_core.errors import NotFoundError
from kb_core.storage.store import StoreOfRecord


@attrs.frozen
class StoredAnswer:
    """One stored question and the outcome of its answer."""

    answer_id: str
    created_at: str
    question: str
    grounded: bool
    refusal_reason: str | None


def list_answers(store: StoreOfRecord, limit: int | None = None) -> tuple[list[StoredAnswer], int]:
    """The newest stored answers first (at most ``limit``), and how many there are in all."""
    total = int(store.conn.execute("SELECT count(*) FROM answers").fetchone()[0])
    rows = store.conn.execute(
        "SELECT answer_id, created_at, question, grounded, refusal_reason FROM answers"
        " ORDER BY created_at DESC, rowid DESC LIMIT ?", (-1 if limit is None else limit,))
    return [StoredAnswer(r[0], r[1], r[2], bool(r[3]), r[4]) for r in rows], total


def purge_answers(store: StoreOfRecord, ids: Sequence[str] = (), *, before: str | None = None,
                  everything: bool = False) -> list[str]:
    """Delete stored answers (by id, older than an ISO date, or all); returns the ids deleted."""
    if everything:
        chosen = [r[0] for r in store.conn.execute("SELECT answer_id FROM answers")]
    elif before is not None:
        chosen = [r[0] for r in store.conn.execute("SELECT answer_id FROM answers WHERE created_at < ?", (before,))]
    else:
        chosen = []
        for answer_id in ids:
            row = store.conn.execute("SELECT answer_id FROM answers WHERE answer_id = ?", (answer_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no stored answer with id {answer_id!r}", hint="see 'kb answers list'")
            chosen.append(row[0])
    store.conn.execute("PRAGMA secure_delete = ON")
    with store.transaction():
        store.conn.executemany("DELETE FROM answers WHERE answer_id = ?", [(a,) for a in chosen])
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return chosen
