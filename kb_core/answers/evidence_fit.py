"""Which retrieved passages a computation reads: those with a row or line that names what the question asks.

A question kb computes ("What was the change in the domestic discount rate between 2018 and 2019?") is answered
from one table row, and every annual report has a table with columns for 2018 and 2019: retrieval ranks
passages by their words as a whole, so the report whose row is named "Discount rate" may come fourth, behind
reports that share more of the question's common words. Among the retrieved candidates, each passage is scored
by how well its best line fits the question (a table row's label as :func:`~kb_core.answers.operand_places.row_fit`
judges it, or the share of the question's content words one line holds) times the share of the question's
periods the passage names, and the passages are read in the order of retrieval score plus that fit. This holds
when a candidate holds a table; over prose alone, the passages are retrieval's, as for any question.

>>> fit = evidence_fit("What was the change in the discount rate between 2018 and 2019?",
...     "| 2019 | 2018\\nDiscount rate | 4.00% | 3.75%")
>>> fit
1.0
>>> evidence_fit("What was the change in the discount rate between 2018 and 2019?", "| 2017 | 2016\\nRevenue | 1 | 2")
0.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kb_core.answers.operand_places import row_fit
from kb_core.answers.question_terms import periods_of, words_of
from kb_core.answers.tables import stored_rows
from kb_core.types import Chunk, Hit

#: How many retrieved candidates a computation's passages are chosen from (the answer's k, when larger). More
#: put the report the question's row names among the three read more often (bench/computation_candidates.py:
#: 541 of 750 at 20, 566 at 80) but also its rivals, refused as ambiguous: asked live, 80 lost 2 right of 60.
COMPUTATION_CANDIDATES = 20
#: The best fit of a row to the question (``row_fit``: 3, the same words).
_BEST_ROW_FIT = 3


def evidence_fit(question: str, text: str) -> float:
    """How well ``text`` holds what ``question`` asks, in [0, 1]: its best line's fit times the share of the
    question's periods it names (1 when the question names none)."""
    return _fit(words_of(question), frozenset(periods_of(question)), text)


def by_evidence_fit(hits: Sequence[Hit], chunks: Mapping[str, Chunk], question: str, most: int) -> list[Hit]:
    """The ``most`` hits a computation reads: ``hits`` ordered by retrieval score plus :func:`evidence_fit`
    (a hit whose chunk is gone counts no fit; ties keep retrieval's order)."""
    words, named = words_of(question), frozenset(periods_of(question))  # once per question, not per passage

    def weight(hit: Hit) -> float:
        chunk = chunks.get(hit.chunk_id)
        return hit.score + (_fit(words, named, chunk.text) if chunk is not None else 0.0)

    return sorted(hits, key=weight, reverse=True)[: max(1, most)]


def _fit(words: frozenset[str], named: frozenset[int], text: str) -> float:
    """:func:`evidence_fit` of ``text`` for a question's content ``words`` and ``named`` periods."""
    if not words:
        return 0.0
    lines = stored_rows(text).splitlines()
    best = 0.0
    headings: frozenset[str] = frozenset()  # the words of the current table's header rows (an empty first cell)
    for index, line in enumerate(lines):
        label, cells = (line.split("|", 1)[0], True) if "|" in line else (line, False)
        line_words = words_of(line)
        if not cells:
            headings = frozenset()
        elif not label.strip():
            headings |= line_words
        best = max(best, len((line_words | headings) & words) / len(words))
        if cells and label.strip():
            best = max(best, row_fit(lines, index, words) / _BEST_ROW_FIT)
    if not named:
        return best
    return best * len(named & set(periods_of(text))) / len(named)
