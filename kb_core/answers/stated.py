"""Whether an answer in words states the number a computation question asks for, as the passages state it.

A question kb would compute ("What was the increase in interest income in 2019?") is sometimes answered in the
passages themselves ("interest income increased $16.9 million"). When kb cannot check the computation the model
writes, the question takes the ordinary path; its answer is kept only when every number it states (beyond the
question's own) is written in a passage line that names the operation asked: a change word for a change, "average"
for an average, "total" for a total, a percent or share for a ratio. In a table, the number's own cell counts: its
row's label or its column's heading ("Change" over a column of changes), or for a percent cell the table's title
("Percent Change" above the table, where a PDF's text puts a heading that spans the columns). A number from any
other line is a number of the passages that the question did not ask about: the small model's usual guess,
refused. When no line of the passages could state it (:func:`can_be_stated`), kb refuses without asking the
model for an answer in words.

>>> states_operation("Interest income rose by $16.9 million [#1].", "What was the increase in interest income?",
...     {1: "Interest income increased $16.9 million, to $30.2 million."})
True
>>> states_operation("It was $30.2 million [#1].", "What was the increase in interest income?",
...     {1: "Interest income was $30.2 million.\\nIt was $13.3 million in 2018."})
False
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

import regex

from kb_core.answers.numbers import read_numbers
from kb_core.answers.operand_places import names_no_row
from kb_core.answers.operations import Operation, asked_operations
from kb_core.answers.tables import stored_rows

_CHANGE = r"chang|increas|decreas|reduc|grow|grew|growth|declin|rise|rose|fell|fall|drop|up\b|down\b"
#: The words a passage line names each operation with (stems; a line naming none states no such number).
NAMING: dict[Operation, str] = {
    "change": _CHANGE + r"|higher|lower|more|less",
    "percent_change": _CHANGE,
    "average": r"average|mean",
    "total": r"total|sum\b|combined|aggregate",
    "ratio": r"%\s*of\b|percent|per cent|share|proportion|ratio",
    "count": r"number|count",
    "extreme": r"largest|highest|lowest|smallest|most|least|maximum|minimum",
}
_MARKER = regex.compile(r"\[#\d+\]")
_PERCENT = regex.compile(r"percent|per cent|%", regex.IGNORECASE)
_TITLE_LINES = 3
_TITLE_WORDS = 5
#: Why an answer in words to a question kb would compute is refused.
NOT_STATED = "the answer states a number no passage gives for what the question asks, and kb could not work it out"
#: Why such a question is refused before the model writes an answer in words: none could be kept.
NOT_STATABLE = "no passage states a number for what the question asks, and kb could not work it out"


def stated_answer(text: str, question: str, passages: Mapping[int, str]) -> bool:
    """Whether an answer in words may stand for a question kb would compute: it :func:`states_operation`, and the
    question names a row (not "the change in the total", which fits any report's table)."""
    return states_operation(text, question, passages) and not names_no_row(question)


def can_be_stated(question: str, passages: Mapping[int, str]) -> bool:
    """Whether any answer in words could pass :func:`stated_answer` over ``passages``: some line holds a number (not
    the question's) where it names an operation ``question`` asks for. When none does, kb need not ask the model.

    >>> can_be_stated("What was the increase in interest income?", {1: "Interest income was $30.2 million."})
    False
    """
    if names_no_row(question):
        return False
    naming = naming_pattern(asked_operations(question))
    own = _own_numbers(question)
    for passage in passages.values():
        rows = stored_rows(passage).splitlines()
        for index, line in enumerate(rows):
            values = {abs(number.value) for number in read_numbers(line)} - own
            if any(naming is None or _names(rows, index, value, naming) for value in values):
                return True
    return False


def states_operation(text: str, question: str, passages: Mapping[int, str]) -> bool:
    """Whether every number ``text`` states (those of the question aside, whatever their sign) is written in one of
    ``passages``' lines that names an operation ``question`` asks for (any line, when it names none); False when it
    states none."""
    naming = naming_pattern(asked_operations(question))
    own = _own_numbers(question)
    stated = [value for number in read_numbers(_MARKER.sub(" ", text)) if (value := abs(number.value)) not in own]
    lines = [stored_rows(passage).splitlines() for passage in passages.values()]

    def given(value: Fraction) -> bool:
        holding = [(rows, index) for rows in lines for index, line in enumerate(rows) if _holds(line, value)]
        return any(naming is None or _names(rows, index, value, naming) for rows, index in holding)

    return bool(stated) and all(given(value) for value in stated)


def _own_numbers(question: str) -> set[Fraction]:
    """The numbers ``question`` writes, without their sign: an answer that gives one back ("-120" for "120") states
    nothing new."""
    return {abs(number.value) for number in read_numbers(question)}


def naming_pattern(asked: frozenset[Operation]) -> regex.Pattern[str] | None:
    """The words that name the ``asked`` operations in a passage line, each at a word's start ("up" in "Group" and
    "chang" in "exchange" name nothing); None: it asks none, any line will do."""
    if not asked:
        return None
    stems = "|".join(NAMING[operation] for operation in sorted(asked))
    return regex.compile(rf"(?<![^\W\d_])(?:{stems})", regex.IGNORECASE)  # a digit before "%" is no letter


def _holds(text: str, value: Fraction) -> bool:
    return any(abs(number.value) == value for number in read_numbers(text))


def _names(rows: list[str], index: int, value: Fraction, naming: regex.Pattern[str]) -> bool:
    """Whether line ``index``, which holds ``value``, names the operation there: a sentence that names it, or a
    table cell whose row label or column heading (a header row above: the table's first, or one with an empty first
    cell) names it, or a percent cell under a title that names a percent and the operation ("Percent Change")."""
    line = rows[index]
    if "|" not in line:
        return bool(naming.search(line))
    cells = line.split("|")
    columns = [column for column, cell in enumerate(cells) if column and _holds(cell, value)]
    if not columns:
        return False
    if naming.search(cells[0]):
        return True
    headings: list[str] = []
    above = index - 1
    while above >= 0 and "|" in rows[above]:
        if not rows[above].split("|")[0].strip() or above == 0 or "|" not in rows[above - 1]:
            headings.append(rows[above])
        above -= 1
    if any(
        column < len(heading.split("|")) and naming.search(heading.split("|")[column])
        for heading in headings
        for column in columns
    ):
        return True
    # a heading over the table that names a percent and the operation ("Percent Change") heads its percent cells
    percent_cell = any("%" in cells[column] for column in columns)
    return percent_cell and any(_PERCENT.search(title) and naming.search(title) for title in _titles_above(rows, above))


def _titles_above(rows: list[str], index: int) -> list[str]:
    """The short heading lines (a few words, no sentence) above a table whose first row is under line ``index``:
    up to three lines of text, one blank line between them and the table allowed."""
    if index >= 0 and not rows[index].strip():
        index -= 1
    titles: list[str] = []
    while index >= 0 and len(titles) < _TITLE_LINES and rows[index].strip() and "|" not in rows[index]:
        titles.append(rows[index])
        index -= 1
    return [t for t in titles if len(t.split()) <= _TITLE_WORDS and not t.rstrip().endswith((".", ";"))]
