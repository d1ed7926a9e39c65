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
from kb_core.extend.access_store import AccessStore
from kb_core.extend.record_store import RecordStore, ThreadSummary, TurnRecord
from kb_core.storage.answers import save_answer
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
class Thread:
    """A whole thread, turns in order (``thread.v1``)."""

    thread_id: str
    created_at: str
    updated_at: str
    turns: tuple[StoredTurn, ...]


def add_turn(
    store: RecordStore,
    thread_id: str | None,
    asked: str,
    standalone: str,
    method: str,
    answer: Answer,
    rewrite_ms: float = 0.0,
    rewrite_prompt_tokens: int = 0,
    owner: str | None = None,
) -> tuple[str, int]:
    """Save ``answer`` as a turn of ``thread_id`` (a new thread when None); the thread's id and the turn's position.

    The answer (:func:`~kb_core.storage.answers.save_answer`), its turn and the thread are written
    in one transaction, after the thread is found still there: a thread deleted or purged meanwhile,
    by any process, is a NotFoundError and nothing of the turn is kept. Given a person (``owner``), a new
    thread and the answer are theirs in the same transaction (a store that keeps people).
    """
    with store.transaction():
        if thread_id is None:
            thread_id = f"thr_{secrets.token_hex(6)}"
            store.create_thread(thread_id, answer.created_at)
            if owner is not None and isinstance(store, AccessStore):
                store.set_owner("thread", thread_id, owner)
        else:
            existing_thread(store, thread_id)
        save_answer(store, answer, owner)
        turn = TurnRecord(
            0,
            answer.answer_id,
            asked,
            standalone,
            method,
            rewrite_ms,
            rewrite_prompt_tokens,
            answer.created_at,
            json.dumps(to_json(answer), ensure_ascii=False),
        )
        position = store.append_turn(thread_id, turn)
    return thread_id, position


def list_threads(store: RecordStore, limit: int | None = None) -> list[ThreadSummary]:
    """Threads, the most recently continued first (at most ``limit``)."""
    return store.thread_summaries(limit)


def last_thread(store: RecordStore) -> str | None:
    """The id of the most recently continued thread, or None when there is none."""
    threads = list_threads(store, limit=1)
    return threads[0].thread_id if threads else None


def existing_thread(store: RecordStore, thread_id: str) -> str:
    """``thread_id`` when that thread exists; a NotFoundError when it does not (nothing else is read)."""
    if store.thread_record(thread_id) is None:
        raise _not_found(thread_id)
    return thread_id


def _not_found(thread_id: str) -> NotFoundError:
    return NotFoundError(f"no thread with id {thread_id[:40]!r}", hint="see 'kb threads list' for the ids")


def stored_thread(store: RecordStore, thread_id: str) -> Thread:
    """The thread ``thread_id`` with its turns in order (NotFoundError when there is none)."""
    record = store.thread_record(thread_id)
    if record is None:
        raise _not_found(thread_id)
    turns = store.turns_of(thread_id)
    return Thread(
        record.thread_id,
        record.created_at,
        record.updated_at,
        tuple(
            StoredTurn(
                t.position,
                t.asked,
                t.standalone,
                t.method,
                t.rewrite_ms,
                t.rewrite_prompt_tokens,
                t.created_at,
                json.loads(t.answer_json),
            )
            for t in turns
        ),
    )


def delete_thread(store: RecordStore, thread_id: str) -> int:
    """Delete a thread, its turns and their stored answers (securely, as ``kb answers purge``); turns deleted."""
    deleted = store.delete_thread(thread_id)  # a turn added meanwhile is deleted with the others
    if deleted is None:
        raise _not_found(thread_id)
    return deleted
