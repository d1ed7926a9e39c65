"""From headings and content (page by page) to a ParsedDocument over a generated *parsed text*.

A PDF or DOCX has no source lines, so kb-documents writes one: every line of a block is one line
of the parsed text, blocks follow each other without blank lines, and (for PDFs) each page starts
with the line ``Page N``. Blocks are ``verbatim`` over that text, so ``path#L12-L20`` names lines
of it exactly. ``metadata["page_lines"][i]`` is the line of ``Page i+1``: the page of line L is
the number of entries <= L (see :func:`page_of_line`). The heading path of every block on a page
starts with ``"Page N"``, so a chunk never spans two pages (the chunker starts a new chunk when
the heading path changes). Headings fold into the block that follows them, except into a table:
a table block starts with its header row, which the chunker repeats in every chunk of the table.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence

import attrs

from kb_core.plugin import Block

MAX_HEADING_CHARS = 200


@attrs.frozen
class Heading:
    """A heading line; level 1 is the outermost."""

    level: int
    text: str


@attrs.frozen
class Content:
    """A paragraph or a table (one row per line)."""

    kind: str
    lines: tuple[str, ...]


@attrs.frozen
class Page:
    """The items of one page (``number`` None for formats without pages, such as DOCX)."""

    number: int | None
    items: tuple[Heading | Content, ...]


@attrs.frozen
class Assembled:
    """The blocks and the line of each page's ``Page N`` line (empty without pages)."""

    blocks: tuple[Block, ...]
    page_lines: tuple[int, ...]
    line_count: int


def page_label(number: int) -> str:
    """The text of a page's first line and the first entry of its blocks' heading paths."""
    return f"Page {number}"


def page_of_line(page_lines: Sequence[int], line: int) -> int | None:
    """The page (1-based) that holds ``line`` of the parsed text; None before the first page line."""
    index = bisect_right(list(page_lines), line)
    return index if index > 0 else None


def _clean(text: str) -> str:
    return " ".join(text.split())


def assemble(pages: Iterable[Page]) -> Assembled:
    """Number the lines, fold headings into the content that follows, attach heading paths."""
    blocks: list[Block] = []
    page_lines: list[int] = []
    stack: list[Heading] = []
    pending: list[tuple[int, str, tuple[str, ...]]] = []  # (line, text, heading path) not yet in a block
    line = 0
    label: tuple[str, ...] = ()

    def path() -> tuple[str, ...]:
        return (*label, *(h.text for h in stack))

    def flush() -> None:
        for number, text, heading_path in pending:
            blocks.append(Block(text, number, number, heading_path, "heading", verbatim=True))
        pending.clear()

    for page in pages:
        flush()  # a heading at the foot of a page stays on its page
        if page.number is not None:
            line += 1
            label = (page_label(page.number),)
            page_lines.append(line)
            pending.append((line, label[0], path()))
        for item in page.items:
            if isinstance(item, Heading):
                text = _clean(item.text)[:MAX_HEADING_CHARS]
                if not text:
                    continue
                while stack and stack[-1].level >= item.level:
                    stack.pop()
                stack.append(Heading(item.level, text))
                line += 1
                pending.append((line, text, path()))
                continue
            lines = [_clean(t) for t in item.lines]
            lines = [t for t in lines if t]
            if not lines:
                continue
            if item.kind == "table":
                flush()  # a table's first line stays its header row (the chunker repeats it)
            start = pending[0][0] if pending else line + 1
            text = "\n".join([*(p[1] for p in pending), *lines])
            line += len(lines)
            blocks.append(Block(text, start, line, path(), item.kind, verbatim=True))
            pending.clear()
    flush()
    return Assembled(tuple(blocks), tuple(page_lines), line)


def parsed_text(blocks: Sequence[Block]) -> str:
    """The parsed text the blocks' line numbers count (what ``path#Lx-Ly`` points into)."""
    lines: dict[int, str] = {}
    for block in blocks:
        for offset, text in enumerate(block.text.split("\n")):
            lines[block.start_line + offset] = text
    return "\n".join(lines.get(n, "") for n in range(1, max(lines, default=0) + 1))
