"""A passage's sentence that states a computed result as the report rounds it.

A report often works out what a question asks and says it in words beside its table: the table gives net
financing costs of (1,655) and (389) €m, the text says they "increased by €1.3 billion". kb's result, €1,266
million, is then also the report's own figure, and the answer says so: "€1,266 million (1,655 - 389) [#1],
stated as €1.3 billion [#2]". A sentence counts only when it names a row word of the question and the operation
asked ("increased" for a change), and its number, at its own scale, is the result rounded as it is written (at
least two significant digits: "€1 billion" is too coarse to agree with anything). The operands themselves, and a
number of a table's row, are not a statement of the result.

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
from kb_core.answers.question_terms import words_of
from kb_core.answers.stated import NAMING

__all__ = ["StatedResult", "stated_as"]

_FACTORS = {"": 1, "thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_ROW = re.compile(r"(^|\s)\|(\s|$)")
_MIN_SIGNIFICANT = 2


@attrs.frozen
class StatedResult:
    """The ``number`` a passage (``marker``) writes on its 1-based ``line`` for a computed result."""

    marker: int
    line: int
    number: WrittenNumber


def stated_as(
    done: Computation, scale: str, passages: Mapping[int, str], question: str, documents: Mapping[int, str]
) -> StatedResult | None:
    """The first sentence of ``passages`` that states ``done``'s result (in ``scale``, its operands' scale word) as
    rounded there, naming the operation ``question`` asks and one of its row words; None when none does. Only a
    passage of an operand's document counts, when ``documents`` names them (by marker): another report's figure
    is no statement of this one's."""
    asked = asked_operations(question)
    words = words_of(question)
    if not asked or not words:
        return None
    naming = re.compile("|".join(NAMING[operation] for operation in sorted(asked)), re.I)
    operands = {abs(o.value) for o in done.operands} | {abs(n.value) for n in read_numbers(question)}
    result = abs(done.result)
    own = {documents.get(o.passage) for o in done.operands if o.passage is not None} - {None}
    for marker, text in passages.items():
        if own and documents.get(marker) not in own:
            continue
        for line_number, line in enumerate(text.splitlines(), 1):
            if _ROW.search(line) or not naming.search(line) or not words & words_of(line):
                continue
            for number in read_numbers(line):
                if abs(number.value) not in operands and _agrees(number, result, scale, done.percent):
                    return StatedResult(marker, line_number, number)
    return None


def _agrees(number: WrittenNumber, result: Fraction, scale: str, percent: bool) -> bool:
    """Whether ``number`` writes ``result`` (a percent, or an amount in ``scale``) rounded to its own decimals and
    scale; a number with no scale word may be in units or in the result's scale."""
    if number.percent != percent or sum(ch.isdigit() for ch in number.digits.lstrip("0.")) < _MIN_SIGNIFICANT:
        return False
    written = abs(number.value)
    half = Fraction(1, 2 * 10**number.decimals)
    if percent:
        return abs(written - result) <= half
    amount = result * _FACTORS.get(scale, 1)
    scales = [number.scale] if number.scale else ["", scale]
    return any(abs(written * _FACTORS.get(s, 1) - amount) <= half * _FACTORS.get(s, 1) for s in scales)
