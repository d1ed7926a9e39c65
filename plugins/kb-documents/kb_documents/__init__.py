"""kb-documents: PDF and Word (.docx) documents for kb, with citations that map to pages.

Parsers offer ``parse_bytes(data, path)`` (for a core that hands them the file's bytes) and
``parse(text, path)`` (kb's current contract; see :mod:`kb_documents.binary`).
"""

from kb_documents.assemble import page_of_line, parsed_text
from kb_documents.docx import DocxParser
from kb_documents.limits import Limits
from kb_documents.pdf import PdfParser

__all__ = ["DocxParser", "Limits", "PdfParser", "page_of_line", "parsed_text"]
