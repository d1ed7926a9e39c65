"""An HTML table as kb keeps it: one line a row, ``cell | cell``, every value under its column.

Cells keep their places (an empty cell stays, a ``colspan`` adds empty cells after its own), so a
number keeps its column's header; a ``<caption>`` is kept apart. A row holds at most
:data:`MAX_CELLS_PER_ROW` cells and a ``colspan`` spans at most :data:`MAX_COLSPAN` columns, so a
page of ``<td colspan=...>`` cannot make text many times its own size (cells past the cap add their
text to the row's last cell).
"""

from __future__ import annotations

import attrs

from kb_core.builtin.parsers.blocks import MAX_CELLS_PER_ROW, SPACES, table_row

MAX_COLSPAN = 20


@attrs.define
class Table:
    """The rows of an HTML table being collected: each row a list of cells, each cell a list of text parts.

    Cells keep their places (an empty cell stays, a ``colspan`` adds empty cells after its own), so
    every value stays under its column's header; text in a ``<caption>`` is kept apart.
    """

    outer_tables: int  # <table> elements open outside this one
    rows: list[list[list[str]]] = attrs.field(factory=lambda: [[]])
    spans: list[tuple[int, int] | None] = attrs.field(factory=lambda: [None])  # each row's first and last line
    caption: list[str] = attrs.field(factory=list)
    in_caption: bool = False
    owed: int = 0  # empty cells a colspan still adds before the next cell
    caption_lines: tuple[int, int] | None = None  # first and last source line of the caption's text

    def add(self, text: str, first_line: int = 0, last_line: int = 0) -> None:
        """Text inside the table: into the caption, else the current cell (one is opened for stray text)."""
        if self.in_caption:
            self.caption.append(text)
            if text.strip():
                self.caption_lines = _widen(self.caption_lines, first_line, last_line)
            return
        row = self.rows[-1]
        if not row:
            if not text.strip():
                return
            row.append([])
        row[-1].append(text)
        if text.strip():
            self.spans[-1] = _widen(self.spans[-1], first_line, last_line)

    def row(self) -> None:
        """Start a new row."""
        self.in_caption = False
        if self.rows[-1]:
            self.rows.append([])
            self.spans.append(None)
        self.owed = 0

    def cell(self, colspan: int) -> None:
        """Start a new cell spanning ``colspan`` columns."""
        self.in_caption = False
        row = self.rows[-1]
        room = MAX_CELLS_PER_ROW - len(row)
        if room <= 0:  # past the cap: the text goes on into the row's last cell
            return
        row.extend([] for _ in range(min(self.owed, room - 1)))
        row.append([])
        self.owed = colspan - 1

    def text(self) -> tuple[str, str, tuple[tuple[int, int], ...]]:
        """The caption, the rows as lines ``cell | cell`` (no trailing empty cells, no empty rows), their spans."""
        lines = []
        spans = []
        for row, span in zip(self.rows, self.spans):
            line = table_row([SPACES.sub(" ", "".join(parts)).strip() for parts in row])
            if line and span is not None:
                lines.append(line)
                spans.append(span)
        return SPACES.sub(" ", "".join(self.caption)).strip(), "\n".join(lines), tuple(spans)


def _widen(span: tuple[int, int] | None, first: int, last: int) -> tuple[int, int]:
    return (first, last) if span is None else (span[0], max(span[1], last))


def colspan_of(value: str | None) -> int:
    try:
        return min(max(int((value or "1").strip()), 1), MAX_COLSPAN)
    except ValueError:
        return 1
