"""kb-documents: PDF and Word (.docx) documents for kb, with citations that map to pages.

The parsers (:mod:`kb_documents.pdf`, :mod:`kb_documents.docx`) read a file's bytes
(``parse_bytes``); see :mod:`kb_documents.binary`. The entry point is :mod:`kb_documents.plugin`,
which imports pypdfium2 only when a parser is made, so other kb commands never load it.
"""
