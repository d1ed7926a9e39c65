"""The currency and scale a computed amount is written with: those its operands' passages write theirs with.

A change, total, average, largest or smallest of amounts is an amount in its operands' unit ("€1,266 million",
not "1,266"); a percentage, a ratio and a count carry neither, nor does a row of counts or of amounts per share
("Employees", "Earnings per share"). The scale is the nearest scale word above an operand ("(in millions)",
"$'000", a "€m" column heading: :func:`~kb_core.answers.tables.scale_above`); for a table's row, else a caption
just below its table or in a passage of its document that holds no table ("... is comprised of the following (in
thousands):", where a PDF's text often puts a table's caption). Operands in different scales give none (one whose
scale no line says takes the others'). The currency is the operand's own sign (``$2,082``), else the one sign its
table's amounts are written with (a report signs only a column's first and total rows), else a heading's (``€m``).

>>> from kb_core.answers.computation import check_computation
>>> done = check_computation("1,655 - 389", {1: "€m | 2019 | 2018\\nNet financing costs | (1,655) | (389)"})
>>> amount_unit(done, {1: "€m | 2019 | 2018\\nNet financing costs | (1,655) | (389)"}, {})
('€', 'million')
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kb_core.answers.computation import Computation, Operand
from kb_core.answers.numbers import Call, read_numbers
from kb_core.answers.operations import performed_operation
from kb_core.answers.tables import HEADING_UNIT, TABLE_ROW, holds_table, scale_above, table_block

__all__ = ["amount_unit"]

#: A table's caption naming its scale: "(in thousands)", "(in millions, except per share data)".
_CAPTION = re.compile(r"\(\s*in (thousands|millions|billions)\b", re.I)
#: A row label of counts or of amounts per share: no currency, no scale.
_NO_AMOUNT = re.compile(r"per share|\bper\b|employee|headcount|\bshares\b|number of|%|\bratio\b|\brate\b", re.I)
_CAPTION_LINES = 3  # how far below its table a caption may be
_UNITLESS = frozenset({"ratio", "percent_change", "count"})


def amount_unit(done: Computation, passages: Mapping[int, str], documents: Mapping[int, str]) -> tuple[str, str]:
    """The currency sign and scale word (``('€', 'million')``; either may be '') to write ``done``'s result
    with: none for a percent, a ratio or a count. ``passages`` by marker; ``documents`` their paths."""
    counted = isinstance(done.tree, Call) and done.tree.name == "count"
    operation = None if done.tree is None else performed_operation(done.tree)
    if done.percent or counted or operation in _UNITLESS:
        return "", ""
    placed = [o for o in done.operands if o.source == "passage" and o.passage is not None and o.line is not None]
    if not placed or any(_of_no_amount(o, passages) for o in placed):
        return "", ""
    scales = {_scale(o, passages, documents) for o in placed} - {""}  # an operand whose scale no line says: no other
    signs = {_currency(o, passages) for o in placed} - {""}
    return (signs.pop() if len(signs) == 1 else ""), (scales.pop() if len(scales) == 1 else "")


def _lines(operand: Operand, passages: Mapping[int, str]) -> tuple[list[str], int]:
    """The lines of ``operand``'s passage (split as operands' lines are counted) and its line's index."""
    lines = passages.get(operand.passage or 0, "").split("\n")
    return lines, min(operand.line or 1, len(lines)) - 1


def _of_no_amount(operand: Operand, passages: Mapping[int, str]) -> bool:
    """Whether ``operand`` is in a table row of counts or of amounts per share (its label says)."""
    lines, index = _lines(operand, passages)
    line = lines[index]
    return bool(TABLE_ROW.search(line)) and bool(_NO_AMOUNT.search(line.split("|", 1)[0]))


def _table_span(lines: list[str], index: int) -> tuple[int, int]:
    """The first and last index of the table rows around line ``index``."""
    rows = [index, *table_block(lines, index)]
    return min(rows), max(rows)


def _scale(operand: Operand, passages: Mapping[int, str], documents: Mapping[int, str]) -> str:
    """The scale word of ``operand``'s table or sentence: above it; for a table's row, else a caption just below
    the table or in a passage of its document that holds no table; '' when none says."""
    lines, index = _lines(operand, passages)
    word = scale_above(lines, index)
    if word or not TABLE_ROW.search(lines[index]):
        return word
    _, end = _table_span(lines, index)
    document = documents.get(operand.passage or 0)
    others = [t for m, t in passages.items() if document and documents.get(m) == document and not holds_table(t)]
    for text in ["\n".join(lines[end + 1 : end + 1 + _CAPTION_LINES]), *others]:
        caption = _CAPTION.search(text)
        if caption:
            return caption.group(1).lower().rstrip("s")
    return ""


def _currency(operand: Operand, passages: Mapping[int, str]) -> str:
    """The currency sign of ``operand``: its own as its line writes it, else the one sign of its table's amounts,
    else the sign of a heading over it (``€m``); '' when none is written or the table mixes signs."""
    lines, index = _lines(operand, passages)
    own = [n.currency for n in read_numbers(lines[index]) if abs(n.value) == abs(operand.value)]
    if own and own[0]:
        return own[0]
    if not TABLE_ROW.search(lines[index]):
        return ""
    start, end = _table_span(lines, index)
    signs = {n.currency for line in lines[start : end + 1] for n in read_numbers(line)} - {""}
    if len(signs) == 1:
        return signs.pop()
    heading = next((m for line in lines[max(0, start - 3) : end + 1] if (m := HEADING_UNIT.search(line))), None)
    return heading.group("sign") if heading and not signs else ""
