"""A Tesseract text line split into cells at wide gaps between its words (pure: no Tesseract).

Tesseract usually reads a table row as one text line (``Revenue 4,210 3,980 2,870``). Between
the words of a line of prose the gaps are spaces; between a table's cells they are wider. So a
line is cut where the gap from the words so far to the next word is wider than :data:`GAP` line
heights (:data:`CJK_GAP` between two CJK words: no spaces separate them, and Tesseract places the
boxes of Chinese characters less exactly). A word made only of ``|`` is a vertical rule of the
table that Tesseract took for a letter: it ends a cell and is dropped. A line that looks like
justified prose, its spaces stretched evenly, is kept whole (:func:`is_justified`).

The line height is Tesseract's row height (x-height, ascenders and descenders: about the font's
size, the same for a row of figures as for a line of prose), kept within half to twice the height
of the line's box. On 60 scanned TAT-QA pages (justified paragraphs, ruled tables) the widest gap
in a line of prose was 1.05 row heights; between two table cells the narrowest gaps were 1.15
(twice, cells misread), then 1.84. On generated Chinese pages one line of prose had a gap of 1.69
row heights between two characters (a misplaced box); between cells the narrowest was 2.9.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from statistics import median
from typing import NamedTuple

from kb_tesseract.pixels import CJK, CJK_PUNCTUATION, join_cjk

#: A gap between words wider than this many line heights starts a new cell.
GAP = 1.5
#: The same between two CJK words.
CJK_GAP = 3.0
#: A justified line of prose can stretch its spaces past GAP: a line of at least this many gaps,
#: all alike (the widest at most JUSTIFIED_SPREAD times the median), none wider than JUSTIFIED_MAX
#: line heights, whose words mostly hold letters (two thirds), is kept whole.
JUSTIFIED_GAPS = 2
JUSTIFIED_SPREAD = 1.6
JUSTIFIED_MAX = 3.0
_CJK_CHAR = re.compile(f"[{CJK}{CJK_PUNCTUATION}]")
_RULE = re.compile(r"\|+")


class Word(NamedTuple):
    """A word as Tesseract read it: its text, corners on the image it read, confidence (0-100)."""

    text: str
    left: int
    top: int
    right: int
    bottom: int
    confidence: float


class Segment(NamedTuple):
    """A run of a line's words: their text, the corners of their union box, mean confidence (0..1)."""

    text: str
    left: int
    top: int
    right: int
    bottom: int
    confidence: float


def line_height(row_height: float, box_height: float) -> float:
    """The height gaps are measured in: Tesseract's ``row_height`` within half to twice the height
    of the line's box (the box alone when the row height is not a number)."""
    box_height = max(float(box_height), 1.0)
    if not math.isfinite(row_height):
        return box_height
    return min(max(float(row_height), 0.5 * box_height), 2.0 * box_height)


def is_rule(word: Word) -> bool:
    """Whether ``word`` is a table's vertical rule read as text (``|``, ``||``)."""
    return _RULE.fullmatch(word.text) is not None


def split_words(words: Sequence[Word], height: float) -> list[list[Word]]:
    """``words`` (one line, in reading order) grouped into cells: a new cell starts after a rule
    and where the gap from the cell's words to the next word is wider than :data:`GAP` (between
    two CJK words :data:`CJK_GAP`) times ``height``, unless the line looks like justified prose
    (:func:`is_justified`). Rules and empty words are left out."""
    words = [word for word in words if word.text.strip()]
    if is_justified(words, height):
        return [words]
    cells: list[list[Word]] = []
    current: list[Word] = []
    right = 0
    for word in words:
        if is_rule(word):
            if current:
                cells.append(current)
            current = []
            continue
        if current:
            both_cjk = _CJK_CHAR.match(current[-1].text.rstrip()[-1]) and _CJK_CHAR.match(word.text.lstrip()[0])
            if word.left - right > (CJK_GAP if both_cjk else GAP) * height:
                cells.append(current)
                current = []
        right = max(right, word.right) if current else word.right
        current.append(word)
    if current:
        cells.append(current)
    return cells


def is_justified(words: Sequence[Word], height: float) -> bool:
    """Whether the line of ``words`` looks like justified prose: gaps of one width, not too wide,
    words mostly with letters, no table rule (see :data:`JUSTIFIED_GAPS`). A row of figures, or
    a label and figures, is not: its gaps differ or its words are not letters."""
    if len(words) <= JUSTIFIED_GAPS or any(is_rule(word) for word in words):
        return False
    gaps = [after.left - before.right for before, after in zip(words, words[1:])]
    widest, middle = max(gaps), median(gaps)
    if middle <= 0 or widest > JUSTIFIED_SPREAD * middle or widest > JUSTIFIED_MAX * height:
        return False
    return 3 * sum(any(char.isalpha() for char in word.text) for word in words) >= 2 * len(words)


def segment(words: Sequence[Word]) -> Segment:
    """One cell's words as a segment: text joined by spaces (none between CJK characters), the
    union of their boxes, the mean of their confidences as 0..1."""
    text = join_cjk(" ".join(" ".join(word.text.split()) for word in words))
    confidence = sum(word.confidence for word in words) / len(words) / 100.0
    return Segment(
        text,
        min(word.left for word in words),
        min(word.top for word in words),
        max(word.right for word in words),
        max(word.bottom for word in words),
        min(max(confidence, 0.0), 1.0) if math.isfinite(confidence) else 0.0,
    )
