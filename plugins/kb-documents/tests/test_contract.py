"""kb-documents' parsers pass the contract test kit for binary parsers, on the generated fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kb_core.testing import BytesParserContract
from kb_documents.docx import DocxParser
from kb_documents.pdf import PdfParser

GOOD = Path(__file__).resolve().parents[1] / "fixtures" / "good"


class TestPdfParserContract(BytesParserContract):
    samples = tuple((GOOD / name).read_bytes() for name in ("report.pdf", "columns.pdf", "brochure.pdf"))
    sample_path = "docs/report.pdf"

    @pytest.fixture
    def parser(self) -> Any:
        return PdfParser()


class TestDocxParserContract(BytesParserContract):
    samples = ((GOOD / "handbook.docx").read_bytes(),)
    sample_path = "docs/handbook.docx"

    @pytest.fixture
    def parser(self) -> Any:
        return DocxParser()
