"""The SQLite store's answer ledger and threads: the SQL of ``answers``, ``answer_citations``, ``eval_runs``,
``threads`` and ``turns`` (the logic around them is in :mod:`kb_core.storage.answers`, ``cited`` and ``threads``).

Deleting an answer or a thread uses SQLite's ``secure_delete`` and truncates the write-ahead log,
so the text of a purged question does not linger in the file.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from kb_core.errors import NotFoundError
from kb_core.extend.record_store import (
    CitationRecord,
    LedgerAnswer,
    LedgerEntry,
    ThreadRecord,
    ThreadSummary,
    TurnRecord,
)
from kb_core.extend.store_rows import (
    CITATION_COLUMNS,
    citation_check_values,
    citation_from_row,
    citation_values,
    entry_from_row,
    summary_from_row,
)


def sql_limit(limit: int | None) -> int:
    """``limit`` as SQLite's ``LIMIT``: -1 (all) for None, and at most SQLite's largest integer.

    >>> sql_limit(None), sql_limit(5), sql_limit(2**70) == 2**63 - 1
    (-1, 5, True)
    """
    return -1 if limit is None else min(limit, 2**63 - 1)


_STALE_ONLY = "answer_id IN (SELECT answer_id FROM answer_citations WHERE state IN ('stale', 'unverifiable'))"
_OWNED = "{} IN (SELECT item_id FROM access_owners WHERE kind = '{}' AND person = ?)"


def _where(*conditions: str | None) -> str:
    """`` WHERE`` the conditions given (None: left out), joined by ``AND``; "" when none is."""
    chosen = [c for c in conditions if c]
    return f" WHERE {' AND '.join(chosen)}" if chosen else ""


class SqliteLedger:
    """The ledger and thread methods of :class:`~kb_core.storage.store.StoreOfRecord` (a mixin over its ``conn``)."""

    conn: Any

    def transaction(self) -> AbstractContextManager[Any]:  # (StoreOfRecord's)
        raise NotImplementedError

    def rows_in(self, query: str, values: Sequence[str]) -> Iterator[Any]:  # (StoreOfRecord's)
        raise NotImplementedError

    # -- answers ----------------------------------------------------------------------------------

    def insert_answer(self, answer: LedgerAnswer) -> None:
        """Keep one answer (refusals included)."""
        row = {
            "answer_id": answer.answer_id,
            "created_at": answer.created_at,
            "question": answer.question,
            "answer": answer.answer,
            "grounded": int(answer.grounded),
            "refusal_reason": answer.refusal_reason,
            "citations_json": answer.citations_json,
            "model_json": answer.model_json,
            "embedding_json": answer.embedding_json,
            "prompt_template_version": answer.prompt_template_version,
            "retrieval_json": answer.retrieval_json,
            "usage_json": answer.usage_json,
            "packed_chunks_json": answer.packed_chunks_json,
        }
        self.conn.execute(
            f"INSERT INTO answers ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values())
        )

    def insert_eval_run(
        self, run_id: str, created_at: str, kind: str, config_json: str, metrics_json: str, report_path: str | None
    ) -> None:
        """Keep one evaluation run."""
        self.conn.execute(
            "INSERT INTO eval_runs (run_id, created_at, kind, config_json, metrics_json, report_path)"
            " VALUES (?, ?, ?, ?, ?, ?)",
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
        total = int(self.conn.execute(f"SELECT count(*) FROM answers{where}", mine).fetchone()[0])
        rows = self.conn.execute(
            f"SELECT answer_id, created_at, question, grounded, refusal_reason FROM answers{where}"
            " ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (*mine, sql_limit(limit)),
        ).fetchall()
        return [entry_from_row(r) for r in rows], total

    def answer_entry(self, answer_id: str) -> LedgerEntry | None:
        """The stored answer ``answer_id`` with its words, or None."""
        row = self.conn.execute(
            "SELECT answer_id, created_at, question, grounded, refusal_reason, answer FROM answers WHERE answer_id = ?",
            (answer_id,),
        ).fetchone()
        return None if row is None else entry_from_row(row)

    def answer_citations_json(self, answer_id: str) -> str | None:
        """The citations an answer gave, as stored (JSON text), or None when there is no such answer."""
        row = self.conn.execute("SELECT citations_json FROM answers WHERE answer_id = ?", (answer_id,)).fetchone()
        return None if row is None else str(row[0])

    def purge_answers(
        self, ids: Sequence[str] = (), *, before: datetime.date | None = None, everything: bool = False
    ) -> list[str]:
        """Delete answers (by id, stored before the day ``before``, or all) with their citations and turns, and the
        threads left without a turn, in one transaction (its own); the ids deleted. An unknown id is a
        NotFoundError and nothing is deleted."""
        self.conn.execute("PRAGMA secure_delete = ON")
        with self.transaction():
            if everything:
                chosen = [r[0] for r in self.conn.execute("SELECT answer_id FROM answers")]
            elif before is not None:
                rows = self.conn.execute("SELECT answer_id FROM answers WHERE created_at < ?", (before.isoformat(),))
                chosen = [r[0] for r in rows]
            else:
                chosen = []
                for answer_id in ids:
                    row = self.conn.execute(
                        "SELECT answer_id FROM answers WHERE answer_id = ?", (answer_id,)
                    ).fetchone()
                    if row is None:
                        raise NotFoundError(f"no stored answer with id {answer_id!r}", hint="see 'kb answers list'")
                    chosen.append(row[0])
            self.conn.executemany("DELETE FROM answers WHERE answer_id = ?", [(a,) for a in chosen])
            empty = [
                r[0] for r in self.conn.execute("SELECT thread_id FROM threads EXCEPT SELECT thread_id FROM turns")
            ]
            self.conn.executemany("DELETE FROM threads WHERE thread_id = ?", [(t,) for t in empty])
            self._forget_owners("answer", chosen)
            self._forget_owners("thread", empty)
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return chosen

    # -- what citations rest on --------------------------------------------------------------------

    def insert_citations(self, records: Sequence[CitationRecord]) -> None:
        """Keep these citations, replacing an answer's earlier row of the same marker."""
        self.conn.executemany(
            f"INSERT OR REPLACE INTO answer_citations ({CITATION_COLUMNS}) VALUES ({', '.join('?' * 13)})",
            [citation_values(r) for r in records],
        )

    def citations_of(self, answer_ids: Sequence[str]) -> list[CitationRecord]:
        """The citations of these answers, by answer id then marker."""
        query = (
            f"SELECT rowid, {CITATION_COLUMNS} FROM answer_citations WHERE answer_id IN ({{marks}})"
            " ORDER BY answer_id, marker"
        )
        rows = {row[0]: row for row in self.rows_in(query, sorted(set(answer_ids)))}
        return sorted(map(citation_from_row, rows.values()), key=lambda r: (r.answer_id, r.marker))

    def citations_citing(self, paths: Sequence[str] | None) -> list[CitationRecord]:
        """Every citation of the answers citing any of ``paths`` (None: of every answer), by answer id then marker."""
        if paths is None:
            rows = self.conn.execute(f"SELECT rowid, {CITATION_COLUMNS} FROM answer_citations").fetchall()
        else:
            query = (
                f"SELECT rowid, {CITATION_COLUMNS} FROM answer_citations WHERE answer_id IN"
                " (SELECT answer_id FROM answer_citations WHERE doc_path IN ({marks}))"
            )
            rows = list({row[0]: row for row in self.rows_in(query, sorted(set(paths)))}.values())  # batches overlap
        return sorted(map(citation_from_row, rows), key=lambda r: (r.answer_id, r.marker))

    def update_citations(self, records: Sequence[CitationRecord]) -> None:
        """Write the checked state of stored citations (found by ``row_id``)."""
        self.conn.executemany(
            "UPDATE answer_citations SET start_line = ?, end_line = ?, cited_text = ?, fingerprint = ?,"
            " doc_hash = ?, state = ?, reason = ?, now_text = ?, checked_at = ? WHERE rowid = ?",
            [citation_check_values(r) for r in records],
        )

    # -- threads ----------------------------------------------------------------------------------

    def create_thread(self, thread_id: str, created_at: str) -> None:
        """A new thread without turns."""
        self.conn.execute(
            "INSERT INTO threads (thread_id, created_at, updated_at) VALUES (?, ?, ?)",
            (thread_id, created_at, created_at),
        )

    def thread_record(self, thread_id: str) -> ThreadRecord | None:
        """The thread ``thread_id``, or None."""
        row = self.conn.execute(
            "SELECT thread_id, created_at, updated_at FROM threads WHERE thread_id = ?", (thread_id,)
        ).fetchone()
        return None if row is None else ThreadRecord(row[0], row[1], row[2])

    def append_turn(self, thread_id: str, turn: TurnRecord) -> int:
        """Add a turn after the thread's last (its ``position`` is ignored) and mark the thread continued at the
        turn's time; the turn's position (from 1). The turn's answer must be stored already."""
        row = self.conn.execute("SELECT coalesce(max(position), 0) FROM turns WHERE thread_id = ?", (thread_id,))
        position = int(row.fetchone()[0]) + 1
        self.conn.execute(
            "INSERT INTO turns (thread_id, position, answer_id, asked, standalone, method, rewrite_ms,"
            " rewrite_prompt_tokens, answer_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (thread_id, position, turn.answer_id, turn.asked, turn.standalone, turn.method, turn.rewrite_ms)
            + (turn.rewrite_prompt_tokens, turn.answer_json, turn.created_at),
        )
        self.conn.execute("UPDATE threads SET updated_at = ? WHERE thread_id = ?", (turn.created_at, thread_id))
        return position

    def turns_of(self, thread_id: str) -> list[TurnRecord]:
        """The turns of a thread, in order."""
        rows = self.conn.execute(
            "SELECT position, answer_id, asked, standalone, method, rewrite_ms, rewrite_prompt_tokens, created_at,"
            " answer_json FROM turns WHERE thread_id = ? ORDER BY position",
            (thread_id,),
        ).fetchall()
        return [TurnRecord(*row) for row in rows]

    def thread_summaries(self, limit: int | None, *, owner: str | None = None) -> list[ThreadSummary]:
        """Threads, the one whose newest turn was added last first, then the newest threads without turns (only
        those ``owner`` owns when given)."""
        where = _where(None if owner is None else _OWNED.format("t.thread_id", "thread"))
        mine: tuple[str, ...] = () if owner is None else (owner,)
        rows = self.conn.execute(
            "SELECT t.thread_id, t.created_at, t.updated_at, count(u.position),"
            " (SELECT asked FROM turns WHERE thread_id = t.thread_id ORDER BY position LIMIT 1)"
            f" FROM threads AS t LEFT JOIN turns AS u ON u.thread_id = t.thread_id{where}"
            " GROUP BY t.thread_id ORDER BY coalesce(max(u.rowid), 0) DESC, t.rowid DESC LIMIT ?",
            (*mine, sql_limit(limit)),
        ).fetchall()
        return [summary_from_row(r) for r in rows]

    def delete_thread(self, thread_id: str) -> int | None:
        """Delete a thread, its turns and their answers in one transaction (its own); the turns deleted, or None
        when there is no such thread (a turn added meanwhile is deleted with the others)."""
        self.conn.execute("PRAGMA secure_delete = ON")
        with self.transaction():
            if self.thread_record(thread_id) is None:
                return None
            answers = [r[0] for r in self.conn.execute("SELECT answer_id FROM turns WHERE thread_id = ?", (thread_id,))]
            self.conn.executemany("DELETE FROM answers WHERE answer_id = ?", [(a,) for a in answers])
            self.conn.execute("DELETE FROM threads WHERE thread_id = ?", (thread_id,))
            self._forget_owners("answer", answers)
            self._forget_owners("thread", [thread_id])
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return len(answers)

    def _forget_owners(self, kind: str, item_ids: Sequence[str]) -> None:
        """Delete who owned these (deleted) answers or threads, in the caller's transaction: an id is never
        another's to inherit."""
        self.conn.executemany("DELETE FROM access_owners WHERE kind = ? AND item_id = ?", [(kind, i) for i in item_ids])
