"""Threads of follow-up questions in the store of record (``kb threads``, ``kb ask --continue``).

A thread is an ordered list of turns. A turn keeps the question as asked, the standalone
question kb searched with and how it was made (:mod:`kb_core.conversations.standalone`), what
that cost, and the whole answer as ``answer.v1`` (its citations, verdict and timings). The
answer is also a stored answer (``kb answers``): purging it deletes its turn.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import attrs

from kb_core.errors import NotFoundError
from kb_core.storage.answers import save_answer
from kb_core.storage.store import StoreOfRecord, sql_limit
from kb_core.types import Answer, to_json


@attrs.frozen
class StoredTurn:
    """One turn of a thread, as kept (``answer`` is the turn's ``answer.v1``)."""

    position: int
    asked: str
    standalone: str
    method: str
    rewrite_ms: float
    rewrite_prompt_tokens: int
    created_at: str
    answer: dict[str, Any]


@attrs.frozen
class ThreadSummary:
    """A thread in the list: its id, times, how many turns and its first question."""

    thread_id: str
    created_at: str
    updated_at: str
    turns: int
    first_question: str


@attrs.frozen
class Thread:
    """A whole thread, turns in order (``thread.v1``)."""

    thread_id: str
    created_at: str
    updated_at: str
    turns: tuple[StoredTurn, ...]


def add_turn(
    store: StoreOfRecord,
    thread_id: str | None,
    asked: str,
    standalone: str,
    method: str,
    answer: Answer,
    rewrite_ms: float = 0.0,
    rewrite_prompt_tokens: int = 0,
) -> tuple[str, int]:
    """Save ``answer`` as a turn of ``thread_id`` (a new thread when None); the thread's id and the turn's position.

    The answer (:func:`~kb_core.storage.answers.save_answer`), its turn and the thread are written
    in one transaction, after the thread is found still there: a thread deleted or purged meanwhile,
    by any process, is a NotFoundError and nothing of the turn is kept.
    """
    with store.transaction():
        if thread_id is None:
            thread_id = f"thr_{secrets.token_hex(6)}"
            store.conn.execute(
                "INSERT INTO threads (thread_id, created_at, updated_at) VALUES (?, ?, ?)",
                (thread_id, answer.created_at, answer.created_at),
            )
        else:
            existing_thread(store, thread_id)
        save_answer(store, answer)
        row = store.conn.execute("SELECT coalesce(max(position), 0) FROM turns WHERE thread_id = ?", (thread_id,))
        position = int(row.fetchone()[0]) + 1
        store.conn.execute(
            "INSERT INTO turns (thread_id, position, answer_id, asked, standalone, method, rewrite_ms,"
            " rewrite_prompt_tokens, answer_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                thread_id,
                position,
                answer.answer_id,
                asked,
                standalone,
                method,
                rewrite_ms,
                rewrite_prompt_tokens,
                json.dumps(to_json(answer), ensure_ascii=False),
                answer.created_at,
            ),
        )
        store.conn.execute("UPDATE threads SET updated_at = ? WHERE thread_id = ?", (answer.created_at, thread_id))
    return thread_id, position


def list_threads(store: StoreOfRecord, limit: int | None = None) -> list[ThreadSummary]:
    """Threads, the most recently continued first (at most ``limit``)."""
    rows = store.conn.execute(
        "SELECT t.thread_id, t.created_at, t.updated_at, count(u.position),"
        " (SELECT asked FROM turns WHERE thread_id = t.thread_id ORDER BY position LIMIT 1)"
        " FROM threads AS t LEFT JOIN turns AS u ON u.thread_id = t.thread_id"
        " GROUP BY t.thread_id ORDER BY coalesce(max(u.rowid), 0) DESC, t.rowid DESC LIMIT ?",  # newest turn first
        (sql_limit(limit),),
    ).fetchall()
    return [ThreadSummary(r[0], r[1], r[2], int(r[3]), r[4] or "") for r in rows]


def last_thread(store: StoreOfRecord) -> str | None:
    """The id of the most recently continued thread, or None when there is none."""
    threads = list_threads(store, limit=1)
    return threads[0].thread_id if threads else None


def existing_thread(store: StoreOfRecord, thread_id: str) -> str:
    """``thread_id`` when that thread exists; a NotFoundError when it does not (nothing else is read)."""
    if store.conn.execute("SELECT 1 FROM threads WHERE thread_id = ?", (thread_id,)).fetchone() is None:
        raise _not_found(thread_id)
    return thread_id


def _not_found(thread_id: str) -> NotFoundError:
    return NotFoundError(f"no thread with id {thread_id[:40]!r}", hint="see 'kb threads list' for the ids")


def stored_thread(store: StoreOfRecord, thread_id: str) -> Thread:
    """The thread ``thread_id`` with its turns in order (NotFoundError when there is none)."""
    row = store.conn.execute(
        "SELECT thread_id, created_at, updated_at FROM threads WHERE thread_id = ?", (thread_id,)
    ).fetchone()
    if row is None:
        raise _not_found(thread_id)
    turns = store.conn.execute(
        "SELECT position, asked, standalone, method, rewrite_ms, rewrite_prompt_tokens, created_at, answer_json"
        " FROM turns WHERE thread_id = ? ORDER BY position",
        (thread_id,),
    ).fetchall()
    return Thread(
        row[0],
        row[1],
        row[2],
        tuple(StoredTurn(t[0], t[1], t[2], t[3], t[4], t[5], t[6], json.loads(t[7])) for t in turns),
    )


def delete_thread(store: StoreOfRecord, thread_id: str) -> int:
    """Delete a thread, its turns and their stored answers (securely, as ``kb answers purge``); turns deleted."""
    store.conn.execute("PRAGMA secure_delete = ON")
    with store.transaction():  # a turn added meanwhile is read and deleted with the others
        existing_thread(store, thread_id)
        answers = [r[0] for r in store.conn.execute("SELECT answer_id FROM turns WHERE thread_id = ?", (thread_id,))]
        store.conn.executemany("DELETE FROM answers WHERE answer_id = ?", [(a,) for a in answers])
        store.conn.execute("DELETE FROM threads WHERE thread_id = ?", (thread_id,))
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return len(answers)
