"""Table rows set on their table's columns: the empty cells a page does not draw, put back.

A page draws only the cells that hold text, so a row with an empty cell has fewer cells than the
other rows of its table, and what follows the gap moves left under the wrong column: a header row
over a first column of labels (``2019 | 2018`` above ``Sales | 5 | 4``), a value missing from one
column (``Rate | 3.4%`` where 3.4 % is the third column's). A section label inside a table
(``Industrial Solutions:`` between rows) was a paragraph of its own that cut the table in two, the
second part without its header.

:func:`align_tables` finds each table (consecutive lines of several cells, with the short one-cell
lines between them), takes its columns from its fullest rows (the x-range of their i-th cells),
and writes every row with one cell per column: a cell goes to the column it overlaps most (the
nearest, when it overlaps none), an empty column is an empty cell. A table whose fullest rows do
not agree on their columns, or a row whose cells would share a column (a cell spanning several),
is left as it is.

:func:`table_columns` gives a table's columns for :mod:`kb_documents.assemble`, and
:func:`same_grid` says whether two tables' columns line up (a table continued on the next page).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from kb_documents.layout import Cell, Line

MAX_LABEL_CHARS = 80  # a one-cell line inside a table (a section label) is at most this long
MAX_ROW_GAP = 2.0  # a gap of more than this many line heights between two lines ends a table
# How far apart (in ems of the tables' text) a column on one page may lie from the same column on the
# next and still be it. The same column overlaps itself on both pages (cells aligned on the same edge
# or centre), so any slack only absorbs measuring noise: an OCR box is off by a few pixels (1-3 pt at
# 150-300 dpi), under half an em of 10 pt text; columns are at least an em apart (a narrower gap
# does not split a row into cells), so half an em cannot take a column for its neighbour.
ALIGN_EMS = 0.5
Columns = tuple[tuple[float, float], ...]


def align_tables(lines: Sequence[Line]) -> list[Line]:
    """``lines`` (a page's, in reading order) with each table's rows set on its columns."""
    out = list(lines)
    for start, end in _tables(out):
        columns = _columns(out[start:end])
        if columns is None:
            continue
        for index in range(start, end):
            out[index] = _placed(out[index], columns) or out[index]
    return out


def table_columns(rows: Sequence[Line]) -> Columns:
    """The x-ranges of the columns of a table's ``rows`` (as :func:`align_tables` finds them); () when they disagree."""
    return tuple(_columns(rows) or ()) if rows else ()


def same_grid(above: Columns, below: Columns, size: float) -> bool:
    """Whether two tables' columns line up: as many (two or more), each within ``ALIGN_EMS`` ems of
    text ``size`` of the other's, and together still apart from the next column (one grid)."""
    if len(above) != len(below) or len(above) < 2:
        return False
    merged = [(min(a[0], b[0]), max(a[1], b[1])) for a, b in zip(above, below)]
    if any(left[1] > right[0] for left, right in zip(merged, merged[1:])):
        return False  # a column of one runs into the next column of the other
    return all(max(a[0], b[0]) - min(a[1], b[1]) <= ALIGN_EMS * size for a, b in zip(above, below))


def _tables(lines: Sequence[Line]) -> list[tuple[int, int]]:
    """The [start, end) ranges of tables: from a row of several cells to the last such row after
    it, through short one-cell lines, with no wide vertical gap or move up (another column)."""
    tables: list[tuple[int, int]] = []
    index = 0
    while index < len(lines):
        if lines[index].cells < 2:
            index += 1
            continue
        start = last_row = index
        index += 1
        while index < len(lines) and _follows(lines[index - 1], lines[index]):
            line = lines[index]
            if line.cells >= 2:
                last_row = index
            elif line.cells != 1 or len(line.text) > MAX_LABEL_CHARS:
                break
            index += 1
        tables.append((start, last_row + 1))
        index = last_row + 1
    return tables


def _follows(previous: Line, line: Line) -> bool:
    """Whether ``line`` comes right below ``previous``, as the next row of a table does."""
    gap = previous.bottom - line.top
    return line.top <= previous.top and gap <= MAX_ROW_GAP * max(previous.top - previous.bottom, line.top - line.bottom)


def _columns(rows: Sequence[Line]) -> list[tuple[float, float]] | None:
    """The x-ranges of the columns, from the rows with the most cells; None when they disagree."""
    width = max(row.cells for row in rows)
    fullest = [row.spans for row in rows if row.cells == width and len(row.spans) == width]
    if not fullest:
        return None
    columns = [(min(row[i].x0 for row in fullest), max(row[i].x1 for row in fullest)) for i in range(width)]
    if any(left[1] > right[0] for left, right in zip(columns, columns[1:])):
        return None  # the fullest rows' columns overlap: not one grid
    return columns


def _placed(line: Line, columns: list[tuple[float, float]]) -> Line | None:
    """``line`` with one cell per column, or None when it has them already or cannot be placed."""
    if line.cells == len(columns) or len(line.spans) != line.cells:
        return None
    places = [_column_of(cell, columns) for cell in line.spans]
    if any(a >= b for a, b in zip(places, places[1:])):
        return None  # two cells in one column: a cell spans several
    cells = [Cell("", left, right) for left, right in columns]
    for cell, place in zip(line.spans, places):
        cells[place] = cell
    return attrs.evolve(line, text=" | ".join(c.text for c in cells), cells=len(cells), spans=tuple(cells))


def _column_of(cell: Cell, columns: list[tuple[float, float]]) -> int:
    """The column ``cell`` overlaps most; the nearest by centre when it overlaps none."""
    overlaps = [min(cell.x1, right) - max(cell.x0, left) for left, right in columns]
    best = max(range(len(columns)), key=lambda i: overlaps[i])
    if overlaps[best] > 0:
        return best
    centre = (cell.x0 + cell.x1) / 2
    return min(range(len(columns)), key=lambda i: abs((columns[i][0] + columns[i][1]) / 2 - centre))
