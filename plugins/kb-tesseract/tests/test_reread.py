"""Which words of a Korean page are read again and which reading is kept (pure: the readers are stand-ins)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from kb_tesseract.cells import Word
from kb_tesseract.reread import DOUBTFUL, MIN_CONFIDENCE, Corners, Reader, doubtful, reread_words, run_box, runs

SIZE = (1275, 1650)


def _word(text: str, left: int, confidence: float, width: int = 40) -> Word:
    return Word(text, left, 100, left + width, 124, confidence)


def _reader(*words: Word, seen: list[Corners] | None = None) -> Reader:
    def read(box: Corners) -> list[Word]:
        if seen is not None:
            seen.append(box)
        return list(words)

    return read


LINE = [
    _word("대한", 100, 93),
    _word("보렘", 150, 12),
    _word("은", 200, 90),
    _word("P0", 250, 95),
    _word("다", 300, 96),
]


def test_low_confidence_and_latin_letters_are_doubtful() -> None:
    assert doubtful(_word("보렘", 0, DOUBTFUL - 1)) and not doubtful(_word("대한", 0, DOUBTFUL))
    assert doubtful(_word("Tesseract", 0, 99)) and doubtful(_word("x", 0, math.nan))
    assert not doubtful(_word("2,081", 0, 90))  # figures the Korean model reads well
    assert runs(LINE) == [(1, 2), (3, 4)]
    assert runs([_word("a", 0, 99), _word("b", 50, 99), _word("다", 100, 99)]) == [(0, 2)]


def test_a_run_ends_where_the_next_word_begins() -> None:
    assert run_box(LINE, 1, 2, 100, 124) == (150, 100, 200, 124)  # not the word's own right edge
    assert run_box(LINE, 4, 5, 100, 124) == (300, 100, 340, 124)  # the line's last word: its own


def test_a_more_confident_reading_replaces_the_run_and_what_lies_outside_it_is_dropped() -> None:
    seen: list[Corners] = []
    hanja = _reader(_word("大韓", 152, 90), _word(":", 205, 95, 4), seen=seen)  # ":" is the next word's
    words = reread_words(LINE, 100, 124, [hanja], SIZE)
    assert [w.text for w in words] == ["대한", "大韓", "은", "P0", "다"]
    left, top, right, bottom = seen[0]
    assert left < 150 and right > 200 and top < 100 and bottom > 124  # widened: Tesseract reads tight crops badly


def test_the_best_reading_wins_and_a_poor_one_is_not_taken() -> None:
    poor = _reader(_word("PO", 250, MIN_CONFIDENCE - 1))
    good, better = _reader(_word("PDF", 250, 97)), _reader(_word("PDF.", 250, 98))
    assert [w.text for w in reread_words(LINE, 100, 124, [poor], SIZE)] == [w.text for w in LINE]
    assert reread_words(LINE, 100, 124, [good, better], SIZE)[3].text == "PDF."
    assert reread_words(LINE, 100, 124, [_reader()], SIZE) == LINE  # nothing read: kept


words_strategy = st.lists(
    st.tuples(st.sampled_from(["한", "大", "PDF", "12", "|", "x가"]), st.integers(0, 60), st.floats(0, 100)),
    max_size=12,
)


@given(line=words_strategy, found=words_strategy)
def test_sure_words_are_kept_in_order_whatever_the_readers_return(
    line: list[tuple[str, int, float]], found: list[tuple[str, int, float]]
) -> None:
    words, left = [], 0
    for text, gap, confidence in line:
        left += gap
        words.append(_word(text, left, confidence))
    boxes: list[Corners] = []
    reader = _reader(*(_word(text, 10 * gap, confidence) for text, gap, confidence in found), seen=boxes)
    out = reread_words(words, 100, 124, [reader], SIZE)
    assert [w for w in out if w in words and not doubtful(w)] == [w for w in words if not doubtful(w)]
    assert len(boxes) == len(runs(words))
    for x0, y0, x1, y1 in boxes:
        assert 0 <= x0 < x1 <= SIZE[0] and 0 <= y0 < y1 <= SIZE[1]
