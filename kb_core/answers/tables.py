"""Tables as the model reads them: each row with its columns' names, not a grid of ``|``.

A small model reading ``Fixed Price | $ 1,452.4 | $ 1,146.2`` under ``| 2019 | 2018`` must count
cells to know which year a number belongs to, and often does not. In the evidence it is given, a
table (two or more consecutive lines of cells joined by ``|``, as kb stores table rows, Markdown
tables included) is written one row per line with each value named by its column:
``Fixed Price: 2019 = $ 1,452.4; 2018 = $ 1,146.2`` (``Mode = stow; Interval = 90 s`` when the
first column has a name too). The header is the table's first row, with
the rows under it whose first cell is empty (a header over several rows: ``Domestic`` over
``2019 | 2018``, a spanning label filled across the empty cells to its right). Only the evidence
the model reads changes (the answer and the answer check): what is stored and cited, and what an
answer's claims are checked against, is the text as stored.

>>> print(readable_tables("| 2019 | 2018\\nSales | 5 | 4\\nCosts |  | 2"))
Sales: 2019 = 5; 2018 = 4
Costs: 2018 = 2
"""

from __future__ import annotations

import re

#: A bar between cells, or at a row's start or end: a line of a table.
TABLE_ROW = re.compile(r"(^|\s)\|(\s|$)")
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")  # a year heading a column
_DIGIT = re.compile(r"\d")
_WORDS = re.compile(r"[^\W\d_]{2,}")
_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")  # a Markdown table's |---|---|
#: A column heading that is a currency and a scale: ``€m``, ``$bn``, ``£'000``, ``£000``, ``US$m``, ``$k``.
HEADING_UNIT = re.compile(r"(?<![\w$€£¥])(?:[A-Z]{1,3})?(?P<sign>[$€£¥])\s?(?P<short>mn|m|bn|k|'000|000)(?![\w'])")
_SCALE = re.compile(r"\bin (thousands|millions|billions)\b|([$€£¥]?\s?'000)|\b(thousand|million|billion)s?\b", re.I)
_SHORT_SCALES = {
    "m": "million",
    "mn": "million",
    "bn": "billion",
    "k": "thousand",
    "'000": "thousand",
    "000": "thousand",
}
#: How many lines above a number its table's or sentence's scale word ("(in millions)") may be.
SCALE_LINES = 12


def scale_above(lines: list[str], index: int) -> str:
    """The scale word (``thousand``, ``million``, ``billion``) nearest above line ``index`` of ``lines``, the line
    itself included, within :data:`SCALE_LINES` lines ("(in millions)", "$'000", "€m"), or ''.

    >>> scale_above(["(in millions)", "| 2019", "Sales | 5"], 2)
    'million'
    """
    for line in reversed(lines[max(0, index - SCALE_LINES + 1) : index + 1]):
        heading = HEADING_UNIT.search(line)
        if heading:
            return _SHORT_SCALES[heading.group("short")]
        match = _SCALE.search(line)
        if match:
            word = (match.group(1) or match.group(3) or "thousand").lower().rstrip("s")
            return "thousand" if match.group(2) else word
    return ""


def _in_table(line: str) -> bool:
    """Whether ``line`` is a table's: a row of cells, or a Markdown table's ``|---|`` line."""
    return bool(TABLE_ROW.search(line) or _SEPARATOR.match(line.strip()))


def holds_table(text: str) -> bool:
    """Whether ``text`` holds a table: two consecutive lines of cells."""
    lines = text.split("\n")
    return any(
        TABLE_ROW.search(line) and TABLE_ROW.search(after) for line, after in zip(lines, lines[1:], strict=False)
    )


def readable_tables(text: str) -> str:
    """``text`` with every table's rows written with their columns' names (other lines as they are).

    A table is two or more consecutive lines with cells apart (`` | ``, or a bar at the line's start
    or end) that all have as many cells, outside a fenced code block.
    """
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    fenced = False
    while index < len(lines):
        end = index
        while not fenced and end < len(lines) and _in_table(lines[end]):
            end += 1
        table = lines[index:end]
        markdown = any(_SEPARATOR.match(line.strip()) for line in table)
        rows = [_cells(line, markdown) for line in table if not _SEPARATOR.match(line.strip())]
        if len(rows) >= 2 and len({len(row) for row in rows}) == 1:
            out.extend(_named_rows(rows))
            index = end
            continue
        if end == index:
            end += 1
        for line in lines[index:end]:
            fenced ^= line.lstrip().startswith(("```", "~~~"))
            out.append(line)
        index = end
    return "\n".join(out)


def stored_rows(text: str) -> str:
    """``text`` with each Markdown table's rows written as kb stores a table's (``Europe | 3,100 | 2,950``: no outer
    bars) and its ``|---|`` line as a row of empty cells, line for line, so that a row's first cell is its label
    whatever wrote the table (the computation checks read rows this way).

    >>> stored_rows("| Region | 2019 |\\n|---|---|\\n| Asia | 1,210 |")
    'Region | 2019\\n | \\nAsia | 1,210'
    """
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if not _SEPARATOR.match(line.strip()) or "|" not in line:
            continue
        width = len(_cells(line, True))
        lines[index] = " | ".join([""] * width)
        for row in table_block(lines, index):
            lines[row] = " | ".join(_cells(lines[row], True))
    return "\n".join(_headers_aligned(lines))


