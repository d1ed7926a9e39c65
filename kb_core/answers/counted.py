"""Counts kb writes itself: "How many years did net income exceed $30,000 thousand?".

A count of the periods in which one row meets a threshold is the computation a small model writes worst (it
wrote ``count(Interest income > 1,500)`` or gave up, for every such question of tatqa-tune's draw), and the
one kb can write exactly: the row the question names, its cell in each period's column, and the question's
threshold, as ``count(5,589 > 2,000, 1,765 > 2,000)``. The expression then takes the same checks as one the
model writes (:func:`kb_core.answers.computed.computed`); when kb cannot write it, the model is asked.

kb writes it only when it is sure of the row and of every cell:

- the question asks how many years (or periods) a row is above or below a number (:func:`threshold_of`);
- the row's label is all in the question (the row's words may leave nothing of it out), and every other row
  that fits as well holds the same numbers;
- the row has one number in the column of every period its table's header names (within the question's range,
  "from 2017 to 2019"): a period whose cell kb cannot read would make the count short.

>>> threshold_of("How many years did net income exceed $30,000 thousand?")
('>', '30,000')
>>> text = "(in thousands) | 2019 | 2018 | 2017\\nNet income | 53,330 | 21,524 | 29,251\\nTaxes | 5,566 | (9,825) | 2"
>>> threshold_count("How many years did net income exceed $30,000 thousand?", {1: text})
('count(53,330 > 30,000, 21,524 > 30,000, 29,251 > 30,000)', 1)
"""

from __future__ import annotations

from collections.abc import Mapping

import regex

from kb_core.answers.numbers import WrittenNumber, read_numbers
from kb_core.answers.operand_places import header_periods, row_fit
from kb_core.answers.question_terms import words_of

__all__ = ["threshold_count", "threshold_of"]

_THRESHOLD = regex.compile(
    r"\bhow\s+many\s+(?:of\s+the\s+)?(?:fiscal\s+)?(?:years|periods)\b.*?\b"
    r"(?P<comparison>exceed(?:ed|s)?|above|more\s+than|greater\s+than|over|higher\s+than|"
    r"below|less\s+than|lower\s+than|under|at\s+least)\s+"
    r"[$€£]?\s*(?P<value>\d[\d,]*(?:\.\d+)?\s*%?)",
    regex.IGNORECASE,
)
_BELOW = ("below", "less", "lower", "under")
_RANGE = regex.compile(r"\b((?:19|20)\d\d)\s*(?:-|–|to|through|until|and)\s*((?:19|20)\d\d)\b")
#: A count question's words that name no row: the comparison and the threshold's scale.
_NOT_ROW = frozenset(
    "many how exceed exceeded exceeds above more than greater over higher below less lower under least "
    "thousand million billion percent".split()
)


def threshold_of(question: str) -> tuple[str, str] | None:
    """The comparison (``>``, ``<``, ``>=``) and the threshold as written when ``question`` asks how many years
    (or periods) something is above or below a number; None otherwise."""
    found = _THRESHOLD.search(question)
    if found is None:
        return None
    comparison = " ".join(found.group("comparison").lower().split())
    operator = ">=" if comparison == "at least" else "<" if comparison.split()[0] in _BELOW else ">"
    return operator, found.group("value").replace(" ", "")


def threshold_count(question: str, passages: Mapping[int, str]) -> tuple[str, int] | None:
    """The count kb writes for a threshold question over ``passages`` (their text as kb stores a table's rows,
    :func:`kb_core.answers.tables.stored_rows`, by marker) and the marker of its passage, or None when it cannot
    be sure of it (see above)."""
    threshold = threshold_of(question)
    if threshold is None:
        return None
    words = words_of(question) - _NOT_ROW
    span = _RANGE.search(question)
    first, last = sorted((int(span.group(1)), int(span.group(2)))) if span else (0, -1)
    periods = set(range(first, last + 1)) if span else None
    rows = [row for marker, text in passages.items() for row in _rows(marker, text, words, periods)]
    if not rows:
        return None
    best = max(fit for fit, _, _ in rows)
    chosen = {(marker, tuple(n.value for _, n in cells)): cells for fit, marker, cells in rows if fit == best}
    if len({values for _, values in chosen}) != 1:  # two rows fit alike and disagree: kb cannot tell which
        return None
    (marker, _), cells = next(iter(chosen.items()))
    operator, value = threshold
    terms = ", ".join(f"{_literal(number)} {operator} {value}" for _, number in cells)
    return f"count({terms})", marker


def _rows(
    marker: int, text: str, words: frozenset[str], periods: set[int] | None
) -> list[tuple[int, int, list[tuple[int, WrittenNumber]]]]:
    """Each table row of ``text`` whose label is all in the question (fit 2 or more), with its cell of each
    period its header names, latest first; a row missing one of those cells is left out."""
    lines = text.split("\n")
    found = []
    for index, line in enumerate(lines):
        cells = line.split("|")
        if len(cells) < 3 or not cells[0].strip():
            continue
        fit = row_fit(lines, index, words)
        if fit < 2:
            continue
        by_period: dict[int, WrittenNumber] = {}
        heads: set[int] = set()
        for column in range(1, len(cells)):
            named = header_periods(lines, index, column)
            heads |= named
            numbers = read_numbers(cells[column])
            if len(named) == 1 and len(numbers) == 1:
                by_period.setdefault(next(iter(named)), numbers[0])
        if periods is not None:
            heads &= periods
            by_period = {p: n for p, n in by_period.items() if p in periods}
        if len(heads) >= 2 and set(by_period) == heads:
            found.append((fit, marker, sorted(by_period.items(), reverse=True)))
    return found


def _literal(number: WrittenNumber) -> str:
    """A cell's number as the expression writes it: its digits, a negative with its sign, a percent kept."""
    digits = f"(-{number.digits})" if number.value < 0 else number.digits
    return digits + ("%" if number.percent else "")
