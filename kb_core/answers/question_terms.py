"""What a question and a passage's lines name: content words, periods, and the period a sentence gives a number.

The words and periods of a question are what kb checks an operand's place against (:mod:`kb_core.answers.
operand_places`) and what it ranks a computation's passages by (:mod:`kb_core.answers.evidence_fit`).

>>> periods_of("What was the change in ROFE from F18 to fiscal 2019?")
[2018, 2019]
>>> sorted(words_of("What was the change in other assets in 2019?"))
['asset', 'other']
"""

from __future__ import annotations

import regex

from kb_core.answers.numbers import read_numbers

__all__ = ["PERIOD", "periods_of", "respective_period", "sentence_at", "sentence_periods", "words_of"]

#: A period as questions and table headings write it: 2019, FY2019, FY 19, F19, fiscal 2019, fiscal year 2019.
PERIOD = regex.compile(
    r"(?<![\w.])(?:(?:FY|F|fiscal(?:\s+year)?)\s?'?(?P<short>\d{2}(?:\d{2})?)|(?P<year>(?:19|20)\d\d))(?!\d)(?!\.\d)(?!,\d{3}\b)",
    regex.IGNORECASE,
)
_WORD = regex.compile(r"[^\W\d_]{3,}")
#: Words of a question that name no row: how it asks, and what it asks to compute.
_ASKING = frozenset(
    "what which how much many was were the and for from between during over than that this these those with "
    "change changes changed percentage percent difference average mean ratio proportion share increase "
    "increased decrease decreased growth rate sum combined compared year years fiscal amount amounts value "
    "values number period respectively january february march april june july august september october "
    "november december end ended ending as at of in on to is are did does".split()
)


def words_of(text: str) -> frozenset[str]:
    """The content words of ``text``, lower case, a plural's ``s`` dropped."""
    words = {w.lower() for w in _WORD.findall(text)} - _ASKING
    return frozenset(w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words) - _ASKING


def periods_of(text: str) -> list[int]:
    """The periods ``text`` names, as four-digit years in the order written (``FY19`` is 2019)."""
    found: list[int] = []
    for match in PERIOD.finditer(text):
        digits = match.group("year") or match.group("short")
        year = int(digits) if len(digits) == 4 else 2000 + int(digits)
        if 1900 <= year <= 2099 and year not in found:
            found.append(year)
    return found


def sentence_periods(line: str, words: frozenset[str], allowed: set[int]) -> set[int] | None:
    """The ``allowed`` periods a prose line names (empty when it names none), when it holds two of the question's
    ``words`` (all, when it has fewer) and names no period only outside ``allowed``; else None."""
    if len(words_of(line) & words) < min(2, len(words)):
        return None
    named = set(periods_of(line))
    if allowed and named and not named & allowed:
        return None
    return named & allowed


_SENTENCE_END = regex.compile(r"(?<=[.;!?])\s+|(?<=:)\s+(?=\p{Lu})")  # "as follows: The ..." ends one too
#: A day of a month ("March 31", "31 March"): a date's part, not one of the numbers a sentence pairs with periods.
_DAY = regex.compile(
    r"\b(?:{months})\.?\s+(?P<day>\d{{1,2}})\b|\b(?P<day>\d{{1,2}})\s+(?:{months})\b".format(
        months="january|february|march|april|may|june|july|august|september|october|november|december"
        "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
    ),
    regex.IGNORECASE,
)


def sentence_at(text: str, position: int) -> tuple[str, int]:
    """The sentence of prose ``text`` that holds ``position``, and where ``position`` is in it."""
    start = 0
    for end in [m.start() for m in _SENTENCE_END.finditer(text)] + [len(text)]:
        if start <= position < end:
            break
        start = end
    return text[start:end], position - start


def respective_period(line: str, position: int) -> int | None:
    """The period the number at ``position`` of prose ``line`` (a paragraph's wrapped lines joined) is paired with
    by "respectively" ("$2.3 million, $2.1 million and $1.9 million in 2019, 2018 and 2017, respectively": the
    first with 2019), or None when its sentence pairs none (no "respectively", or not as many numbers as periods;
    a date's day, "March 31", is no number)."""
    sentence, at = sentence_at(line, position)
    if "respectively" not in sentence.lower():
        return None
    periods = [m.span() for m in PERIOD.finditer(sentence)] + [m.span("day") for m in _DAY.finditer(sentence)]
    numbers = [n for n in read_numbers(sentence) if not any(n.start < b and a < n.end for a, b in periods)]
    named = periods_of(sentence)
    held = [i for i, n in enumerate(numbers) if n.start <= at < n.end]  # the number written at ``position``
    if len(numbers) != len(named) or len(named) < 2 or not held:
        return None
    return named[held[0]]
