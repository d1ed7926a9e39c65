"""A sentence of the report that states a computed result as the report rounds it.

A report often works out what a question asks and says it in words beside its table: the table gives net
financing costs of (1,655) and (389) €m, the text says they "increased by €1.3 billion". kb's result, €1,266
million, is then also the report's own figure, and the answer says so: "€1,266 million (1,655 - 389) [#1],
stated as €1.3 billion [#2]". A sentence (not a table's cell) counts only when it is in an operand's document,
holds two of the question's row words (all, when it has fewer), names the operation asked ("increased" for a
change; not the opposite direction to the question's), names no period but the question's, and writes a number
that, at its own scale, is the result rounded as written: at least two significant digits ("€1 billion" is too
coarse to agree with anything), not a year, not a level ("increased to €1.3 billion"), and not an operand or
the question's own number, at any rounding.

>>> from kb_core.answers.computation import check_computation
>>> table = "| €m | €m\\nNet financing costs | (1,655) | (389)"
>>> done = check_computation("1,655 - 389", {1: table})
>>> found = stated_as(done, "million", {1: table, 2: "Net financing costs increased by €1.3 billion."},
...     "How much did net financing costs increase by between 2018 and 2019?", {1: "a.pdf", 2: "a.pdf"})
>>> (found.marker, found.line, found.number.text)
(2, 1, '€1.3 billion')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction

import attrs

from kb_core.answers.computation import Computation
from kb_core.answers.numbers import WrittenNumber, read_numbers
from kb_core.answers.operations import asked_operations
from kb_core.answers.question_terms import periods_of, sentence_at, sentence_periods, words_of
from kb_core.answers.stated import naming_pattern
from kb_core.answers.tables import TABLE_ROW

__all__ = ["StatedResult", "stated_as"]

_FACTORS = {"": 1, "thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_MIN_SIGNIFICANT = 2
_LEVEL = re.compile(r"\b(?:to|from|at|of)\s*$", re.I)  # "increased to €1.3 billion": where it got, not by how much
_UP = re.compile(r"\b(?:increas|rise|rose|grow|grew|higher|gain)", re.I)
_DOWN = re.compile(r"\b(?:decreas|declin|fell|fall|drop|lower|reduc)", re.I)


@attrs.frozen
class StatedResult:
    """The ``number`` a passage (``marker``) writes on its 1-based ``line`` for a computed result."""

    marker: int
    line: int
    number: WrittenNumber


def stated_as(
    done: Computation, scale: str, passages: Mapping[int, str], question: str, documents: Mapping[int, str]
) -> StatedResult | None:
    """The first number of a sentence of ``passages`` that states ``done``'s result (in ``scale``, its operands'
    scale word) as rounded there, as the module says; None when none does. Only a passage of an operand's
    document counts when ``documents`` names them (by marker): another report's figure is no statement of this
    one's."""
    naming = naming_pattern(asked_operations(question))
    words, periods = words_of(question), set(periods_of(question))
    if naming is None or not words:
        return None
    own = {documents.get(o.passage) for o in done.operands if o.passage is not None} - {None}
    given = [n for o in done.operands for n in read_numbers(o.literal)] + read_numbers(question)
    result = abs(done.result)
    for marker, text in passages.items():
        if own and documents.get(marker) not in own:
            continue
        for line_number, line in enumerate(text.split("\n"), 1):
            if TABLE_ROW.search(line):
                continue
            for number in read_numbers(line):
                sentence, at = sentence_at(line, number.start)
                if (
                    naming.search(sentence)
                    and sentence_periods(sentence, words, periods) is not None
                    and not _opposite(sentence, question)
                    and not _LEVEL.search(sentence[:at])
                    and not _year(number)
                    and not any(_agrees(number, abs(g.value), g.scale or scale, g.percent) for g in given)
                    and _agrees(number, result, scale, done.percent)
                ):
                    return StatedResult(marker, line_number, number)
    return None


def _opposite(sentence: str, question: str) -> bool:
    """Whether ``sentence`` names only the direction opposite to the one ``question`` names (a fall for a rise)."""
    up, down = bool(_UP.search(question)), bool(_DOWN.search(question))
    said_up, said_down = bool(_UP.search(sentence)), bool(_DOWN.search(sentence))
    return (up and not down and said_down and not said_up) or (down and not up and said_up and not said_down)


def _year(number: WrittenNumber) -> bool:
    """Whether ``number`` reads as a year (a whole 1900-2099 with no separator, currency, scale or percent)."""
    bare = not (number.currency or number.scale or number.percent or number.decimals or "," in number.digits)
    return bare and 1900 <= number.value <= 2099


def _agrees(number: WrittenNumber, result: Fraction, scale: str, percent: bool) -> bool:
    """Whether ``number`` writes ``result`` (a percent, or an amount in ``scale``) rounded to its own decimals and
    scale; a number with no scale word may be in units or in the result's scale."""
    if number.percent != percent or sum(ch.isdigit() for ch in number.digits.lstrip("0.,")) < _MIN_SIGNIFICANT:
        return False
    written = abs(number.value)
    half = Fraction(1, 2 * 10**number.decimals)
    if percent:
        return abs(written - result) <= half
    amount = result * _FACTORS.get(scale, 1)
    scales = [number.scale] if number.scale else ["", scale]
    return any(abs(written * _FACTORS.get(s, 1) - amount) <= half * _FACTORS.get(s, 1) for s in scales)
