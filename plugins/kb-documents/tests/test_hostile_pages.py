"""``kb pages`` over hostile citations, and region boxes that stay on their page (issue 42, part 5)."""

from __future__ import annotations

import builtins
import math
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core import Citation, Document, KbError
from kb_core.plugin import OcrLine
from kb_documents.cli import resolve
from kb_documents.ocr_pages import OcrPage, clean_lines, line_entries, ocr_metadata


@attrs.frozen
class Store:
    """The one method of the store of record that :func:`resolve` reads."""

    documents: dict[str, Document]

    def get_document(self, path: str) -> Document | None:
        return self.documents.get(path)


def _document(path: str, metadata: dict[str, Any]) -> Document:
    return Document(path, "0" * 64, 1, path, "documents", "/nowhere", metadata)


ONE_PAGE = {"page_lines": [1], "ocr": {"pages": [[1, 612, 792]], "lines": [[2, 1, 72, 100, 300, 14, 0.9]]}}
STORE = Store({"scan.pdf": _document("scan.pdf", ONE_PAGE), "notes.md": _document("notes.md", {})})


def _short_range(*args: int) -> range:
    """``range``, refusing one of more than a million numbers (a loop over a citation's line span)."""
    made = _RANGE(*args)
    if len(made) > 1_000_000:
        raise AssertionError(f"a loop over {len(made):,} numbers")
    return made


_RANGE = range


@pytest.mark.parametrize(
    ("citation", "words"),
    [
        ("scan.pdf#page=100&L1-L3", "page=100 is not a page of 'scan.pdf': it has 1 page"),
        ("scan.pdf#page=0&L1-L3", "page = 0 in"),
        ("notes.md#page=1&L1-L3", "page=1 is not a page of 'notes.md': it has no pages"),
        ("scan.pdf#L-1-L2", "line = -1 in"),
        ("scan.pdf#L1-L999999999999", "line = 999999999999 in"),
        (f"scan.pdf#L1-L{'7' * 4301}", "(4,301 digits) in"),
    ],
)
def test_pages_refuses_a_citation_the_document_cannot_have(
    monkeypatch: pytest.MonkeyPatch, citation: str, words: str
) -> None:
    monkeypatch.setattr(builtins, "range", _short_range)  # (no loop over the citation's lines, before or after)
    with pytest.raises(KbError) as refused:
        resolve(STORE, [citation])
    monkeypatch.undo()
    assert words in refused.value.message and "\n" not in str(refused.value)


def test_pages_takes_the_form_it_prints_and_prints_the_same() -> None:
    (linked,) = resolve(STORE, ["scan.pdf#L2-L2"])
    assert linked.link == "scan.pdf#page=1&xywh=72,100,300,14&L2-L2"
    (again,) = resolve(STORE, [linked.link])
    assert again == linked
    assert Citation.parse(linked.link) == Citation("scan.pdf", 2, 2)  # what kb inspect and kb serve read


def test_a_stored_box_a_point_past_its_page_is_linked_inside_it() -> None:
    wide = {"page_lines": [1], "ocr": {"pages": [[1, 612, 792]], "lines": [[1, 1, 100, 10, 513, 14, 0.9]]}}
    (linked,) = resolve(Store({"scan.pdf": _document("scan.pdf", wide)}), ["scan.pdf#L1-L1"])
    assert linked.region == {"page": 1, "x": 100, "y": 10, "w": 512, "h": 14}


#: A scanned page: its size in points, and its scale in pixels a point (pdfium rounds the bitmap's sides up).
PAGES = st.tuples(st.floats(1, 2000), st.floats(1, 2000), st.floats(0.05, 5))
PIXEL_BOXES = st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))


@given(PAGES, st.lists(PIXEL_BOXES, min_size=1, max_size=8))
def test_a_region_box_lies_inside_the_page_size_stored_with_it(
    page: tuple[float, float, float], boxes: list[tuple[float, float, float, float]]
) -> None:
    width, height, scale = page
    pixels_wide, pixels_high = math.ceil(width * scale), math.ceil(height * scale)
    read = [
        OcrLine(
            f"line {n}",
            (round(x * pixels_wide), round(y * pixels_high), round(w * pixels_wide), round(h * pixels_high)),
            0.9,
        )
        for n, (x, y, w, h) in enumerate(boxes)
    ]
    ocr_page = OcrPage(1, width, height, scale, clean_lines(read, pixels_wide, pixels_high))
    rows = ocr_page.layout()
    metadata = ocr_metadata("scripted", [(ocr_page, rows)], [0])
    ((_, page_width, page_height),) = metadata["pages"]
    for _line, _page, x, y, w, h, _confidence in line_entries(ocr_page, rows, 1):
        assert 0 <= x <= x + w <= page_width and 0 <= y <= y + h <= page_height


def test_the_last_pixel_of_a_page_rounded_up_is_not_a_point_past_it() -> None:
    scale = 200 / 72  # a 612.4 pt wide page at 200 dpi: pdfium renders 1,702 px, 612.7 pt
    ocr_page = OcrPage(1, 612.4, 792.0, scale, clean_lines([OcrLine("edge", (0, 0, 1702, 40), 0.9)], 1702, 2200))
    ((*_, x, _y, w, _h, _confidence),) = line_entries(ocr_page, ocr_page.layout(), 1)
    assert x + w == 612


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 10**400, None])
def test_an_engine_box_of_no_finite_number_is_clipped_not_raised(value: Any) -> None:
    (line,) = clean_lines([OcrLine("text", (value, 5, value, 10), 0.9)], 100, 50)
    x, y, w, h = line.box
    assert 0 <= x <= x + w <= 100 and (y, h) == (5, 10)
