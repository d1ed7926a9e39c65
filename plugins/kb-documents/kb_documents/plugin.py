"""The kb entry point of kb-documents: parsers for ``.pdf`` and ``.docx``."""

from __future__ import annotations

from typing import Any

from kb_core import hookimpl
from kb_documents.cli import pages_command
from kb_documents.docx import DocxParser
from kb_documents.limits import Limits
from kb_documents.pdf import PdfParser


@hookimpl
def register_parsers(register: Any) -> None:
    """PDF through pdfium, Word .docx through zipfile and defusedxml."""
    register("pdf", lambda config: PdfParser(Limits.from_config(config)), extensions=(".pdf",))
    register("docx", lambda config: DocxParser(Limits.from_config(config)), extensions=(".docx",))


@hookimpl
def register_commands(register: Any) -> None:
    """``kb pages CITATION...``: the page of a citation, as a link that opens the PDF there."""
    register("pages", pages_command)
