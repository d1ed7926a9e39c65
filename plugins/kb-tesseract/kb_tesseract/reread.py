"""Words of a Korean page read again with other models: Hanja and Latin words inside Hangul text.

Korean documents write Hanja (大韓民國, 首都) and Latin words (Tesseract, PostgreSQL) inside Korean
sentences. Tesseract's Korean models know no Hanja and read short Latin words poorly (大韓民國 ->
``즈뿔보메``, ``PDF`` -> ``P0``), and a page is read with one model. So, after the Korean model
has read the page, each run of a line's words that it read doubtfully (confidence under
:data:`DOUBTFUL`) or that holds Latin letters is read again by each of the other models (``HanT``,
``eng``), as one line in the run's box: from the run's first word to the next word kept (box
right edges of Hangul words are often too wide, left edges are not), widened by :data:`PAD_X` and
:data:`PAD_Y` line heights (Tesseract reads a tight crop badly, often as nothing). The reading with
the highest mean word confidence replaces the run when it is at least :data:`MIN_CONFIDENCE` and
above the run's own; its words whose centre lies outside the run's box (pieces of the neighbours
caught in the widened box) are dropped. Pure: the readers are given (:mod:`kb_tesseract.engine`
makes them with tesserocr).

Measured on generated Korean pages (``bench/ocr_mixed.py``, docs/evaluation.md): mixed pages lose
about a third as many character bigrams; pure Korean pages do not lose more.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kb_tesseract.cells import Word

#: A word the Korean model read with a confidence (0-100) under this is read again.
DOUBTFUL = 75.0
#: A re-reading replaces a run only with a mean word confidence of at least this.
MIN_CONFIDENCE = 40.0
#: The run's box is widened by this many line heights left and right, and PAD_Y above and below.
PAD_X = 0.6
PAD_Y = 0.2

Corners = tuple[int, int, int, int]  # left, top, right, bottom
#: Reads the box (corners on the page) with one model as one line: its words, on the page.
Reader = Callable[[Corners], list[Word]]
_LATIN = re.compile("[A-Za-z]")


def doubtful(word: Word) -> bool:
    """Whether the Korean model's reading of ``word`` is to be checked: low confidence or Latin letters."""
    return not word.confidence >= DOUBTFUL or _LATIN.search(word.text) is not None


def runs(words: Sequence[Word]) -> list[tuple[int, int]]:
    """The runs of consecutive doubtful words, as ``(start, end)`` indexes (end excluded)."""
    found: list[tuple[int, int]] = []
    start: int | None = None
    for index, word in enumerate(words):
        if doubtful(word):
            start = index if start is None else start
        elif start is not None:
            found.append((start, index))
            start = None
    if start is not None:
        found.append((start, len(words)))
    return found


def run_box(words: Sequence[Word], start: int, end: int, top: int, bottom: int) -> Corners:
    """The box of the run ``words[start:end]`` on a line from ``top`` to ``bottom``: from its first
    word's left edge to the next word's (the last word's right edge at the end of the line)."""
    left = words[start].left
    right = words[end].left if end < len(words) else max(word.right for word in words[start:end])
    return left, top, max(right, left + 1), bottom


def reread_words(
    words: Sequence[Word], top: int, bottom: int, readers: Sequence[Reader], size: tuple[int, int]
) -> list[Word]:
    """The words of a line from ``top`` to ``bottom``, each doubtful run replaced by the best
    re-reading of its box when one is better (see the module); ``size`` is the page's width and height."""
    out: list[Word] = []
    done = 0
    height = max(bottom - top, 1)
    for start, end in runs(words):
        out.extend(words[done:start])
        done = end
        run = list(words[start:end])
        left, _, right, _ = run_box(words, start, end, top, bottom)
        pad_x, pad_y = max(4, round(PAD_X * height)), max(2, round(PAD_Y * height))
        widened = (max(0, left - pad_x), max(0, top - pad_y), min(size[0], right + pad_x), min(size[1], bottom + pad_y))
        best, best_confidence = run, _mean(run)
        if widened[2] > widened[0] and widened[3] > widened[1]:
            for reader in readers:
                inside = [w for w in reader(widened) if left <= (w.left + w.right) / 2 <= right]
                confidence = _mean(inside)
                if inside and confidence >= MIN_CONFIDENCE and confidence > best_confidence:
                    best, best_confidence = inside, confidence
        out.extend(best)
    out.extend(words[done:])
    return out


def _mean(words: Sequence[Word]) -> float:
    return sum(word.confidence for word in words) / len(words) if words else 0.0
