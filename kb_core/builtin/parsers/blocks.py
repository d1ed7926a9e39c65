"""Lines and blocks shared by the parsers: kb's line numbering, headings folded into the block they introduce."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

import attrs

from kb_core import bounds
from kb_core.types import Block

MAX_TITLE_CHARS = 200
MAX_HEADING_CHARS = 200
MAX_LIST_INDENT = 8
NEWLINE = re.compile(r"\r\n|\r|\n")
SPACES = re.compile(r"\s+")
#: The most cells a table row keeps (CSV, HTML): past it a row is cut.
MAX_CELLS_PER_ROW = int(bounds.ROW_CELLS.high)


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as kb numbers them: split on ``\\r\\n``, ``\\r`` or ``\\n`` only."""
    lines = NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def table_row(cells: Sequence[str]) -> str:
    """A table row as kb keeps it, ``cell | cell``: its trailing empty cells left out ('' for none)."""
    kept = list(cells)
    while kept and not kept[-1]:
        kept.pop()
    return " | ".join(kept)


def file_name(path: str) -> str:
    return PurePosixPath(path.replace("\\", "/")).name or path or "untitled"


def clip(text: str, limit: int) -> str:
    return SPACES.sub(" ", text.replace("\ufeff", "")).strip()[:limit].rstrip()


@attrs.frozen
class Heading:
    """A heading found by a parser, before it is folded into the block that follows it."""

    level: int
    title: str
    text: str
    start_line: int
    end_line: int


@attrs.frozen
class Content:
    """A content block found by a parser, before heading paths are attached (``line_spans``: see Block)."""

    kind: str
    text: str
    start_line: int
    end_line: int
    line_spans: tuple[tuple[int, int], ...] = ()


def assemble(items: Iterable[Heading | Content], source_lines: Sequence[str] | None = None) -> list[Block]:
    """Attach heading paths and fold each run of headings into the block that follows it.

    With ``source_lines`` a folded block's text is the source from its heading to its end;
    without, it is the heading texts and the content text joined by newlines. A table is never
    folded: the headings before it stay blocks of their own (the chunker keeps a heading with the
    block after it), so a table block's first line is its header row, which the chunker repeats.
    """
    stack: list[Heading] = []
    pending: list[tuple[Heading, tuple[str, ...]]] = []
    blocks: list[Block] = []

    def flush_pending() -> None:
        for heading, heading_path in pending:
            blocks.append(
                Block(
                    heading.text,
                    heading.start_line,
                    heading.end_line,
                    heading_path,
                    "heading",
                    verbatim=source_lines is not None,
                )
            )
        pending.clear()

    for item in items:
        if isinstance(item, Heading):
            if any(h.level >= item.level for h, _ in pending):
                flush_pending()
            while stack and stack[-1].level >= item.level:
                stack.pop()
            stack.append(item)
            pending.append((item, tuple(h.title for h in stack)))
            continue
        if item.kind == "table":
            flush_pending()
        start = pending[0][0].start_line if pending else item.start_line
        if source_lines is not None:
            text = "\n".join(source_lines[start - 1 : item.end_line])
        else:
            text = "\n".join([*(h.text for h, _ in pending), item.text])
        spans = item.line_spans if source_lines is None else ()  # (only tables have them: no heading is pending)
        path = tuple(h.title for h in stack)
        blocks.append(Block(text, start, item.end_line, path, item.kind, source_lines is not None, spans))
        pending.clear()
    flush_pending()
    return blocks
