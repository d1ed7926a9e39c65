"""The kb entry point of kb-documents: parsers for ``.pdf`` and ``.docx``, and ``kb pages``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_core.plugin import FactoryContext, RegisterCommand, RegisterParser, hookimpl
from kb_documents.cli import pages_command
from kb_documents.limits import Limits

if TYPE_CHECKING:
    from kb_documents.docx import DocxParser
    from kb_documents.pdf import PdfParser
    from kb_documents.xlsx import XlsxParser


def _pdf(ctx: FactoryContext) -> PdfParser:
    from kb_documents.pdf import PdfParser

    return PdfParser(Limits.from_config(ctx.config))


def _docx(ctx: FactoryContext) -> DocxParser:
    from kb_documents.docx import DocxParser

    return DocxParser(Limits.from_config(ctx.config))


def _xlsx(ctx: FactoryContext) -> XlsxParser:
    from kb_documents.xlsx import XlsxParser

    return XlsxParser(Limits.from_config(ctx.config))


@hookimpl
def register_parsers(register: RegisterParser) -> None:
    """PDF through pdfium, Word .docx through zipfile and defusedxml, Excel .xlsx through openpyxl."""
    register("pdf", _pdf, extensions=(".pdf",), description="PDF text per page (pypdfium2)", licence="Apache-2.0")
    register("docx", _docx, extensions=(".docx",), description="Word .docx paragraphs and tables")
    register("xlsx", _xlsx, extensions=(".xlsx",), description="Excel .xlsx sheets as tables (openpyxl)", licence="MIT")


@hookimpl
def register_commands(register: RegisterCommand) -> None:
    """``kb pages CITATION...``: the page of a citation, as a link that opens the PDF there."""
    register("pages", pages_command)
