"""Plain text: paragraphs separated by blank lines."""

from __future__ import annotations

from kb_core.builtin.parsers.blocks import (
    MAX_TITLE_CHARS,
    clip,
    file_name,
    split_lines,
)
from kb_core.types import Block, ParsedDocument


class TextParser:
    """Plain text: paragraphs separated by blank lines, each with its line span."""

    def parse(self, text: str, path: str) -> ParsedDocument:
        """Split ``text`` into paragraphs; the title is the first line of the first paragraph."""
        lines = split_lines(text)
        blocks: list[Block] = []
        start: int | None = None
        for number, line in enumerate([*lines, ""], start=1):
            if line.strip() and start is None:
                start = number
            elif not line.strip() and start is not None:
                blocks.append(Block("\n".join(lines[start - 1 : number - 1]), start, number - 1, verbatim=True))
                start = None
        title = clip(blocks[0].text.splitlines()[0], MAX_TITLE_CHARS) if blocks else ""
        return ParsedDocument(title=title or file_name(path), blocks=tuple(blocks))
