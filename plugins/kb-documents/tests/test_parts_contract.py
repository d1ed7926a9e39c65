"""The part parsers (.pptx, .odp, .odt, .ods, .epub, .ipynb) pass the contract test kit for binary parsers."""

from __future__ import annotations

from typing import Any

import pytest
from part_formats import code_cell, epub, markdown_cell, notebook, odf, pptx, slide_xml, xhtml

from kb_core.testing import BytesParserContract
from kb_documents.epub import EpubParser
from kb_documents.notebook import NotebookParser
from kb_documents.odf import OdfParser
from kb_documents.pptx import PptxParser


class TestPptxParserContract(BytesParserContract):
    samples = (pptx([(slide_xml("Herons", [["Grey heron"]], [["Bird", "cm"], ["Egret", "95"]]), ["notes"])]),)
    sample_path = "docs/herons.pptx"

    @pytest.fixture
    def parser(self) -> Any:
        return PptxParser()


class TestOdtParserContract(BytesParserContract):
    samples = (odf("text", '<text:h text:outline-level="1">Herons</text:h><text:p>They wade.</text:p>'),)
    sample_path = "docs/herons.odt"

    @pytest.fixture
    def parser(self) -> Any:
        return OdfParser(".odt")


class TestOdpParserContract(BytesParserContract):
    samples = (
        odf(
            "presentation",
            '<draw:page><draw:frame presentation:class="title"><draw:text-box><text:p>Herons</text:p>'
            "</draw:text-box></draw:frame><draw:custom-shape><text:p>They wade.</text:p></draw:custom-shape>"
            "</draw:page>",
        ),
    )
    sample_path = "docs/herons.odp"

    @pytest.fixture
    def parser(self) -> Any:
        return OdfParser(".odp")


class TestEpubParserContract(BytesParserContract):
    samples = (epub([("h.xhtml", xhtml("Herons", "<h1>Herons</h1><p>They wade.</p>"))], title="Birds"),)
    sample_path = "docs/birds.epub"

    @pytest.fixture
    def parser(self) -> Any:
        return EpubParser()


class TestNotebookParserContract(BytesParserContract):
    samples = (notebook([markdown_cell("# Herons\nThey wade."), code_cell("count = 3")]),)
    sample_path = "docs/herons.ipynb"

    @pytest.fixture
    def parser(self) -> Any:
        return NotebookParser()
