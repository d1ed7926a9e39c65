"""kb-tesseract passes the core's contract for OCR engines, with the real engine and Tesseract's data."""

from __future__ import annotations

import pytest
from tesseract_pages import ENGLISH_TABLE, english_page

from kb_core.plugin import OcrEngine, OcrImage
from kb_core.testing import OcrEngineContract
from kb_tesseract.engine import TesseractEngine

pytestmark = pytest.mark.needs_ocr_data


class TestTesseractContract(OcrEngineContract):
    @pytest.fixture
    def engine(self, shared_engine: TesseractEngine) -> OcrEngine:
        return shared_engine

    @pytest.fixture
    def text_page(self) -> tuple[OcrImage, list[str]]:
        return english_page().ocr_image(), ["Annual", "dividend", "1.25", *ENGLISH_TABLE[1]]
