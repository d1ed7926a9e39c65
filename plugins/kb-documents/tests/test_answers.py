"""The answer smoke set over PDFs and Word files: kb ask, with the real default model, cites the right file."""

from __future__ import annotations

from pathlib import Path

import pytest

import kb_core
from kb_core.evaluation.answers import evaluate_answers, load_golden

pytestmark = pytest.mark.slow
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_questions_about_pdf_and_docx_files_are_answered_from_the_right_file(tmp_path: Path) -> None:
    with kb_core.open_kb(kb_dir=tmp_path / "kb") as kb:
        report = kb_core.ingest_paths(kb, [FIXTURES / "good"])
        assert {"report.pdf", "handbook.docx"} <= set(report.added)
        result = evaluate_answers(kb, load_golden(FIXTURES / "golden.jsonl"), out_dir=tmp_path / "out")
    metrics = result.metrics
    # Measured 2026-11-22 with the default model (Qwen2.5-Coder-1.5B): see the README's figures.
    assert metrics.grounded_violations == 0  # never a grounded answer citing the wrong file
    assert metrics.citation_precision is None or metrics.citation_precision >= 0.8
    assert metrics.grounded_rate is not None and metrics.grounded_rate >= 0.5
    assert metrics.correct_refusal_rate == 1.0
