"""Binary formats under kb's parser contract: ``parse_bytes`` reads the file, ``parse`` is the fallback.

kb-core 0.2 and later hand a parser that has ``parse_bytes(data, path)`` (a
:class:`kb_core.BytesParser`) the file's bytes. ``parse(text, path)`` remains for callers that
only have decoded text: UTF-8 decoding is lossless when it succeeds, so the bytes are recovered
exactly; when undecodable bytes were replaced (U+FFFD) they are gone, and the parser says so.

The PDF and image parsers also render a page to show (a :class:`kb_core.plugin.pages.PageRenderer`);
:func:`png_page` encodes it.
"""

from __future__ import annotations

import io
from typing import Any

from kb_core import KbError
from kb_core.plugin import ParsedDocument
from kb_core.plugin.pages import RenderedPage

NEEDS_BYTES_HINT = "pass the file's bytes to parse_bytes (kb-core 0.2 and later do this when ingesting)"


def recover_bytes(text: str, kind: str) -> bytes:
    """The file's bytes from text decoded as UTF-8, or a KbError when decoding lost some."""
    if "\ufffd" in text:
        if kind == "PDF" and "/Encrypt" in text:
            raise KbError(
                "the PDF is encrypted (password protected); kb cannot read it",
                hint="save an unprotected copy (for example qpdf --decrypt) and ingest that",
            )
        raise KbError(f"this {kind} holds binary data that was decoded as text, losing bytes", hint=NEEDS_BYTES_HINT)
    return text.encode("utf-8", errors="surrogatepass")


class BinaryParser:
    """Base class: ``parse`` recovers the bytes and calls ``parse_bytes``; ``kind`` names the format in messages."""

    kind = "file"

    def check_size(self, data: bytes, max_bytes: int) -> None:
        """A KbError when ``data`` is over ``max_bytes`` (``[backends.documents] max_bytes``)."""
        if len(data) > max_bytes:
            raise KbError(
                f"the {self.kind} is {len(data)} bytes, over the limit of {max_bytes}",
                hint="raise [backends.documents] max_bytes to read it",
            )

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """Parse the file's bytes (subclasses)."""
        raise NotImplementedError

    def parse(self, text: str, path: str) -> ParsedDocument:
        """Parse decoded text: works when the decoding lost nothing."""
        return self.parse_bytes(recover_bytes(text, self.kind), path)


def png_page(image: Any) -> RenderedPage:
    """A Pillow image of a page, encoded anew as a PNG to show (never the file's own bytes)."""
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=6)
    return RenderedPage(out.getvalue(), "image/png", image.width, image.height)
