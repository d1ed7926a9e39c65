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
from typing import Literal, cast

import attrs

from kb_core.extend.record_store import CitationRecord, RecordStore
from kb_core.storage.freshness import CitationState, CitedText, StaleReason, fingerprint, recheck, span_lines
from kb_core.storage.lines import MAX_LINES
from kb_core.storage.store import now_iso
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


def record_citations(store: RecordStore, answer_id: str, citations: Sequence[AnswerCitation]) -> None:
    """Keep what an answer's ``citations`` rest on (inside the caller's transaction, if any).

    Only a grounded answer has citations; a refusal's candidates are not recorded.
    """
    cited = [(c, c.marker) for c in citations if c.marker is not None]
    if not cited:
        return
    chunks = store.get_chunks([c.chunk_id for c, _ in cited])
    hashes = store.document_hashes_of([c.citation.path for c, _ in cited])
    records = []
    for c, marker in cited:
        chunk = chunks.get(c.chunk_id)
        text = chunk.text if chunk is not None else None
        records.append(
            CitationRecord(
                answer_id,
                marker,
                c.chunk_id,
                c.citation.path,
                c.citation.start_line,
                c.citation.end_line,
                cited_text=text,
                fingerprint=fingerprint(text) if text is not None else None,
                doc_hash=hashes.get(c.citation.path),
                state="valid" if text is not None else "unchecked",
                checked_at=now_iso(),
            )
        )
    store.insert_citations(records)


def document_lines(store: RecordStore, path: str) -> list[str | None] | None:
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


def recheck_documents(store: RecordStore, paths: Iterable[str] | None = None) -> FreshnessReport:
    """Re-check the stored citations of the documents ``paths`` (None: of every document).

    Only the answers citing them are read, once. A document whose content hash is the one its
    citations were last checked against is not read again.
    """
    began = time.perf_counter()
    wanted = None if paths is None else set(paths)
    rows = store.citations_citing(None if wanted is None else sorted(wanted))
    by_path: dict[str, list[CitationRecord]] = defaultdict(list)
    for row in rows:
        if row.state != "unverifiable" and (wanted is None or row.doc_path in wanted):
            by_path[row.doc_path].append(row)
    hashes = store.document_hashes_of(list(by_path))
    now = {row.row_id: _now(row) for row in rows}
    updates = []
    for path, cited in by_path.items():
        current = hashes.get(path)
        if all(r.doc_hash == current and r.state in ("valid", "reanchored") for r in cited):
            continue
        lines = document_lines(store, path)
        for row in cited:
            now[row.row_id], update = _checked(store, row, lines, current)
            updates.append(update)
    if updates:
        with store.transaction():
            store.update_citations(updates)
    by_answer: dict[str, list[CitationNow]] = defaultdict(list)
    for row in rows:
        by_answer[row.answer_id].append(now[row.row_id])
    return _report(store, by_answer, began)


def _now(row: CitationRecord) -> CitationNow:
    """A stored citation as it stands."""
    return CitationNow(
        marker=row.marker,
        path=row.doc_path,
        start_line=row.start_line,
        end_line=row.end_line,
        state=cast("CitationState", row.state),
        reason=cast("StaleReason", row.reason),
        cited_text=row.cited_text,
        now_text=row.now_text,
    )


def _checked(
    store: RecordStore, row: CitationRecord, lines: Sequence[str | None] | None, doc_hash: str | None
) -> tuple[CitationNow, CitationRecord]:
    """One stored citation re-checked: how it stands now, and the record to write."""
    text = row.cited_text
    if text is None:  # stored before kb kept cited text: what its chunk id still points to, if anything
        chunk = store.get_chunks([row.chunk_id]).get(row.chunk_id)
        text = chunk.text if chunk is not None else None
    if text is None:
        checked = attrs.evolve(_now(row), state="unverifiable", reason="", now_text=None)
    else:
        outcome = recheck(CitedText(row.doc_path, row.start_line, row.end_line, text), lines)
        checked = attrs.evolve(
            _now(row),
            start_line=outcome.start_line,
            end_line=outcome.end_line,
            state=outcome.state,
            reason=outcome.reason,
            cited_text=text,
            now_text=outcome.now,
        )
    update = attrs.evolve(
        row,
        start_line=checked.start_line,
        end_line=checked.end_line,
        cited_text=text,
        fingerprint=fingerprint(text) if text is not None else None,
        doc_hash=doc_hash,
        state=checked.state,
        reason=checked.reason,
        now_text=checked.now_text,
        checked_at=now_iso(),
    )
    return checked, update


def citations_now(store: RecordStore, answer_ids: Sequence[str]) -> dict[str, list[CitationNow]]:
    """answer id -> its citations as they stand now, by marker."""
    found: dict[str, list[CitationNow]] = defaultdict(list)
    for row in store.citations_of(answer_ids):
        found[row.answer_id].append(_now(row))
    return found


def _report(store: RecordStore, by_answer: dict[str, list[CitationNow]], began: float) -> FreshnessReport:
    counts: dict[str, int] = defaultdict(int)
    stale: list[StaleAnswer] = []
    for answer_id, citations in sorted(by_answer.items()):
        state = answer_state(c.state for c in citations)
        counts[state] += 1
        if state in ("stale", "unverifiable"):
            broken = tuple(
                sorted((c for c in citations if c.state in ("stale", "unverifiable")), key=lambda c: c.marker)
            )
            entry = store.answer_entry(answer_id)
            stale.append(StaleAnswer(answer_id, entry.question if entry else "", state, broken))
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