def _headers_aligned(lines: list[str]) -> list[str]:
    """``lines`` with each table's header rows that lack the label's cell (``2019 | 2018`` over
    ``Sales | 5 | 4``, as a PDF's text often gives them) aligned right, over the value columns.

    >>> _headers_aligned(["2019 | 2018", "% | %", "Sales | 5 | 4"])
    [' | 2019 | 2018', ' | % | %', 'Sales | 5 | 4']
    """
    aligned = list(lines)
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and TABLE_ROW.search(lines[end]):
            end += 1
        first_row = next((i for i in range(start, end) if _labelled_row(lines[i])), None)
        if first_row is not None:
            width = lines[first_row].count("|") + 1
            for index in range(start, first_row):
                missing = width - (lines[index].count("|") + 1)
                if missing > 0 and _heads_values_only(lines[index]):
                    aligned[index] = " | " * missing + lines[index]
                else:
                    width_of = lines[index].count("|")
                    rows = [r for r in lines[index + 1 : end] if r.count("|") == width_of and _labelled_row(r)]
                    aligned[index] = _periods_closed_up(lines[index], rows)
        start = max(end, start + 1)
    return aligned


def _periods_closed_up(header: str, rows: list[str]) -> str:
    """``header`` with its period headings moved right over the values of ``rows`` (the labelled rows of its width
    under it) when a PDF's text put an empty cell between them that the rows do not have (``| 2019 | | 2018`` over
    ``Trade receivables | | 3,770 | 3,054``: most rows' values are in their last two cells, and no row has a value
    elsewhere but a note's number beside both); else ``header`` unchanged.

    >>> _periods_closed_up(" | 2019 | | 2018", ["Trade receivables | | 3,770 | 3,054", "Other | | 12 | 9"])
    ' |  | 2019 | 2018'
    >>> _periods_closed_up(" | 2019 | | 2018", ["Trade receivables | | 3,770 | 3,054", "Other | 12 | | 9"])
    ' | 2019 | | 2018'
    """
    cells = header.split("|")
    filled = [i for i, cell in enumerate(cells) if cell.strip()]
    periods = len(filled)
    gapped = periods >= 2 and filled[0] > 0 and filled[-1] - filled[0] >= periods
    if not rows or not gapped or not all(_YEAR.fullmatch(cells[i].strip()) for i in filled):
        return header
    last = set(range(len(cells) - periods, len(cells)))
    values = [{i for i, cell in enumerate(row.split("|")) if i and _DIGIT.search(cell)} for row in rows]
    exact = sum(found == last for found in values)
    # a value elsewhere is a note's number beside full period cells ("Related parties | 17 | 11,880 | 8,039"), once
    if exact * 2 < len(rows) or any(len(found - last) > 1 or (found - last and not last <= found) for found in values):
        return header
    return " | ".join([""] * (len(cells) - periods) + [cells[i].strip() for i in sorted(filled)])


def _labelled_row(line: str) -> bool:
    """Whether a table row has a label (a first cell of words, no period) and a number in another cell."""
    label, _, values = line.partition("|")
    return bool(_WORDS.search(label)) and not _YEAR.search(label) and bool(_DIGIT.search(values))


def _heads_values_only(line: str) -> bool:
    """Whether a row heads value columns and has no label's cell: its first cell names a year (``2019 | Change |
    2018``), or every cell is a unit (``% | %``, ``$m``)."""
    cells = [cell.strip() for cell in line.split("|")]
    if all(len(cell) <= 3 and not _DIGIT.search(cell) for cell in cells):
        return True
    return bool(_YEAR.search(cells[0])) and all(_YEAR.search(cell) or not _DIGIT.search(cell) for cell in cells)


def table_block(lines: list[str], index: int) -> list[int]:
    """The indexes of the lines with cells around line ``index``, ``index`` left out."""
    rows = []
    for step in (-1, 1):
        at = index + step
        while 0 <= at < len(lines) and TABLE_ROW.search(lines[at]):
            rows.append(at)
            at += step
    return rows


def _cells(line: str, markdown: bool) -> list[str]:
    """A row's cells. kb writes an empty first or last cell as a leading or trailing ``|``; in a
    Markdown table (one with a ``|---|`` line) the outer bars are no cells."""
    stripped = line.strip()
    if markdown:
        stripped = stripped.removeprefix("|").removesuffix("|")
    return [" ".join(cell.split()) for cell in stripped.split("|")]


def _named_rows(rows: list[list[str]]) -> list[str]:
    """The rows after the header, each as ``label: name = value; ...`` (a row of no values: its label)."""
    width = len(rows[0])
    header_rows = 1
    while header_rows < len(rows) - 1 and not rows[header_rows][0] and not rows[header_rows - 1][0]:
        header_rows += 1
    names = _column_names(rows[:header_rows], width)
    out: list[str] = []
    for row in rows[header_rows:]:
        first = 0 if names[0] else 1  # a first column with a name is a value like the others
        label, values = row[0] if first else "", [(names[i], row[i]) for i in range(first, width) if row[i]]
        if not values or values == [(names[0], row[0])]:
            out.append(row[0])  # a row of no values: a section label
            continue
        named = "; ".join(f"{name} = {value}" if name else value for name, value in values)
        out.append(f"{label}: {named}" if label else named)
    return out


def _column_names(header: list[list[str]], width: int) -> list[str]:
    """Each column's name: its cells down the header rows, a spanning label (every header row but
    the last) filled into the empty cells to its right."""
    names = [""] * width
    for depth, row in enumerate(header):
        spanning = depth < len(header) - 1
        carried = ""
        for column in range(1, width):
            cell = row[column] or (carried if spanning else "")
            carried = cell
            names[column] = f"{names[column]} {cell}".strip()
    names[0] = header[0][0]
    return names
