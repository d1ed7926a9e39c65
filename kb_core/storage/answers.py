"""Stored questions and answers: keep them, see them and delete them (``kb answers list`` / ``purge``).

Every ``kb ask`` is kept in the ``answers`` table (:func:`save_answer`). Deleting uses SQLite's ``secure_delete`` and
truncates the write-ahead log, so the text of a purged question does not linger in the file.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence

import attrs

from kb_core.errors import NotFoundError
from kb_core.storage.cited import AnswerState, CitationNow, answer_state, citations_now, record_citations
from kb_core.storage.store import StoreOfRecord, sql_limit
from kb_core.types import Answer, to_json


@attrs.frozen
class StoredAnswer:
    """One stored question and the outcome of its answer; ``state``: whether its citations still hold."""

    answer_id: str
    created_at: str
    question: str
    grounded: bool
    refusal_reason: str | None
    state: AnswerState | None = None  # None for a refusal (it cites nothing)


@attrs.frozen
class StoredAnswerNow:
    """One stored answer with its citations as they stand now (``stored_answer.v1``)."""

    answer_id: str
    created_at: str
    question: str
    answer: str
    grounded: bool
    refusal_reason: str | None
    state: AnswerState | None
    citations: tuple[CitationNow, ...]


def _json(value: object) -> str:
    return json.dumps(to_json(value), ensure_ascii=False)


def save_answer(store: StoreOfRecord, answer: Answer) -> None:
    """Keep ``answer`` (refusals included) in the ``answers`` table."""
    row = {
        "answer_id": answer.answer_id,
        "created_at": answer.created_at,
        "question": answer.question,
        "answer": answer.answer,
        "grounded": int(answer.grounded),
        "refusal_reason": answer.refusal_reason,
        "citations_json": _json(list(answer.citations)),
        "model_json": _json(answer.model) if answer.model else "{}",
        "embedding_json": _json(answer.embedding) if answer.embedding else None,
        "prompt_template_version": answer.prompt_template_version,
        "retrieval_json": _json(answer.retrieval),
        "usage_json": _json(answer.usage),
        "packed_chunks_json": _json(list(answer.packed)) if answer.packed else None,
    }
    store.conn.execute(
        f"INSERT INTO answers ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values())
    )
    record_citations(store, answer.answer_id, answer.citations)


def save_eval_run(
    store: StoreOfRecord,
    run_id: str,
    created_at: str,
    kind: str,
    config: object,
    metrics: object,
    report_path: str | None,
) -> None:
    """Keep one evaluation run (``kind``: retrieval or answers) in the ``eval_runs`` table."""
    store.conn.execute(
        "INSERT INTO eval_runs (run_id, created_at, kind, config_json, metrics_json, report_path)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (run_id, created_at, kind, _json(config), _json(metrics), report_path),
    )


def list_answers(
    store: StoreOfRecord, limit: int | None = None, *, stale_only: bool = False
) -> tuple[list[StoredAnswer], int]:
    """The newest stored answers first (at most ``limit``; only those that no longer hold with
    ``stale_only``), and how many there are in all (of that kind)."""
    where = (
        " WHERE answer_id IN (SELECT answer_id FROM answer_citations WHERE state IN ('stale', 'unverifiable'))"
        if stale_only
        else ""
    )
    total = int(store.conn.execute(f"SELECT count(*) FROM answers{where}").fetchone()[0])
    rows = store.conn.execute(
        f"SELECT answer_id, created_at, question, grounded, refusal_reason FROM answers{where}"
        " ORDER BY created_at DESC, rowid DESC LIMIT ?",
        (sql_limit(limit),),
    ).fetchall()
    now = citations_now(store, [r[0] for r in rows])
    return [
        StoredAnswer(r[0], r[1], r[2], bool(r[3]), r[4], answer_state(c.state for c in now[r[0]]) if r[3] else None)
        for r in rows
    ], total


def stored_answer(store: StoreOfRecord, answer_id: str) -> StoredAnswerNow:
    """The stored answer ``answer_id`` with its citations as they stand now (NotFoundError when there is none)."""
    row = store.conn.execute(
        "SELECT answer_id, created_at, question, answer, grounded, refusal_reason FROM answers WHERE answer_id = ?",
        (answer_id,),
    ).fetchone()
    if row is None:
        raise NotFoundError(f"no stored answer with id {answer_id[:40]!r}", hint="see 'kb answers list'")
    citations = tuple(citations_now(store, [answer_id]).get(answer_id, []))
    state = answer_state(c.state for c in citations) if row[4] else None
    return StoredAnswerNow(row[0], row[1], row[2], row[3], bool(row[4]), row[5], state, citations)


def purge_answers(
    store: StoreOfRecord, ids: Sequence[str] = (), *, before: datetime.date | None = None, everything: bool = False
) -> list[str]:
    """Delete stored answers (by id, stored before the day ``before``, or all); returns the ids deleted.

    The answers are chosen and deleted in one write transaction, with their turns and the threads
    left without one: an answer saved by another process meanwhile is either deleted or not yet there.
    """
    store.conn.execute("PRAGMA secure_delete = ON")
    with store.transaction():
        if everything:
            chosen = [r[0] for r in store.conn.execute("SELECT answer_id FROM answers")]
        elif before is not None:
            rows = store.conn.execute("SELECT answer_id FROM answers WHERE created_at < ?", (before.isoformat(),))
            chosen = [r[0] for r in rows]
        else:
            chosen = []
            for answer_id in ids:
                row = store.conn.execute("SELECT answer_id FROM answers WHERE answer_id = ?", (answer_id,)).fetchone()
                if row is None:
                    raise NotFoundError(f"no stored answer with id {answer_id!r}", hint="see 'kb answers list'")
                chosen.append(row[0])
        store.conn.executemany("DELETE FROM answers WHERE answer_id = ?", [(a,) for a in chosen])
        store.conn.execute("DELETE FROM threads WHERE thread_id NOT IN (SELECT thread_id FROM turns)")
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return chosen
