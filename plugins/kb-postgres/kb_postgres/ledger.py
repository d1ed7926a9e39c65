"""The PostgreSQL store's answer ledger and threads: the SQL of ``answers``, ``answer_citations``, ``eval_runs``,
``threads`` and ``turns`` (the logic around them is the core's, as for the SQLite store).

Deleting an answer or a thread removes its rows at once for every reader, but PostgreSQL keeps the bytes
of deleted rows in the table's pages until VACUUM reuses them, and in its write-ahead log and backups:
unlike the SQLite store (``secure_delete``), a purge does not promise that the text is gone from disk.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from kb_core import NotFoundError
from kb_core.plugin.stores import (
    CITATION_COLUMNS,
    CitationRecord,
    LedgerAnswer,
    LedgerEntry,
    ThreadRecord,
    ThreadSummary,
    TurnRecord,
    citation_check_values,
    citation_from_row,
    citation_values,
    entry_from_row,
    summary_from_row,
)

_ANSWER = (
    "answer_id, created_at, question, answer, grounded, refusal_reason, citations_json, model_json, embedding_json,"
    " prompt_template_version, retrieval_json, usage_json, packed_chunks_json"
)
_STALE_ONLY = "answer_id IN (SELECT answer_id FROM answer_citations WHERE state IN ('stale', 'unverifiable'))"
_OWNED = "{} IN (SELECT item_id FROM access_owners WHERE kind = '{}' AND person = %s)"
_TURN = "position, answer_id, asked, standalone, method, rewrite_ms, rewrite_prompt_tokens, created_at, answer_json"


def _where(*conditions: str | None) -> str:
    """`` WHERE`` the conditions given (None: left out), joined by ``AND``; "" when none is."""
    chosen = [c for c in conditions if c]
    return f" WHERE {' AND '.join(chosen)}" if chosen else ""


class PostgresLedger:
    """The ledger and thread methods of :class:`~kb_postgres.store.PostgresStore` (a mixin over its ``_exec``)."""

    def _exec(self, query: Any, params: Any = None) -> psycopg.Cursor[tuple[Any, ...]]:  # (PostgresStore's)
        raise NotImplementedError

    def _many(self, query: Any, rows: Sequence[Sequence[Any]]) -> None:  # (PostgresStore's)
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[Any]:  # (PostgresStore's)
        raise NotImplementedError

    # -- answers ----------------------------------------------------------------------------------

    def insert_answer(self, answer: LedgerAnswer) -> None:
        """Keep one answer (refusals included)."""
        a = answer
        self._exec(
            f"INSERT INTO answers ({_ANSWER}) VALUES ({', '.join(['%s'] * 13)})",
            (a.answer_id, a.created_at, a.question, a.answer, a.grounded, a.refusal_reason, a.citations_json)
            + (a.model_json, a.embedding_json, a.prompt_template_version, a.retrieval_json, a.usage_json)
            + (a.packed_chunks_json,),
        )

    def insert_eval_run(
        self, run_id: str, created_at: str, kind: str, config_json: str, metrics_json: str, report_path: str | None
    ) -> None:
        """Keep one evaluation run."""
        self._exec(
            "INSERT INTO eval_runs (run_id, created_at, kind, config_json, metrics_json, report_path)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            (run_id, created_at, kind, config_json, metrics_json, report_path),
        )

    def answer_entries(
        self, limit: int | None, *, stale_only: bool = False, owner: str | None = None
    ) -> tuple[list[LedgerEntry], int]:
        """The newest answers first, the last stored first among equal times (at most ``limit``; only those with
        a stale or unverifiable citation with ``stale_only``; only those ``owner`` owns when given), and how many
        there are in all (of that kind)."""
        owned = None if owner is None else _OWNED.format("answer_id", "answer")
        where = _where(_STALE_ONLY if stale_only else None, owned)
        mine: tuple[str, ...] = () if owner is None else (owner,)
        total = int(self._exec(f"SELECT count(*) FROM answers{where}", mine).fetchone()[0])  # type: ignore[index]
        rows = self._exec(
            f"SELECT answer_id, created_at, question, grounded, refusal_reason FROM answers{where}"
            " ORDER BY created_at DESC, stored DESC LIMIT %s",
            (*mine, limit),  # (None: LIMIT NULL, no limit)
        ).fetchall()
        return [entry_from_row(r) for r in rows], total

    def answer_entry(self, answer_id: str) -> LedgerEntry | None:
        """The stored answer ``answer_id`` with its words, or None."""
        row = self._exec(
            "SELECT answer_id, created_at, question, grounded, refusal_reason, answer FROM answers"
            " WHERE answer_id = %s",
            (answer_id,),
        ).fetchone()
        return None if row is None else entry_from_row(row)

    def answer_citations_json(self, answer_id: str) -> str | None:
        """The citations an answer gave, as stored (JSON text), or None when there is no such answer."""
        row = self._exec("SELECT citations_json FROM answers WHERE answer_id = %s", (answer_id,)).fetchone()
        return None if row is None else str(row[0])

    def purge_answers(
        self, ids: Sequence[str] = (), *, before: datetime.date | None = None, everything: bool = False
    ) -> list[str]:
        """Delete answers (by id, stored before the day ``before``, or all) with their citations and turns, and the
        threads left without a turn, in one transaction (its own); the ids deleted. An unknown id is a
        NotFoundError and nothing is deleted."""
        with self.transaction():
            if everything:
                chosen = [r[0] for r in self._exec("SELECT answer_id FROM answers ORDER BY answer_id")]
            elif before is not None:
                rows = self._exec(
                    "SELECT answer_id FROM answers WHERE created_at < %s ORDER BY answer_id", (before.isoformat(),)
                )
                chosen = [r[0] for r in rows]
            else:
                chosen = list(dict.fromkeys(ids))
                found = {r[0] for r in self._exec("SELECT answer_id FROM answers WHERE answer_id = ANY(%s)", (chosen,))}
                for answer_id in chosen:
                    if answer_id not in found:
                        raise NotFoundError(f"no stored answer with id {answer_id!r}", hint="see 'kb answers list'")
            self._exec("DELETE FROM answers WHERE answer_id = ANY(%s)", (chosen,))
            empty = self._exec(
                "DELETE FROM threads AS t WHERE NOT EXISTS (SELECT 1 FROM turns WHERE thread_id = t.thread_id)"
                " RETURNING thread_id"
            ).fetchall()
            self._forget_owners("answer", chosen)
            self._forget_owners("thread", [r[0] for r in empty])
        return chosen

    # -- what citations rest on --------------------------------------------------------------------

    def insert_citations(self, records: Sequence[CitationRecord]) -> None:
        """Keep these citations, replacing an answer's earlier row of the same marker."""
        self._many(
            f"INSERT INTO answer_citations ({CITATION_COLUMNS}) VALUES ({', '.join(['%s'] * 13)})"
            " ON CONFLICT (answer_id, marker) DO UPDATE SET chunk_id = excluded.chunk_id, doc_path = excluded.doc_path,"
            " start_line = excluded.start_line, end_line = excluded.end_line, cited_text = excluded.cited_text,"
            " fingerprint = excluded.fingerprint, doc_hash = excluded.doc_hash, state = excluded.state,"
            " reason = excluded.reason, now_text = excluded.now_text, checked_at = excluded.checked_at",
            [citation_values(r) for r in records],
        )

    def citations_of(self, answer_ids: Sequence[str]) -> list[CitationRecord]:
        """The citations of these answers, by answer id then marker."""
        rows = self._exec(
            f"SELECT row_id, {CITATION_COLUMNS} FROM answer_citations WHERE answer_id = ANY(%s)"
            " ORDER BY answer_id, marker",
            (list(answer_ids),),
        )
        return [citation_from_row(row) for row in rows]

    def citations_citing(self, paths: Sequence[str] | None) -> list[CitationRecord]:
        """Every citation of the answers citing any of ``paths`` (None: of every answer), by answer id then marker."""
        if paths is None:
            rows = self._exec(f"SELECT row_id, {CITATION_COLUMNS} FROM answer_citations ORDER BY answer_id, marker")
        else:
            rows = self._exec(
                f"SELECT row_id, {CITATION_COLUMNS} FROM answer_citations WHERE answer_id IN"
                " (SELECT answer_id FROM answer_citations WHERE doc_path = ANY(%s)) ORDER BY answer_id, marker",
                (list(paths),),
            )
        return [citation_from_row(row) for row in rows]

    def update_citations(self, records: Sequence[CitationRecord]) -> None:
        """Write the checked state of stored citations (found by ``row_id``)."""
        self._many(
            "UPDATE answer_citations SET start_line = %s, end_line = %s, cited_text = %s, fingerprint = %s,"
            " doc_hash = %s, state = %s, reason = %s, now_text = %s, checked_at = %s WHERE row_id = %s",
            [citation_check_values(r) for r in records],
        )

    # -- threads ----------------------------------------------------------------------------------

    def create_thread(self, thread_id: str, created_at: str) -> None:
        """A new thread without turns."""
        self._exec(
            "INSERT INTO threads (thread_id, created_at, updated_at) VALUES (%s, %s, %s)",
            (thread_id, created_at, created_at),
        )

    def thread_record(self, thread_id: str) -> ThreadRecord | None:
        """The thread ``thread_id``, or None."""
        row = self._exec(
            "SELECT thread_id, created_at, updated_at FROM threads WHERE thread_id = %s", (thread_id,)
        ).fetchone()
        return None if row is None else ThreadRecord(row[0], row[1], row[2])

    def append_turn(self, thread_id: str, turn: TurnRecord) -> int:
        """Add a turn after the thread's last (its ``position`` is ignored) and mark the thread continued at the
        turn's time; the turn's position (from 1). The turn's answer must be stored already. The thread's row is
        locked first, so two turns added at once to one thread get the next two positions."""
        self._exec("SELECT 1 FROM threads WHERE thread_id = %s FOR UPDATE", (thread_id,))
        row = self._exec("SELECT coalesce(max(position), 0) FROM turns WHERE thread_id = %s", (thread_id,)).fetchone()
        position = int(row[0]) + 1  # type: ignore[index]
        self._exec(
            f"INSERT INTO turns (thread_id, {_TURN}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (thread_id, position, turn.answer_id, turn.asked, turn.standalone, turn.method, turn.rewrite_ms)
            + (turn.rewrite_prompt_tokens, turn.created_at, turn.answer_json),
        )
        self._exec("UPDATE threads SET updated_at = %s WHERE thread_id = %s", (turn.created_at, thread_id))
        return position

    def turns_of(self, thread_id: str) -> list[TurnRecord]:
        """The turns of a thread, in order."""
        rows = self._exec(f"SELECT {_TURN} FROM turns WHERE thread_id = %s ORDER BY position", (thread_id,))
        return [TurnRecord(*row) for row in rows]

    def thread_summaries(self, limit: int | None, *, owner: str | None = None) -> list[ThreadSummary]:
        """Threads, the one whose newest turn was added last first, then the newest threads without turns (only
        those ``owner`` owns when given)."""
        where = _where(None if owner is None else _OWNED.format("t.thread_id", "thread"))
        mine: tuple[str, ...] = () if owner is None else (owner,)
        rows = self._exec(
            "SELECT t.thread_id, t.created_at, t.updated_at, count(u.position),"
            " (SELECT asked FROM turns WHERE thread_id = t.thread_id ORDER BY position LIMIT 1)"
            f" FROM threads AS t LEFT JOIN turns AS u ON u.thread_id = t.thread_id{where}"
            " GROUP BY t.thread_id ORDER BY coalesce(max(u.stored), 0) DESC, t.stored DESC LIMIT %s",
            (*mine, limit),
        ).fetchall()
        return [summary_from_row(r) for r in rows]

    def delete_thread(self, thread_id: str) -> int | None:
        """Delete a thread, its turns and their answers in one transaction (its own); the turns deleted, or None
        when there is no such thread. The thread's row is locked first, so a turn being added meanwhile is either
        deleted with the others or added after (to no thread: it fails)."""
        with self.transaction():
            if self._exec("SELECT 1 FROM threads WHERE thread_id = %s FOR UPDATE", (thread_id,)).fetchone() is None:
                return None
            answers = [r[0] for r in self._exec("SELECT answer_id FROM turns WHERE thread_id = %s", (thread_id,))]
            self._exec("DELETE FROM answers WHERE answer_id = ANY(%s)", (answers,))
            self._exec("DELETE FROM threads WHERE thread_id = %s", (thread_id,))
            self._forget_owners("answer", answers)
            self._forget_owners("thread", [thread_id])
        return len(answers)

    def _forget_owners(self, kind: str, item_ids: Sequence[str]) -> None:
        """Delete who owned these (deleted) answers or threads, in the caller's transaction: an id is never
        another's to inherit."""
        self._exec("DELETE FROM access_owners WHERE kind = %s AND item_id = ANY(%s)", (kind, list(item_ids)))
