"""The kb entry point of kb-documents: parsers for PDFs, Office and OpenDocument files, e-books, notebooks and
images, and ``kb pages``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kb_core.plugin import ParserContext, RegisterCommand, RegisterParser, hookimpl
from kb_core.plugin.options import RegisterOptions
from kb_documents.cli import pages_command
from kb_documents.limits import OPTIONS, SECTION, Limits

if TYPE_CHECKING:
    from kb_documents.docx import DocxParser
    from kb_documents.epub import EpubParser
    from kb_documents.image import ImageParser
    from kb_documents.notebook import NotebookParser
    from kb_documents.odf import OdfParser
    from kb_documents.pdf import PdfParser
    from kb_documents.pptx import PptxParser
    from kb_documents.xlsx import XlsxParser

#: The image files the ``image`` parser reads (kept here so that listing parsers imports no Pillow).
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".bmp", ".gif")


def _pdf(ctx: ParserContext) -> PdfParser:
    from kb_documents.ocr_pages import Ocr
    from kb_documents.pdf import PdfParser

    return PdfParser(Limits.from_config(ctx.config), Ocr.from_context(ctx))


def _docx(ctx: ParserContext) -> DocxParser:
    from kb_documents.docx import DocxParser

    return DocxParser(Limits.from_config(ctx.config))


def _image(ctx: ParserContext) -> ImageParser:
    from kb_documents.image import ImageParser
    from kb_documents.ocr_pages import Ocr

    return ImageParser(Limits.from_config(ctx.config), Ocr.from_context(ctx))


def _xlsx(ctx: ParserContext) -> XlsxParser:
    from kb_documents.xlsx import XlsxParser

    return XlsxParser(Limits.from_config(ctx.config))


def _pptx(ctx: ParserContext) -> PptxParser:
    from kb_documents.pptx import PptxParser

    return PptxParser(Limits.from_config(ctx.config))


def _odf(kind: str) -> Callable[[ParserContext], OdfParser]:
    def factory(ctx: ParserContext) -> OdfParser:
        from kb_documents.odf import OdfParser

        return OdfParser(kind, Limits.from_config(ctx.config))

    return factory


def _epub(ctx: ParserContext) -> EpubParser:
    from kb_documents.epub import EpubParser

    return EpubParser(Limits.from_config(ctx.config))


def _notebook(ctx: ParserContext) -> NotebookParser:
    from kb_documents.notebook import NotebookParser

    return NotebookParser(Limits.from_config(ctx.config))


@hookimpl
def register_parsers(register: RegisterParser) -> None:
    """PDF through pdfium; .docx, .pptx, OpenDocument and .epub through zipfile and defusedxml; .xlsx through
    openpyxl; notebooks through json; images through Pillow."""
    register(
        "pdf",
        _pdf,
        extensions=(".pdf",),
        description="PDF text per page (pypdfium2); scanned pages by OCR",
        licence="Apache-2.0",
    )
    register("docx", _docx, extensions=(".docx",), description="Word .docx paragraphs and tables")
    register("pptx", _pptx, extensions=(".pptx",), description="PowerPoint .pptx slides, tables and speaker notes")
    register("odt", _odf(".odt"), extensions=(".odt",), description="OpenDocument text: headings, paragraphs, tables")
    register("ods", _odf(".ods"), extensions=(".ods",), description="OpenDocument spreadsheets as tables")
    register("odp", _odf(".odp"), extensions=(".odp",), description="OpenDocument slides, tables and speaker notes")
    register("epub", _epub, extensions=(".epub",), description="EPUB e-books, chapter by chapter")
    register("ipynb", _notebook, extensions=(".ipynb",), description="Jupyter notebooks: markdown, code, text outputs")
    register("xlsx", _xlsx, extensions=(".xlsx",), description="Excel .xlsx sheets as tables (openpyxl)", licence="MIT")
    register(
        "image",
        _image,
        extensions=IMAGE_EXTENSIONS,
        description="photos and scanned images read by OCR (Pillow)",
        licence="MIT-CMU",
        needs="an OCR engine (pip install kb-tesseract)",
    )


@hookimpl
def register_options(register: RegisterOptions) -> None:
    """The limits of ``[backends.documents]``, checked by kb at start."""
    register(SECTION, OPTIONS)


@hookimpl
def register_commands(register: RegisterCommand) -> None:
    """``kb pages CITATION...``: the page of a citation, as a link that opens the PDF there."""
    register("pages", pages_command)
