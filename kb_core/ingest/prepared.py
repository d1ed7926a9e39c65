"""A document read and parsed, waiting to be chunked and written (what the ingester and a container share)."""

from __future__ import annotations

import attrs

from kb_core.types import Block, Document, ParsedDocument

NUL = "\x00"


@attrs.frozen
class Prepared:
    """A parsed ``document``, its ``blocks`` and the parser's ``warnings``."""

    document: Document
    blocks: tuple[Block, ...]
    warnings: list[str]


def without_nul(parsed: ParsedDocument) -> tuple[ParsedDocument, int]:
    """``parsed`` with the NUL characters (U+0000) of its title and blocks removed, and how many there were.

    A text file holding a NUL byte is binary and never parsed; a NUL a parser writes (text extracted from a PDF)
    carries nothing, and PostgreSQL text cannot hold one: every store gets the same text without them.
    """
    count = parsed.title.count(NUL) + sum(
        b.text.count(NUL) + b.header.count(NUL) + sum(h.count(NUL) for h in b.heading_path) for b in parsed.blocks
    )
    if not count:
        return parsed, 0
    blocks = tuple(
        attrs.evolve(
            b,
            text=b.text.replace(NUL, ""),
            header=b.header.replace(NUL, ""),
            heading_path=tuple(h.replace(NUL, "") for h in b.heading_path),
        )
        for b in parsed.blocks
    )
    return attrs.evolve(parsed, title=parsed.title.replace(NUL, ""), blocks=blocks), count
