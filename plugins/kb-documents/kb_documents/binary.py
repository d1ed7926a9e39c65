"""Parsers of binary formats under kb's text-only parser contract.

kb's core reads a file, decodes it as UTF-8 and calls ``parser.parse(text, path)``. A binary
parser therefore offers two entry points:

* ``parse_bytes(data, path)``: the real one, for a core that hands parsers the file's bytes
  (the change proposed in ``CORE_PATCH.md``);
* ``parse(text, path)``: what works today. UTF-8 decoding is lossless when it succeeds, so the
  bytes are recovered exactly with ``text.encode("utf-8")``; when the core had to replace
  undecodable bytes (U+FFFD in the text) they are gone, and the parser says so in one line.
"""

from __future__ import annotations

from typing import Protocol

from kb_core import KbError, ParsedDocument

NEEDS_BYTES_HINT = "this needs kb's core to hand parsers the file's bytes (parse_bytes; see kb-documents CORE_PATCH.md)"


class BytesParser(Protocol):
    """A parser that reads a file's bytes."""

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument: ...


def recover_bytes(text: str, kind: str) -> bytes:
    """The file's bytes from the text the core decoded, or a KbError when decoding lost some."""
    if "\ufffd" in text:
        if kind == "PDF" and "/Encrypt" in text:
            raise KbError(
                "the PDF is encrypted (password protected); kb cannot read it",
                hint="save an unprotected copy (for example qpdf --decrypt) and ingest that",
            )
        raise KbError(f"this {kind} holds binary data that kb decoded as text, losing bytes", hint=NEEDS_BYTES_HINT)
    return text.encode("utf-8", errors="surrogatepass")


class BinaryParser:
    """Base class: ``parse`` recovers the bytes and calls ``parse_bytes``."""

    kind = "file"

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """Parse the file's bytes (subclasses)."""
        raise NotImplementedError

    def parse(self, text: str, path: str) -> ParsedDocument:
        """Parse the text kb's core decoded: works when the decoding lost nothing."""
        return self.parse_bytes(recover_bytes(text, self.kind), path)
