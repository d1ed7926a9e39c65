"""CSV and TSV through the standard library's csv module: one table, one row per line.

The first non-empty row is the header; every row becomes one line ``cell | cell | ...`` (a cell's
line breaks and runs of blanks become one space, trailing empty cells are dropped, empty rows
skipped). The rows make one block of kind ``"table"``, so the chunker repeats the header in every
chunk of a long file. The text is not the file's own, so the block is not verbatim; its
``line_spans`` give each row's physical lines (a quoted cell over three lines makes a row of
three lines), and a citation names the CSV's own lines.

The delimiter is the one of ``, ; TAB |`` that splits the first lines into the most rows of the
same width (two cells at least); failing that, a tab for ``.tsv`` and a comma otherwise. Damaged
CSV is read as far as the csv module can: a row it cannot read is skipped with a warning. Rows
past ``MAX_ROWS``, cells past ``MAX_CELLS_PER_ROW`` and characters past ``MAX_CELL_CHARS`` are
left out, with a warning.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from kb_core.builtin.parsers.blocks import MAX_CELLS_PER_ROW, file_name, split_lines, table_row
from kb_core.types import Block, ParsedDocument

DELIMITERS = (",", ";", "\t", "|")
#: Rows read at most (the header included).
MAX_ROWS = 200_000
#: Cells kept of one row.
#: Characters kept of one cell.
MAX_CELL_CHARS = 2000
#: Lines read to choose the delimiter.
SAMPLE_LINES = 50
#: Characters of a line read to choose the delimiter.
SAMPLE_LINE_CHARS = 4000
#: A row over more lines than this is reported (most likely a quote that is never closed).
LONG_ROW_LINES = 100


def _source(lines: Sequence[str]) -> Iterator[str]:
    """The lines as the csv module reads them: each ending in a newline, without NUL characters."""
    for line in lines:
        yield line.replace("\0", "") + "\n"


def choose_delimiter(lines: Sequence[str], path: str) -> str:
    """The delimiter that splits the first lines into the most rows of one width (two cells or more)."""
    sample = [line[:SAMPLE_LINE_CHARS] for line in lines[:SAMPLE_LINES]]
    best, best_score = "\t" if path.lower().endswith(".tsv") else ",", (0, 0)
    for delimiter in DELIMITERS:
        widths: Counter[int] = Counter()
        for read in _read_rows(csv.reader(_source(sample), delimiter=delimiter)):
            if not isinstance(read, str) and len(read[0]) > 1:
                widths[len(read[0])] += 1
        if widths:
            width, rows = max(widths.items(), key=lambda item: (item[1], item[0]))
            if (rows, width) > best_score:
                best, best_score = delimiter, (rows, width)
    return best


def _read_rows(reader: Any) -> Iterator[tuple[list[str], int, int] | str]:
    """What a csv ``reader`` reads: each row with its first and last line, or where and why it could
    not read one (every error consumes a line; reading stops at an error that does not)."""
    consumed = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield f"line {reader.line_num} ({exc})"
            if reader.line_num <= consumed:
                return
            consumed = reader.line_num
            continue
        first, consumed = consumed + 1, reader.line_num
        yield row, first, consumed


def _cell(value: str) -> tuple[str, bool]:
    """A cell as one line, and whether it was cut."""
    text = " ".join(value.split())
    return text[:MAX_CELL_CHARS], len(text) > MAX_CELL_CHARS


class CsvParser:
    """CSV and TSV files: a table whose rows are lines, the first row its header, each cited by its own lines."""

    def parse(self, text: str, path: str) -> ParsedDocument:
        """Parse delimited ``text``; never raises."""
        lines = split_lines(text.removeprefix("\ufeff"))
        delimiter = choose_delimiter(lines, path)
        reader = csv.reader(_source(lines), delimiter=delimiter)
        rows: list[str] = []
        spans: list[tuple[int, int]] = []
        warnings: list[str] = []
        errors: list[str] = []
        cut_cells = cut_rows = False
        long_row = ""
        for read in _read_rows(reader):
            if isinstance(read, str):
                errors.append(read)
                continue
            row, first, consumed = read
            if len(row) > MAX_CELLS_PER_ROW:
                row, cut_rows = row[:MAX_CELLS_PER_ROW], True
            cells = []
            for value in row:
                cell, cut = _cell(value)
                cells.append(cell)
                cut_cells = cut_cells or cut
            line = table_row(cells)
            if not line:
                continue
            if len(rows) == MAX_ROWS:
                warnings.append(f"read the first {MAX_ROWS} rows; the rows from line {first} on are left out")
                break
            rows.append(line)
            spans.append((first, consumed))
            if consumed - first >= LONG_ROW_LINES and not long_row:
                long_row = f"the row at line {first} runs over {consumed - first + 1} lines (a quote never closed?)"
        if errors:
            warnings.append(f"{len(errors)} row(s) the csv module cannot read were skipped, the first at {errors[0]}")
        if long_row:
            warnings.append(long_row)
        if cut_rows:
            warnings.append(f"rows over {MAX_CELLS_PER_ROW} cells were cut to their first {MAX_CELLS_PER_ROW}")
        if cut_cells:
            warnings.append(f"cells over {MAX_CELL_CHARS} characters were cut")
        blocks: tuple[Block, ...] = ()
        if rows:
            table = Block("\n".join(rows), spans[0][0], spans[-1][1], (), "table", False, tuple(spans))
            blocks = (table,)
        return ParsedDocument(file_name(path), blocks, {"delimiter": delimiter, "rows": len(rows)}, tuple(warnings))
