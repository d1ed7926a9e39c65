"""Which passages a computation reads: the retrieved ones whose row or line names what the question asks.

Every annual report has a table with columns for 2018 and 2019, so retrieval may rank the report whose row the
question names behind others; a computed question reads its passages in the order of retrieval score plus
:func:`~kb_core.answers.evidence_fit.evidence_fit`, any other question in retrieval's order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kbtest import store_chunks

from kb_core.answers.evidence_fit import by_evidence_fit, evidence_fit
from kb_core.answers.pipeline import AskOptions, RagPipeline
from kb_core.config import load_config
from kb_core.limits import check_text
from kb_core.storage.store import StoreOfRecord
from kb_core.testing import ScriptedLanguageModel
from kb_core.types import Chunk, GenerateRequest, Hit, ModelRef, SearchQuery

QUESTION = "What was the change in the domestic discount rate between 2018 and 2019?"
OTHER_REPORT = """Revenue by region for the years ended December 31:
| 2019 | 2018
Domestic revenue | 4,120 | 3,990
International revenue | 2,310 | 2,205"""
NAMED_REPORT = """Weighted average actuarial assumptions:
| Domestic | | International |
| 2019 | 2018 | 2019 | 2018
Discount rate | 4.00% | 3.75% | 1.90% | 2.80%"""
EARLIER_YEARS = """Weighted average actuarial assumptions:
| 2017 | 2016
Discount rate | 3.50% | 3.25%"""

CHUNKS = [
    Chunk("revenue.pdf#0", "revenue.pdf", 0, OTHER_REPORT, "h0", 1, 4, ()),
    Chunk("older.pdf#0", "older.pdf", 0, EARLIER_YEARS, "h1", 1, 3, ()),
    Chunk("pension.pdf#0", "pension.pdf", 0, NAMED_REPORT, "h2", 1, 4, ()),
]


def _hits(chunks: Sequence[Chunk] = CHUNKS) -> list[Hit]:
    return [Hit(c.chunk_id, c.doc_path, 0.9 - i / 20, i + 1, c.citation) for i, c in enumerate(chunks)]


def test_the_row_the_question_names_in_the_periods_it_names_fits_best() -> None:
    assert evidence_fit(QUESTION, NAMED_REPORT) == 1.0
    assert evidence_fit(QUESTION, EARLIER_YEARS) == 0.0  # the row, but not the periods asked
    assert 0.0 < evidence_fit(QUESTION, OTHER_REPORT) < 1.0  # the periods, a row sharing one word


def test_a_computation_reads_the_named_report_first_whatever_its_rank() -> None:
    chunks = {c.chunk_id: c for c in CHUNKS}
    chosen = by_evidence_fit(_hits(), chunks, QUESTION, 2)
    assert [h.doc_path for h in chosen] == ["pension.pdf", "revenue.pdf"]
    assert [h.doc_path for h in by_evidence_fit(_hits(), {}, QUESTION, 3)] == [c.doc_path for c in CHUNKS]


@given(st.text(max_size=300), st.text(max_size=2000))
def test_any_question_and_passage_fit_within_zero_and_one(question: str, text: str) -> None:
    assert 0.0 <= evidence_fit(question, text) <= 1.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StoreOfRecord]:
    db = StoreOfRecord(tmp_path / "kb")
    store_chunks(db, CHUNKS)
    yield db
    db.close()


def _evidence_read(store: StoreOfRecord, question: str, chunks: Sequence[Chunk] = CHUNKS) -> str:
    """The evidence the model was given for ``question``, retrieval ranking ``chunks`` in their order."""
    config = load_config(kb_dir=store.kb_dir, overrides={"rag.max_chunks": 1, "rag.computations": True}, environ={})
    requests: list[GenerateRequest] = []

    def script(request: GenerateRequest) -> list[str]:
        requests.append(request)
        return ["CALC: none"] if len(requests) == 1 else ["Insufficient evidence."]

    def retrieve(query: SearchQuery) -> list[Hit]:
        return _hits(chunks)

    pipeline = RagPipeline(
        config, store, retrieve, lambda: ScriptedLanguageModel(script), lambda: ModelRef("e", "onnx", 8)
    )
    pipeline.ask(check_text(question), AskOptions(), save=False)
    return requests[0].user


def test_through_the_pipeline_a_computed_question_reads_the_row_it_names(store: StoreOfRecord) -> None:
    assert "Discount rate: Domestic 2019 = 4.00%" in _evidence_read(store, QUESTION)


def test_any_other_question_reads_retrievals_first_passage(store: StoreOfRecord) -> None:
    evidence = _evidence_read(store, "What was the domestic discount rate in 2019?")
    assert "Domestic revenue" in evidence and "Discount rate" not in evidence


def test_over_prose_alone_a_computed_question_reads_retrievals_order(tmp_path: Path) -> None:
    prose = [
        Chunk("a.md#0", "a.md", 0, "Revenue was 4,120 in 2019 and 3,990 in 2018.", "p0", 1, 1, ()),
        Chunk("b.md#0", "b.md", 0, "The domestic discount rate was 4.00% in 2019 and 3.75% in 2018.", "p1", 1, 1, ()),
    ]
    db = StoreOfRecord(tmp_path / "prose")
    store_chunks(db, prose)
    try:
        assert "Revenue was 4,120" in _evidence_read(db, QUESTION, prose)
    finally:
        db.close()
