"""Stored questions and answers: keep them, see them and delete them (``kb answers list`` / ``purge``).

Every ``kb ask`` is kept in the store of record's answer ledger (:func:`save_answer`). The rows are the
store's (:class:`~kb_core.extend.record_store.RecordStore`); what an answer's state is, is decided here.
The SQLite store deletes securely (:mod:`kb_core.storage.sqlite_ledger`).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence

import attrs

from kb_core.errors import NotFoundError
from kb_core.extend.access_store import AccessStore
from kb_core.extend.record_store import LedgerAnswer, RecordStore
from kb_core.storage.cited import AnswerState, CitationNow, answer_state, citations_now, record_citations
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


def save_answer(store: RecordStore, answer: Answer, owner: str | None = None) -> None:
    """Keep ``answer`` (refusals included) in the answer ledger, with what its citations rest on and, given a
    person (``owner``) and a store that keeps people, who owns it (all in the caller's transaction)."""
    store.insert_answer(
        LedgerAnswer(
            answer_id=answer.answer_id,
            created_at=answer.created_at,
            question=answer.question,
            answer=answer.answer,
            grounded=answer.grounded,
            refusal_reason=answer.refusal_reason,
            citations_json=_json(list(answer.citations)),
            model_json=_json(answer.model) if answer.model else "{}",
            embedding_json=_json(answer.embedding) if answer.embedding else None,
            prompt_template_version=answer.prompt_template_version,
            retrieval_json=_json(answer.retrieval),
            usage_json=_json(answer.usage),
            packed_chunks_json=_json(list(answer.packed)) if answer.packed else None,
        )
    )
    record_citations(store, answer.answer_id, answer.citations)
    if owner is not None and isinstance(store, AccessStore):
        store.set_owner("answer", answer.answer_id, owner)


def save_eval_run(
    store: RecordStore,
    run_id: str,
    created_at: str,
    kind: str,
    config: object,
    metrics: object,
    report_path: str | None,
) -> None:
    """Keep one evaluation run (``kind``: retrieval or answers)."""
    store.insert_eval_run(run_id, created_at, kind, _json(config), _json(metrics), report_path)


def list_answers(
    store: RecordStore, limit: int | None = None, *, stale_only: bool = False, owner: str | None = None
) -> tuple[list[StoredAnswer], int]:
    """The newest stored answers first (at most ``limit``; only those that no longer hold with
    ``stale_only``; only a person's own with ``owner``), and how many there are in all (of that kind)."""
    entries, total = store.answer_entries(limit, stale_only=stale_only, owner=owner)
    now = citations_now(store, [e.answer_id for e in entries])
    return [
        StoredAnswer(
            e.answer_id,
            e.created_at,
            e.question,
            e.grounded,
            e.refusal_reason,
            answer_state(c.state for c in now[e.answer_id]) if e.grounded else None,
        )
        for e in entries
    ], total


def stored_answer(store: RecordStore, answer_id: str) -> StoredAnswerNow:
    """The stored answer ``answer_id`` with its citations as they stand now (NotFoundError when there is none)."""
    entry = store.answer_entry(answer_id)
    if entry is None:
        raise NotFoundError(f"no stored answer with id {answer_id[:40]!r}", hint="see 'kb answers list'")
    citations = tuple(citations_now(store, [answer_id]).get(answer_id, []))
    state = answer_state(c.state for c in citations) if entry.grounded else None
    return StoredAnswerNow(
        entry.answer_id,
        entry.created_at,
        entry.question,
        entry.answer,
        entry.grounded,
        entry.refusal_reason,
        state,
        citations,
    )


def purge_answers(
    store: RecordStore, ids: Sequence[str] = (), *, before: datetime.date | None = None, everything: bool = False
) -> list[str]:
    """Delete stored answers (by id, stored before the day ``before``, or all); returns the ids deleted.

    The answers are chosen and deleted in one write transaction, with their turns and the threads
    left without one: an answer saved by another process meanwhile is either deleted or not yet there.
    An unknown id is a NotFoundError, and nothing is deleted.
    """
    return store.purge_answers(ids, before=before, everything=everything)
