"""The kb entry point of kb-documents: parsers for PDFs, ``.docx``, ``.xlsx`` and images, and ``kb pages``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_core.plugin import ParserContext, RegisterCommand, RegisterParser, hookimpl
from kb_core.plugin.options import RegisterOptions
from kb_documents.cli import pages_command
from kb_documents.limits import OPTIONS, SECTION, Limits

if TYPE_CHECKING:
    from kb_documents.docx import DocxParser
    from kb_documents.image import ImageParser
    from kb_documents.pdf import PdfParser
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


@hookimpl
def register_parsers(register: RegisterParser) -> None:
    """PDF through pdfium, .docx through zipfile and defusedxml, .xlsx through openpyxl, images through Pillow."""
    register(
        "pdf",
        _pdf,
        extensions=(".pdf",),
        description="PDF text per page (pypdfium2); scanned pages by OCR",
        licence="Apache-2.0",
    )
    register("docx", _docx, extensions=(".docx",), description="Word .docx paragraphs and tables")
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
