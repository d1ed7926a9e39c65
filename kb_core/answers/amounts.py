"""The currency and scale a computed amount is written with: those its operands' passages write theirs with.

A change, total, average, largest or smallest of amounts is an amount in its operands' unit ("€1,266 million",
not "1,266"); a percentage, a ratio and a count carry neither. The scale is the nearest scale word above an
operand ("(in millions)", "$'000", a "€m" column heading: :func:`~kb_core.answers.tables.scale_above`), else a
table's caption below it or in another passage of its document ("... is comprised of the following (in
thousands):", where a PDF's text often puts a caption). The currency is the operand's own sign (``$2,082``), else
the one sign the amounts of its table are written with (a report signs only a column's first and total rows),
else a heading's (``€m``).

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
from kb_core.answers.tables import HEADING_UNIT, scale_above

__all__ = ["amount_unit"]

#: A table's caption naming its scale: "(in thousands)", "(in millions, except per share data)".
_CAPTION = re.compile(r"\(\s*in (thousands|millions|billions)\b", re.I)
_ROW = re.compile(r"(^|\s)\|(\s|$)")
_UNITLESS = frozenset({"ratio", "percent_change", "count"})


def amount_unit(done: Computation, passages: Mapping[int, str], documents: Mapping[int, str]) -> tuple[str, str]:
    """The currency sign and scale word (``('€', 'million')``; either may be '') to write ``done``'s result
    with: none for a percent, a ratio or a count. ``passages`` by marker; ``documents`` their paths."""
    counted = isinstance(done.tree, Call) and done.tree.name == "count"
    operation = None if done.tree is None else performed_operation(done.tree)
    if done.percent or counted or operation in _UNITLESS:
        return "", ""
    placed = [o for o in done.operands if o.source == "passage" and o.passage is not None and o.line is not None]
    scale = next(filter(None, (_scale(o, passages, documents) for o in placed)), "")
    signs = {_currency(o, passages) for o in placed} - {""}
    return (signs.pop() if len(signs) == 1 else ""), scale


def _lines(operand: Operand, passages: Mapping[int, str]) -> tuple[list[str], int]:
    lines = passages.get(operand.passage or 0, "").splitlines()
    return lines, min(operand.line or 1, len(lines)) - 1


def _scale(operand: Operand, passages: Mapping[int, str], documents: Mapping[int, str]) -> str:
    """The scale word of ``operand``'s table or sentence: above it, else a caption below it, else a caption in
    another passage of its document; '' when none says."""
    lines, index = _lines(operand, passages)
    word = scale_above(lines, index)
    if word:
        return word
    document = documents.get(operand.passage or 0)
    others = [text for marker, text in passages.items() if document and documents.get(marker) == document]
    for text in ["\n".join(lines[index + 1 :]), *others]:
        caption = _CAPTION.search(text)
        if caption:
            return caption.group(1).lower().rstrip("s")
    return ""


def _currency(operand: Operand, passages: Mapping[int, str]) -> str:
    """The currency sign of ``operand``: its own as its line writes it, else the one sign of its table's amounts,
    else the sign of a heading over it (``€m``); '' when none is written or the table mixes signs."""
    lines, index = _lines(operand, passages)
    if index < 0:
        return ""
    own = [n.currency for n in read_numbers(lines[index]) if abs(n.value) == abs(operand.value)]
    if own and own[0]:
        return own[0]
    if not _ROW.search(lines[index]):
        return ""
    start, end = index, index
    while start > 0 and _ROW.search(lines[start - 1]):
        start -= 1
    while end + 1 < len(lines) and _ROW.search(lines[end + 1]):
        end += 1
    signs = {n.currency for line in lines[start : end + 1] for n in read_numbers(line)} - {""}
    if len(signs) == 1:
        return signs.pop()
    heading = next((m for line in lines[max(0, start - 3) : end + 1] if (m := HEADING_UNIT.search(line))), None)
    return heading.group("sign") if heading and not signs else ""
