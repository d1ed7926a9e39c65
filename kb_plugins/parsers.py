"""Built-in document parsers: plain text (Markdown and HTML follow)."""

from __future__ import annotations

from typing import Any

from kb_core import hookimpl
from kb_core.types import Block, ParsedDocument


class TextParser:
    """Plain text: paragraphs separated by blank lines, each with its line span."""

    def parse(self, text: str, path: str) -> ParsedDocument:
        blocks: list[Block] = []
        lines = text.splitlines()
        start = None
        for number, line in enumerate(lines + [""], start=1):
            if line.strip() and start is None:
                start = number
            elif not line.strip() and start is not None:
                blocks.append(Block("\n".join(lines[start - 1 : number - 1]), start, number - 1))
                start = None
        title = blocks[0].text.splitlines()[0].strip()[:200] if blocks else path.rsplit("/", 1)[-1]
        return ParsedDocument(title=title, blocks=tuple(blocks))


@hookimpl
def register_parsers(register: Any) -> None:
    """Plain text."""
    register("text", lambda config: TextParser(), extensions=(".txt", ".text", ".rst", ".log"))
