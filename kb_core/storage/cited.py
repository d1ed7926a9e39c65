"""What stored answers cite, kept true as documents change (the ``answer_citations`` table).

Every grounded answer's citations are recorded with the text they cited (:func:`record_citations`).
After an ingest that changes documents, :func:`recheck_documents` re-checks the citations of those
documents only (an index on the path finds them), and ``kb answers check`` re-checks every one;
:mod:`kb_core.storage.freshness` decides each citation's state, with no model. A re-anchored
citation moves to the lines where its text now stands; a stale one keeps its lines, its old
wording and the wording there now.

An answer is *stale* when any of its citations is; *unverifiable* when one was stored before kb
recorded cited text and its chunk is gone; *re-anchored* when one moved; otherwise *valid*.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import attrs

from kb_core.storage.freshness import CitationState, CitedText, StaleReason, fingerprint, recheck, span_lines
from kb_core.storage.lines import MAX_LINES
from kb_core.storage.store import StoreOfRecord, now_iso
from kb_core.types import AnswerCitation

#: An answer's state, from its citations' (worst first: stale, unverifiable, re-anchored, valid).
AnswerState = Literal["valid", "reanchored", "stale", "unverifiable"]
_WORST_FIRST: tuple[AnswerState, ...] = ("stale", "unverifiable", "reanchored", "valid")


@attrs.frozen
class CitationNow:
    """One citation of a stored answer as it stands now."""

    marker: int
    path: str
    start_line: int
    end_line: int
    state: CitationState | Literal["unchecked"]
    reason: StaleReason = ""
    cited_text: str | None = None  # what it cited (None: stored before kb kept it)
    now_text: str | None = None  # for a stale citation: the wording at its lines now


@attrs.frozen
class StaleAnswer:
    """A stored answer that no longer holds, and the citations that broke."""

    answer_id: str
    question: str
    state: AnswerState
    citations: tuple[CitationNow, ...]


@attrs.frozen
class FreshnessReport:
    """What a re-check found (``answers_check.v1``): answers read, by state, and the stale ones."""

    answers_checked: int
    valid: int
    reanchored: int
    stale: int
    unverifiable: int
    stale_answers: tuple[StaleAnswer, ...]
    took_ms: float


def answer_state(states: Iterable[str]) -> AnswerState:
    """The state of an answer whose citations are in ``states`` (an unchecked one counts as valid)."""
    seen = set(states)
    return next((state for state in _WORST_FIRST if state in seen), "valid")


def record_citations(store: StoreOfRecord, answer_id: str, citations: Sequence[AnswerCitation]) -> None:
    """Keep what an answer's ``citations`` rest on (inside the caller's transaction, if any).

    Only a grounded answer has citations; a refusal's candidates are not recorded.
    """
    cited = [c for c in citations if c.marker is not None]
    if not cited:
        return
    chunks = store.get_chunks([c.chunk_id for c in cited])
    hashes = store.document_hashes_of([c.citation.path for c in cited])
    rows = []
    for c in cited:
        chunk = chunks.get(c.chunk_id)
        text = chunk.text if chunk is not None else None
        rows.append(
            (answer_id, c.marker, c.chunk_id, c.citation.path, c.citation.start_line, c.citation.end_line)
            + (text, fingerprint(text) if text is not None else None, hashes.get(c.citation.path))
            + ("valid" if text is not None else "unchecked", now_iso())
        )
    store.conn.executemany(
        "INSERT OR REPLACE INTO answer_citations (answer_id, marker, chunk_id, doc_path, start_line, end_line,"
        " cited_text, fingerprint, doc_hash, state, checked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def document_lines(store: StoreOfRecord, path: str) -> list[str | None] | None:
    """The document's lines as its stored chunks hold them (None: no such document).

    A line no chunk covers (a blank line between blocks) is None; so is every line of a chunk
    whose text does not split into its line span (a format whose chunks are not its lines), and every
    line of a chunk past :data:`~kb_core.storage.lines.MAX_LINES`. A table's header row repeated at the
    start of a chunk is not one of its lines (:func:`span_lines`).
    """
    if store.get_document(path) is None:
        return None
    chunks = store.chunks_of([path])
    count = min(max((c.end_line for c in chunks), default=0), MAX_LINES)  # (a parser's numbers, not trusted)
    lines: list[str | None] = [None] * count
    placed: set[str] = set()
    for chunk in chunks:
        if not 1 <= chunk.start_line <= chunk.end_line <= count:
            continue
        height = chunk.end_line - chunk.start_line + 1
        parts = span_lines(chunk.text.split("\n"), height, placed)
        if len(parts) == height:
            lines[chunk.start_line - 1 : chunk.end_line] = parts
            placed.update(parts)
    return lines


def recheck_documents(store: StoreOfRecord, paths: Iterable[str] | None = None) -> FreshnessReport:
    """Re-check the stored citations of the documents ``paths`` (None: of every document).

    Only the answers citing them are read, once. A document whose content hash is the one its
    citations were last checked against is not read again.
    """
    began = time.perf_counter()
    if paths is None:
        rows = store.conn.execute("SELECT rowid, * FROM answer_citations ORDER BY answer_id, marker").fetchall()
        wanted = None
    else:
        wanted = set(paths)
        query = (
            "SELECT rowid, * FROM answer_citations WHERE answer_id IN"
            " (SELECT answer_id FROM answer_citations WHERE doc_path IN ({marks})) ORDER BY answer_id, marker"
        )
        unique = {row["rowid"]: row for row in store.rows_in(query, sorted(wanted))}  # batches may overlap
        rows = sorted(unique.values(), key=lambda row: (row["answer_id"], row["marker"]))
    by_path: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        if row["state"] != "unverifiable" and (wanted is None or row["doc_path"] in wanted):
            by_path[row["doc_path"]].append(row)
    hashes = store.document_hashes_of(list(by_path))
    now = {row["rowid"]: _now(row) for row in rows}
    updates = []
    for path, cited in by_path.items():
        current = hashes.get(path)
        if all(r["doc_hash"] == current and r["state"] in ("valid", "reanchored") for r in cited):
            continue
        lines = document_lines(store, path)
        for row in cited:
            now[row["rowid"]], parameters = _checked(store, row, lines, current)
            updates.append(parameters)
    if updates:
        with store.transaction():
            store.conn.executemany(
                "UPDATE answer_citations SET start_line = ?, end_line = ?, cited_text = ?, fingerprint = ?,"
                " doc_hash = ?, state = ?, reason = ?, now_text = ?, checked_at = ? WHERE rowid = ?",
                updates,
            )
    by_answer: dict[str, list[CitationNow]] = defaultdict(list)
    for row in rows:
        by_answer[row["answer_id"]].append(now[row["rowid"]])
    return _report(store, by_answer, began)


def _now(row: Any) -> CitationNow:
    """An ``answer_citations`` row as it stands."""
    return CitationNow(
        marker=row["marker"],
        path=row["doc_path"],
        start_line=row["start_line"],
        end_line=row["end_line"],
        state=row["state"],
        reason=row["reason"],
        cited_text=row["cited_text"],
        now_text=row["now_text"],
    )


def _checked(
    store: StoreOfRecord, row: Any, lines: Sequence[str | None] | None, doc_hash: str | None
) -> tuple[CitationNow, tuple[Any, ...]]:
    """One citation row re-checked: how it stands now, and the parameters of its UPDATE."""
    text = row["cited_text"]
    if text is None:  # stored before kb kept cited text: what its chunk id still points to, if anything
        chunk = store.get_chunks([row["chunk_id"]]).get(row["chunk_id"])
        text = chunk.text if chunk is not None else None
    if text is None:
        checked = attrs.evolve(_now(row), state="unverifiable", reason="", now_text=None)
    else:
        outcome = recheck(CitedText(row["doc_path"], row["start_line"], row["end_line"], text), lines)
        checked = attrs.evolve(
            _now(row),
            start_line=outcome.start_line,
            end_line=outcome.end_line,
            state=outcome.state,
            reason=outcome.reason,
            cited_text=text,
            now_text=outcome.now,
        )
    stamp = fingerprint(text) if text is not None else None
    parameters = (checked.start_line, checked.end_line, text, stamp, doc_hash, checked.state, checked.reason)
    return checked, (*parameters, checked.now_text, now_iso(), row["rowid"])


def citations_now(store: StoreOfRecord, answer_ids: Sequence[str]) -> dict[str, list[CitationNow]]:
    """answer id -> its citations as they stand now, by marker."""
    found: dict[str, list[CitationNow]] = defaultdict(list)
    query = "SELECT * FROM answer_citations WHERE answer_id IN ({marks}) ORDER BY answer_id, marker"
    for row in store.rows_in(query, answer_ids):
        found[row["answer_id"]].append(_now(row))
    return found


def _report(store: StoreOfRecord, by_answer: dict[str, list[CitationNow]], began: float) -> FreshnessReport:
    counts: dict[str, int] = defaultdict(int)
    stale: list[StaleAnswer] = []
    for answer_id, citations in sorted(by_answer.items()):
        state = answer_state(c.state for c in citations)
        counts[state] += 1
        if state in ("stale", "unverifiable"):
            broken = tuple(
                sorted((c for c in citations if c.state in ("stale", "unverifiable")), key=lambda c: c.marker)
            )
            row = store.conn.execute("SELECT question FROM answers WHERE answer_id = ?", (answer_id,)).fetchone()
            stale.append(StaleAnswer(answer_id, row[0] if row else "", state, broken))
    return FreshnessReport(
        answers_checked=len(by_answer),
        valid=counts["valid"],
        reanchored=counts["reanchored"],
        stale=counts["stale"],
        unverifiable=counts["unverifiable"],
        stale_answers=tuple(stale),
        took_ms=round((time.perf_counter() - began) * 1000, 1),
    )


__all__ = [
    "AnswerState",
    "CitationNow",
    "FreshnessReport",
    "StaleAnswer",
    "answer_state",
    "citations_now",
    "document_lines",
    "record_citations",
    "recheck_documents",
]
