"""The engine reads English, Korean and Chinese pages and turned pages, with boxes where the text was
drawn; it never raises on any small image."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tesseract_pages import (
    CHINESE,
    CHINESE_TABLE,
    ENGLISH,
    ENGLISH_TABLE,
    KOREAN,
    KOREAN_TABLE,
    Page,
    chinese_page,
    english_page,
    inside,
    korean_page,
)

from kb_core.plugin import OcrImage, OcrLine
from kb_tesseract.engine import TesseractEngine
from kb_tesseract.pixels import join_cjk

pytestmark = pytest.mark.needs_ocr_data


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _check_boxes(lines: list[OcrLine], page: Page, width: int, height: int) -> None:
    """Every line lies in the image, and each drawn line was read inside the box it was drawn in."""
    for line in lines:
        x, y, w, h = line.box
        assert x >= 0 and y >= 0 and w > 0 and h > 0 and x + w <= width and y + h <= height, line
        assert 0.0 <= line.confidence <= 1.0 and line.text == line.text.strip() and line.text
    for drawn, box in page.lines.items():
        matches = [line for line in lines if _squeeze(line.text) == _squeeze(join_cjk(drawn))]
        assert matches, (drawn, [line.text for line in lines])
        assert inside(matches[0].box, box), (drawn, matches[0].box, box)


def _read(engine: TesseractEngine, page: Page) -> list[OcrLine]:
    started = time.perf_counter()
    lines = engine.read(page.ocr_image())
    print(f"read in {time.perf_counter() - started:.2f} s")  # shown with pytest -s
    return lines


def test_an_english_page_with_a_table(shared_engine: TesseractEngine) -> None:
    page = english_page()
    lines = _read(shared_engine, page)
    text = " ".join(line.text for line in lines)
    for cell in (cell for row in ENGLISH_TABLE for cell in row):
        assert cell in text, text
    _check_boxes(lines, page, *page.image.size)
    assert [line.text for line in lines][:3] == ENGLISH  # reading order, paragraph first
    assert min(line.confidence for line in lines) > 0.8


def test_a_korean_page_is_read_without_spaces_between_syllables(shared_engine: TesseractEngine) -> None:
    page = korean_page()
    lines = _read(shared_engine, page)
    text = "".join(_squeeze(line.text) for line in lines)
    for cell in (cell for row in KOREAN_TABLE for cell in row):
        assert _squeeze(cell) in text, text
    _check_boxes(lines, page, *page.image.size)
    assert lines[0].text == join_cjk(KOREAN[0])
    texts = [line.text for line in lines]
    assert "운행횟수" in texts, texts  # Hangul joined; each figure a cell of its own
    assert texts[texts.index("운행횟수") :][:4] == ["운행횟수", "4,081", "261", "5,090"], texts


def test_without_split_cells_a_korean_row_is_one_line(unsplit_engine: TesseractEngine) -> None:
    lines = _read(unsplit_engine, korean_page())
    assert any(line.text.startswith("운행횟수 4,081") for line in lines)  # Hangul joined, figures spaced


def test_a_chinese_page(shared_engine: TesseractEngine) -> None:
    page = chinese_page()
    lines = _read(shared_engine, page)
    text = "".join(_squeeze(line.text) for line in lines)
    for figure in CHINESE_TABLE[1][1:]:
        assert figure in text, text
    _check_boxes(lines, page, *page.image.size)
    assert lines[0].text == CHINESE[0] and " " not in lines[1].text


@pytest.mark.parametrize(
    ("make", "degrees"),
    [(english_page, 90), (english_page, 180), (english_page, 270), (korean_page, 90)],
    ids=["english-90", "english-180", "english-270", "korean-90"],
)
def test_a_turned_page_is_read_upright_with_boxes_on_the_image_as_given(
    shared_engine: TesseractEngine, make: Callable[[], Page], degrees: int
) -> None:
    upright = make()
    page = upright.turned(degrees)
    lines = _read(shared_engine, page)
    _check_boxes(lines, page, *page.image.size)
    assert page.image.size != upright.image.size or degrees == 180
    assert [line.text for line in lines][:3] == [join_cjk(text) for text in upright.lines]


def test_a_page_at_another_resolution(shared_engine: TesseractEngine) -> None:
    page = english_page()
    assert [line.text for line in shared_engine.read(page.ocr_image(dpi=300))][:3] == ENGLISH


def test_threads_take_turns(shared_engine: TesseractEngine) -> None:
    image = english_page().ocr_image()
    results: list[list[OcrLine]] = []
    threads = [threading.Thread(target=lambda: results.append(shared_engine.read(image))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 2 and results[0] == results[1] and results[0]


@pytest.mark.parametrize(
    "image",
    [
        OcrImage(b"", 0, 0, 150),
        OcrImage(b"\0" * 12, 2, 2, -5),  # a resolution no page has
        OcrImage(b"\xff" * 30, 10, 10, 150),  # fewer pixels than the size says
        OcrImage(b"\xff" * 3 * 40_000, 40_000, 1, 150),  # wider than Tesseract takes
        OcrImage(b"\0" * 3 * 2_000, 1, 2_000, 2**40),
    ],
    ids=["empty", "negative-dpi", "short", "too-wide", "huge-dpi"],
)
def test_odd_images_give_no_lines(shared_engine: TesseractEngine, image: OcrImage) -> None:
    assert shared_engine.read(image) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    width=st.integers(1, 64),
    height=st.integers(1, 64),
    dpi=st.integers(1, 1200),
    data=st.data(),
)
def test_any_small_image_reads_without_error(
    shared_engine: TesseractEngine, width: int, height: int, dpi: int, data: st.DataObject
) -> None:
    kind = data.draw(st.sampled_from(["noise", "flat", "stripes"]))
    if kind == "noise":
        pixels = data.draw(st.binary(min_size=width * height * 3, max_size=width * height * 3))
    elif kind == "flat":
        pixels = bytes([data.draw(st.integers(0, 255))]) * (width * height * 3)
    else:
        row = bytes(0 if (x // 2) % 2 else 255 for x in range(width) for _ in range(3))
        pixels = row * height
    for line in shared_engine.read(OcrImage(pixels, width, height, dpi)):
        x, y, w, h = line.box
        assert x >= 0 and y >= 0 and w >= 0 and h >= 0 and x + w <= width and y + h <= height, line
        assert 0.0 <= line.confidence <= 1.0 and line.text.strip() == line.text and line.text
