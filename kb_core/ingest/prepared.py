"""A document read and parsed, waiting to be chunked and written (what the ingester and a container share)."""

from __future__ import annotations

import attrs

from kb_core.types import Block, Document


@attrs.frozen
class Prepared:
    """A parsed ``document``, its ``blocks`` and the parser's ``warnings``."""

    document: Document
    blocks: tuple[Block, ...]
    warnings: list[str]
