"""A line is split into cells at wide gaps: the pure rules (no Tesseract), then rendered pages read by
the engine (a table without rules comes out as cells, a justified paragraph's lines stay whole)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tesseract_pages import CELLS_TABLE, JUSTIFIED, Box, Page, cells_page, inside

from kb_core.plugin import OcrLine
from kb_tesseract.cells import GAP, Word, is_justified, line_height, segment, split_words
from kb_tesseract.engine import TesseractEngine

HEIGHT = 20.0  # the line height of the made-up lines below


def _line(*spec: tuple[str, int, int]) -> list[Word]:
    """Words on one line from ``(text, left, right)``, 20 px high, confidence 90."""
    return [Word(text, left, 100, right, 120, 90.0) for text, left, right in spec]


def _texts(cells: list[list[Word]]) -> list[str]:
    return [" ".join(word.text for word in cell) for cell in cells]


def test_wide_gaps_split_a_row_and_spaces_do_not() -> None:
    words = _line(("Net", 0, 40), ("revenue", 46, 130), ("4,210", 400, 460), ("3,980", 560, 620))
    assert _texts(split_words(words, HEIGHT)) == ["Net revenue", "4,210", "3,980"]


def test_a_gap_must_be_wider_than_the_threshold() -> None:
    at = int(GAP * HEIGHT)
    assert len(split_words(_line(("a", 0, 10), ("b", 10 + at, 20 + at)), HEIGHT)) == 1
    assert len(split_words(_line(("a", 0, 10), ("b", 11 + at, 21 + at)), HEIGHT)) == 2


def test_the_gap_is_measured_from_the_widest_word_so_far() -> None:
    words = _line(("wide", 0, 200), ("x", 100, 110), ("y", 220, 230))  # boxes that overlap
    assert _texts(split_words(words, HEIGHT)) == ["wide x y"]


def test_between_two_cjk_words_the_gap_must_be_wider() -> None:
    gap = int(1.8 * HEIGHT)  # Tesseract misplaces boxes of Chinese characters by this much
    chinese = _line(("第二个", 0, 60), ("品种", 60 + gap, 100 + gap))
    assert _texts(split_words(chinese, HEIGHT)) == ["第二个 品种"]
    label = _line(("2021年", 0, 60), ("4,081", 60 + gap, 110 + gap))  # a figure is not CJK
    assert len(split_words(label, HEIGHT)) == 2
    assert len(split_words(_line(("运行", 0, 40), ("次数", 110, 150)), HEIGHT)) == 2  # 3.5 line heights


def test_a_table_rule_read_as_a_word_ends_a_cell_and_is_dropped() -> None:
    words = _line(("|", 0, 3), ("Granted", 10, 80), ("3,288", 300, 350), ("|", 356, 359), ("$6.74", 366, 420))
    assert _texts(split_words(words, HEIGHT)) == ["Granted", "3,288", "$6.74"]
    assert split_words(_line(("||", 0, 5)), HEIGHT) == []
    assert _texts(split_words(_line(("a|b", 0, 30), ("c", 36, 46)), HEIGHT)) == ["a|b c"]  # not a rule alone


def test_empty_words_are_left_out() -> None:
    assert _texts(split_words(_line(("a", 0, 10), (" ", 12, 14), ("b", 20, 30)), HEIGHT)) == ["a b"]
    assert split_words([], HEIGHT) == []


def _spaced(texts: list[str], gap: int, width: int = 60) -> list[Word]:
    return _line(*((text, i * (width + gap), i * (width + gap) + width) for i, text in enumerate(texts)))


def test_a_justified_line_of_prose_stays_whole() -> None:
    gap = int(1.9 * HEIGHT)  # wider than GAP, but every gap alike
    prose = _spaced(["while", "the", "orders", "booked", "for", "next"], gap)
    assert is_justified(prose, HEIGHT) and _texts(split_words(prose, HEIGHT)) == ["while the orders booked for next"]
    assert len(split_words(_spaced(["orders", "booked", "before"], gap), HEIGHT)) == 1  # three words suffice


@pytest.mark.parametrize(
    ("words", "why"),
    [
        (_spaced(["2019", "2018", "2017", "2016"], int(1.9 * HEIGHT)), "figures"),
        (_spaced(["Q1", "2019", "2018", "2017"], int(1.9 * HEIGHT)), "mostly figures"),
        (_spaced(["Region", "North", "South", "East"], int(3.5 * HEIGHT)), "gaps too wide for prose"),
        (_spaced(["Cash", "held", "abroad"], int(1.6 * HEIGHT)) + _line(("total", 300, 360)), "gaps unlike"),
        (_spaced(["Cash", "|", "held", "abroad"], int(1.9 * HEIGHT)), "a rule"),
        (_spaced(["Cash", "held"], int(1.9 * HEIGHT)), "one gap"),
    ],
)
def test_what_is_not_justified_prose_is_split(words: list[Word], why: str) -> None:
    assert not is_justified(words, HEIGHT), why
    assert len(split_words(words, HEIGHT)) > 1, why


def test_a_segment_has_the_union_box_and_the_mean_confidence() -> None:
    words = [Word("Net", 10, 20, 50, 40, 80.0), Word("revenue", 56, 18, 140, 44, 100.0)]
    assert segment(words) == ("Net revenue", 10, 18, 140, 44, 0.9)
    assert segment([Word("가", 0, 0, 10, 10, 90.0), Word("람", 11, 0, 20, 10, 90.0)]).text == "가람"
    assert segment([Word("x", 0, 0, 1, 1, math.nan)]).confidence == 0.0
    assert segment([Word("x", 0, 0, 1, 1, 250.0)]).confidence == 1.0


@pytest.mark.parametrize(
    ("row_height", "box_height", "height"),
    [(22.0, 23, 22.0), (19.6, 29, 19.6), (2.0, 23, 11.5), (95.0, 23, 46.0), (math.nan, 23, 23.0), (5.0, 0, 2.0)],
)
def test_the_line_height_is_the_row_height_within_the_box(row_height: float, box_height: int, height: float) -> None:
    assert line_height(row_height, box_height) == height


_WORD_TEXT = st.sampled_from(["Revenue", "4,210", "|", "가람", "品种", " ", "(13)%", "a"])


@given(
    spec=st.lists(st.tuples(_WORD_TEXT, st.integers(-20, 400), st.integers(0, 80), st.floats(0, 100)), max_size=12),
    height=st.floats(1, 60),
)
def test_splitting_keeps_every_word_in_order(spec: list[tuple[str, int, int, float]], height: float) -> None:
    words, left = [], 0
    for text, gap, width, confidence in spec:
        left += gap
        words.append(Word(text, left, 0, left + width, 20, confidence))
        left += width
    cells = split_words(words, height)
    assert [word for cell in cells for word in cell] == [w for w in words if w.text.strip() and w.text != "|"]
    assert all(cells)
    for cell in cells:
        piece = segment(cell)
        assert piece.text and 0.0 <= piece.confidence <= 1.0 and piece.left <= piece.right


# --------------------------------------------------------------------------- pages


def _in_band(lines: list[OcrLine], boxes: list[Box]) -> list[OcrLine]:
    """The lines whose vertical middle lies within the rows the ``boxes`` were drawn on."""
    top = min(box[1] for box in boxes) - 6
    bottom = max(box[1] + box[3] for box in boxes) + 6
    return [line for line in lines if top <= line.box[1] + line.box[3] / 2 <= bottom]


@pytest.mark.needs_ocr_data
def test_a_table_row_comes_out_as_cells_left_to_right(shared_engine: TesseractEngine) -> None:
    page = cells_page()
    lines = shared_engine.read(page.ocr_image())
    for row in CELLS_TABLE:
        cells = _in_band(lines, [page.lines[cell] for cell in row])
        assert len(cells) >= 3, (row, cells)
        assert [cell.text for cell in cells] == row
        for before, after in zip(cells, cells[1:]):
            assert before.box[0] + before.box[2] < after.box[0], (before, after)  # left to right, apart
        for cell in cells:
            assert inside(cell.box, page.lines[cell.text], slack=6), (cell, page.lines[cell.text])
            assert 0.8 <= cell.confidence <= 1.0


@pytest.mark.needs_ocr_data
def test_the_lines_of_a_justified_paragraph_stay_whole(shared_engine: TesseractEngine) -> None:
    page = cells_page()
    lines = shared_engine.read(page.ocr_image())
    for drawn in JUSTIFIED:
        read = _in_band(lines, [page.lines[drawn]])
        assert [line.text for line in read] == [drawn], read
        assert inside(read[0].box, page.lines[drawn])


@pytest.mark.needs_ocr_data
def test_without_split_cells_each_row_is_one_line(unsplit_engine: TesseractEngine) -> None:
    page = cells_page()
    lines = unsplit_engine.read(page.ocr_image())
    for row in CELLS_TABLE:
        read = _in_band(lines, [page.lines[cell] for cell in row])
        assert [line.text for line in read] == [" ".join(row)], read
    assert [line.text for line in lines][: len(JUSTIFIED)] == JUSTIFIED


@pytest.mark.needs_ocr_data
def test_cells_of_a_turned_page_are_boxed_on_the_page_as_given(shared_engine: TesseractEngine) -> None:
    upright = cells_page()
    page: Page = upright.turned(90)
    lines = shared_engine.read(page.ocr_image())
    width, height = page.image.size
    for cell in (cell for row in CELLS_TABLE for cell in row):
        found = [line for line in lines if line.text == cell]
        assert found, (cell, [line.text for line in lines])
        assert inside(found[0].box, page.lines[cell], slack=6), (cell, found[0].box, page.lines[cell])
    assert all(x >= 0 and y >= 0 and x + w <= width and y + h <= height for x, y, w, h in (ln.box for ln in lines))
