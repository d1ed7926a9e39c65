"""The passages an answer reads: chosen hits packed into the model's evidence budget, and those kb reads beside.

:func:`packed_evidence` packs hits as the model reads them (:func:`~kb_core.answers.packing.pack`), numbered from
``[#1]``. A computed answer's sentence that states the result as the report rounds it may sit in a retrieved
passage the model was not given (:mod:`kb_core.answers.restated`): :func:`read_beside` numbers such passages after
the packed ones, each a packed item of 0 tokens, cited only when kb's own check quotes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from kb_core.answers.packing import evidence_budget, format_entry, pack
from kb_core.answers.run import QuestionRun
from kb_core.extend.contracts import LanguageModel
from kb_core.extend.record_store import RecordStore
from kb_core.types import Chunk, Hit, PackedChunk

__all__ = ["Evidence", "packed_evidence", "read_beside"]


@attrs.frozen
class Evidence:
    """Packed passages: the ``items`` (as answer.v1's ``packed`` lists them), the ``entries`` the model reads, and
    each item's ``chunks`` by marker."""

    items: list[PackedChunk]
    entries: list[str]
    chunks: dict[int, Chunk]


def packed_evidence(
    store: RecordStore,
    llm: LanguageModel,
    run: QuestionRun,
    chosen: Sequence[Hit],
    known: Mapping[str, Chunk],
    budget_limits: tuple[int, int],
) -> Evidence | None:
    """The ``chosen`` hits packed into the evidence budget (``budget_limits``: the answer's tokens and the most
    evidence tokens), or None when none of their chunks is left. ``known``: chunks already read from ``store``."""
    chunks = {h.chunk_id: known[h.chunk_id] for h in chosen if h.chunk_id in known}
    chunks |= store.get_chunks([h.chunk_id for h in chosen if h.chunk_id not in chunks])
    budget = evidence_budget(llm, run.prompt, *budget_limits)
    packed = pack(chosen, chunks, budget, llm.count_tokens, run.template)
    if not packed:
        return None
    items = [item for item, _ in packed]
    return Evidence(items, [entry for _, entry in packed], {item.marker: chunks[item.chunk_id] for item in items})


def read_beside(
    run: QuestionRun, found: Sequence[tuple[Hit, Chunk]], first_marker: int
) -> dict[int, tuple[PackedChunk, Chunk]]:
    """The chunks ``found`` (retrieved hits with their chunks, not given to the model) by the markers they take
    from ``first_marker`` on, each with its packed item (0 tokens: the model did not read it)."""
    beside: dict[int, tuple[PackedChunk, Chunk]] = {}
    for marker, (hit, chunk) in enumerate(found, first_marker):
        entry = format_entry(marker, chunk, header=run.template.entry_header)
        item = PackedChunk(marker, chunk.chunk_id, str(chunk.citation), round(hit.score, 4), 0, False, entry)
        beside[marker] = (item, chunk)
    return beside
