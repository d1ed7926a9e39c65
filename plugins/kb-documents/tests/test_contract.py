"""kb-documents' parsers pass the contract test kit for binary parsers, on the generated fixtures."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from kb_core.testing import BytesParserContract
from kb_documents.docx import DocxParser
from kb_documents.pdf import PdfParser
from kb_documents.xlsx import XlsxParser

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


def _workbook() -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Herons"
    for row in (["Bird", "Wingspan (cm)", "Habitat"], ["Grey heron", 185, "wetlands"], ["Little egret", 95, "coasts"]):
        sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


class TestXlsxParserContract(BytesParserContract):
    samples = (_workbook(),)
    sample_path = "docs/herons.xlsx"

    @pytest.fixture
    def parser(self) -> Any:
        return XlsxParser()
