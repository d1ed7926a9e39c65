"""From headings and content (page by page) to a ParsedDocument over a generated *parsed text*.

A PDF or DOCX has no source lines, so kb-documents writes one: every line of a block is one line
of the parsed text, blocks follow each other without blank lines, and (for PDFs) each page starts
with the line ``Page N``. Blocks are ``verbatim`` over that text, so ``path#L12-L20`` names lines
of it exactly. ``metadata["page_lines"][i]`` is the line of ``Page i+1``: the page of line L is
the number of entries <= L (see :func:`page_of_line`). The heading path of every block on a page
starts with ``"Page N"``, so a chunk never spans two pages (the chunker starts a new chunk when
the heading path changes). Headings fold into the block that follows them, except into a table:
a table block starts with its header row, which the chunker repeats in every chunk of the table.

A table carried over a page break is two blocks. When the first item of a page is a table that
lines up with the table that was the last item of the page before (as many columns, over the same
x-ranges: :func:`kb_documents.grid.same_grid`) and does not start with that table's header row
again, its block gets that header (``Block.header``): its first line is a data row, and the chunker
writes the header before its rows. A page that repeats the header keeps it as its first line.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from statistics import median

import attrs

from kb_core.plugin import Block
from kb_documents.grid import Columns, same_grid, table_columns
from kb_documents.layout import Line

MAX_HEADING_CHARS = 200


@attrs.frozen
class Heading:
    """A heading line; level 1 is the outermost."""

    level: int
    text: str


@attrs.frozen
class Content:
    """A paragraph or a table (one row per line); a PDF's table gives its columns' x-ranges and text size."""

    kind: str
    lines: tuple[str, ...]
    columns: Columns = ()
    size: float = 0.0


def content_of(kind: str, lines: Sequence[Line]) -> Content:
    """A PDF page's lines as one item; a table's with its columns and text size (to find it continued)."""
    texts = tuple(line.text for line in lines)
    if kind != "table" or not lines:
        return Content(kind, texts)
    return Content(kind, texts, table_columns(lines), median(line.size for line in lines))


@attrs.frozen
class Page:
    """The items of one page (``number`` None for formats without pages, such as DOCX).

    A deck's slide, an e-book's chapter or a notebook's cell is a page too, named by ``unit``
    (``Slide 3``); a ``fresh`` page starts without the headings of the pages before it.
    """

    number: int | None
    items: tuple[Heading | Content, ...]
    unit: str = "Page"
    fresh: bool = False


@attrs.frozen
class Assembled:
    """The blocks and the line of each page's ``Page N`` line (empty without pages)."""

    blocks: tuple[Block, ...]
    page_lines: tuple[int, ...]
    line_count: int


def page_label(number: int, unit: str = "Page") -> str:
    """The text of a page's first line and the first entry of its blocks' heading paths."""
    return f"{unit} {number}"


def page_of_line(page_lines: Sequence[int], line: int) -> int | None:
    """The page (1-based) that holds ``line`` of the parsed text; None before the first page line."""
    index = bisect_right(list(page_lines), line)
    return index if index > 0 else None


def _clean(text: str) -> str:
    return " ".join(text.split())


def _code(text: str) -> str:
    """A line of code: its indentation kept (tabs as four spaces), other runs of space as they are."""
    line = text.expandtabs(4).rstrip()
    return line if line.strip() else ""


def assemble(pages: Iterable[Page]) -> Assembled:
    """Number the lines, fold headings into the content that follows, attach heading paths."""
    blocks: list[Block] = []
    page_lines: list[int] = []
    stack: list[Heading] = []
    pending: list[tuple[int, str, tuple[str, ...]]] = []  # (line, text, heading path) not yet in a block
    line = 0
    label: tuple[str, ...] = ()
    ending: tuple[Content, str] | None = None  # the table that ended the page before, and its header row

    def path() -> tuple[str, ...]:
        return (*label, *(h.text for h in stack))

    def flush() -> None:
        for number, text, heading_path in pending:
            blocks.append(Block(text, number, number, heading_path, "heading", verbatim=True))
        pending.clear()

    def close_page() -> None:
        """End a page: a page of headings alone (a title slide, a notebook's title cell) is a block of its own,
        not headings the chunker folds into the next page's first block (a chunk would start on this page)."""
        if content or len(pending) < 2 or not page_lines or pending[0][0] != page_lines[-1]:
            flush()  # a heading at the foot of a page stays on its page
            return
        text = "\n".join(p[1] for p in pending)
        blocks.append(Block(text, pending[0][0], pending[-1][0], pending[-1][2], "paragraph", verbatim=True))
        pending.clear()

    content = False  # whether the page being read has a block besides headings
    for page in pages:
        close_page()
        content = False
        above, ending = (ending if page.number is not None else None), None
        if page.number is not None:
            line += 1
            label = (page_label(page.number, page.unit),)
            if page.fresh:
                stack.clear()
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
                above = ending = None  # a heading starts something new
                continue
            lines = [_code(t) if item.kind == "code" else _clean(t) for t in item.lines]
            lines = [t for t in lines if t]
            if not lines:
                continue
            header = ""
            if item.kind == "table":
                flush()  # a table's first line stays its header row (the chunker repeats it)
                header = above[1] if above is not None and _continues(above, item, lines[0]) else ""
            above, ending = None, ((item, header or lines[0]) if item.kind == "table" else None)
            start = pending[0][0] if pending else line + 1
            text = "\n".join([*(p[1] for p in pending), *lines])
            line += len(lines)
            blocks.append(Block(text, start, line, path(), item.kind, verbatim=True, header=header))
            pending.clear()
            content = True
    close_page()
    return Assembled(tuple(blocks), tuple(page_lines), line)


def _continues(above: tuple[Content, str], table: Content, first: str) -> bool:
    """Whether ``table`` (first line ``first``) continues the table ``above`` (with its header row) on the next page."""
    previous, header = above
    if not same_grid(previous.columns, table.columns, min(previous.size, table.size)):
        return False
    cells, named = _cells(first), _cells(header)
    repeated = cells == named or (cells[1:] == named[1:] and any(named[1:]))  # "Segment (continued) | 2019"
    return not repeated


def _cells(row: str) -> list[str]:
    return [" ".join(cell.split()).casefold() for cell in row.split("|")]


def parsed_text(blocks: Sequence[Block]) -> str:
    """The parsed text the blocks' line numbers count (what ``path#Lx-Ly`` points into)."""
    lines: dict[int, str] = {}
    for block in blocks:
        for offset, text in enumerate(block.text.split("\n")):
            lines[block.start_line + offset] = text
    return "\n".join(lines.get(n, "") for n in range(1, max(lines, default=0) + 1))
