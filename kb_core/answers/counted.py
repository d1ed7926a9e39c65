"""Counts kb writes itself: "How many years did net income exceed $30,000 thousand?".

A count of the periods in which one row meets a threshold is the computation a small model writes worst (it
wrote ``count(Interest income > 1,500)`` or gave up, for every such question of tatqa-tune's draw), and the
one kb can write exactly: the row the question names, its cell in each period's column, and the question's
threshold, as ``count(5,589 > 2,000, 1,765 > 2,000)``. The expression then takes the same checks as one the
model writes (:func:`kb_core.answers.computed.computed`); when kb cannot write it, the model is asked.

kb writes it only when it is sure of the comparison, the row and every cell:

- the question asks how many years (or periods) a row is above or below a number, not negated ("did not
  exceed"), and the threshold's scale word, if any, is the table's ("$30 million" over "(in millions)"), or
  the table shows none kb can see;
- every word of the row's label is in the question, and what the question adds to the label does not make it
  another measure ("net income per share", "the change in net income"); every other row that fits as well
  holds the same numbers;
- the row has one number in the column of every period its table's header names (within the years the
  question names, when it names two or more): a period whose cell kb cannot read would make the count short.

>>> threshold_of("How many years did net income exceed $30,000 thousand?")
('>', '30,000', 'thousand')
>>> text = "(in thousands) | 2019 | 2018 | 2017\\nNet income | 53,330 | 21,524 | 29,251\\nTaxes | 5,566 | (9,825) | 2"
>>> threshold_count("How many years did net income exceed $30,000 thousand?", {1: text})
('count(53,330 > 30,000, 21,524 > 30,000, 29,251 > 30,000)', 1)
"""

from __future__ import annotations

from collections.abc import Mapping

import regex

from kb_core.answers.numbers import WrittenNumber, read_numbers
from kb_core.answers.operand_places import header_periods, row_fit
from kb_core.answers.question_terms import periods_of, words_of
from kb_core.answers.tables import scale_above

__all__ = ["threshold_count", "threshold_of"]

_COUNTS_PERIODS = regex.compile(r"\bhow\s+many\s+(?:of\s+the\s+)?(?:fiscal\s+)?(?:years|periods)\b", regex.I)
_NEGATION = regex.compile(r"\b(?:not|no|never)\b|n't\b", regex.IGNORECASE)
_COMPARISON = regex.compile(
    r"\b(?P<comparison>exceed(?:ed|s)?|above|more\s+than|greater\s+than|over|higher\s+than|"
    r"below|less\s+than|lower\s+than|under|at\s+least)\s+"
    r"[$€£]?\s*(?P<value>\d[\d,]*(?:\.\d+)?\s*%?)(?:\s*(?P<scale>thousand|million|billion)s?\b)?",
    regex.IGNORECASE,
)
_BARE_YEAR = regex.compile(r"(?:19|20)\d\d")
_WORD = regex.compile(r"[a-z]+")
_BELOW = ("below", "less", "lower", "under")
#: A count question's words that name no row: the comparison and the threshold's scale.
_NOT_ROW = frozenset(
    "many how exceed exceeded exceeds above more than greater over higher below less lower under least "
    "thousand million billion percent".split()
)
#: Words that, added to a row's label, name another measure than the row's ("net income per share").
_OTHER_MEASURE = frozenset(
    "per share margin ratio rate change increase decrease growth fall rise drop adjusted average percentage "
    "proportion difference".split()
)


def threshold_of(question: str) -> tuple[str, str, str] | None:
    """The comparison (``>``, ``<``, ``>=``), the threshold as written and its scale word ('' when none) when
    ``question`` asks how many years (or periods) something is above or below a number; None otherwise, or when
    the comparison is negated ("did not exceed")."""
    asks = _COUNTS_PERIODS.search(question)
    if asks is None:
        return None
    found = [m for m in _COMPARISON.finditer(question, asks.end()) if not _BARE_YEAR.fullmatch(m.group("value"))]
    if not found or _NEGATION.search(question, asks.end(), found[-1].start()):  # "did not exceed", "didn't"
        return None  # (the last comparison: "over 2017 to 2019, ... exceed 30,000")
    comparison = " ".join(found[-1].group("comparison").lower().split())
    operator = ">=" if comparison == "at least" else "<" if comparison.split()[0] in _BELOW else ">"
    scale = (found[-1].group("scale") or "").lower()
    return operator, found[-1].group("value").replace(" ", ""), scale


def threshold_count(question: str, passages: Mapping[int, str]) -> tuple[str, int] | None:
    """The count kb writes for a threshold question over ``passages`` (by marker; tables read as kb stores their
    rows, ``label | cell | cell``) and the marker of its passage, or None when it cannot be sure of it (see
    above)."""
    threshold = threshold_of(question)
    if threshold is None:
        return None
    words = words_of(question) - _NOT_ROW
    named = periods_of(question)
    periods = set(range(min(named), max(named) + 1)) if len(named) >= 2 else None  # "from 2017 to 2019"
    operator, value, scale = threshold
    asked = frozenset(_WORD.findall(question.lower()))
    rows = [row for marker, text in passages.items() for row in _rows(marker, text, words, asked, periods, scale)]
    if not rows:
        return None
    best = max(fit for fit, _, _ in rows)
    chosen = {(marker, tuple(n.value for _, n in cells)): cells for fit, marker, cells in rows if fit == best}
    if len({values for _, values in chosen}) != 1:  # two rows fit alike and disagree: kb cannot tell which
        return None
    (marker, _), cells = next(iter(chosen.items()))
    terms = ", ".join(f"{_literal(number)} {operator} {value}" for _, number in cells)
    return f"count({terms})", marker


def _rows(
    marker: int, text: str, words: frozenset[str], asked: frozenset[str], periods: set[int] | None, scale: str
) -> list[tuple[int, int, list[tuple[int, WrittenNumber]]]]:
    """Each table row of ``text`` that the question's content ``words`` name (its label all in them, none of the
    question's other words, ``asked``, making it another measure) in a table of the threshold's ``scale`` (or of
    no scale kb can see; any, when the threshold has none), with its cell of each period its header names, latest
    first; a row missing one of those cells is left out."""
    lines = text.split("\n")
    found = []
    for index, line in enumerate(lines):
        cells = line.split("|")
        if len(cells) < 3 or not cells[0].strip():
            continue
        fit = row_fit(lines, index, words)
        if fit < 2 or (asked - set(_WORD.findall(cells[0].lower()))) & _OTHER_MEASURE:
            continue
        if scale and scale_above(lines, index) not in (scale, ""):  # "$30 million" over a table in thousands
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
    """A cell's number as the expression writes it: its digits and percent, a negative as ``(-4.5%)``."""
    written = number.digits + ("%" if number.percent else "")
    return f"(-{written})" if number.value < 0 else written
