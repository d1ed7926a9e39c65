"""Citations to page links: ``report.pdf#L8-L15`` -> ``report.pdf#page=2&L8-L15``."""

from __future__ import annotations

import pytest

from kb_core import Citation, KbError
from kb_core.commands import region_of
from kb_documents.cli import page_link, parse_citation


def test_a_citation_in_either_form_parses_to_the_same_lines() -> None:
    assert parse_citation("report.pdf#L8-L15") == Citation("report.pdf", 8, 15)
    assert parse_citation("report.pdf#page=2&L8-L15") == Citation("report.pdf", 8, 15)
    assert parse_citation("odd#name.pdf#L1-L2") == Citation("odd#name.pdf", 1, 2)
    assert parse_citation("scan.pdf#page=3&xywh=72,96,432,31&L8-L15") == Citation("scan.pdf", 8, 15)
    assert parse_citation("photo.jpg#xywh=1,2,3,4&L3-L4") == Citation("photo.jpg", 3, 4)


@pytest.mark.parametrize(
    "text", ["report.pdf", "report.pdf#page=2", "report.pdf#Lx-L2", "", "scan.pdf#xywh=1,2&L1-L2", "a.pdf#page=1&L1"]
)
def test_anything_else_is_one_clear_error(text: str) -> None:
    with pytest.raises(KbError, match="not a citation"):
        parse_citation(text)


def test_page_links() -> None:
    pages = [1, 8, 16]
    inside = page_link(Citation("report.pdf", 9, 15), pages)
    assert (inside.link, inside.first_page, inside.last_page) == ("report.pdf#page=2&L9-L15", 2, 2)
    across = page_link(Citation("report.pdf", 5, 9), pages)
    assert (across.first_page, across.last_page) == (1, 2)
    no_pages = page_link(Citation("handbook.docx", 3, 4), [])
    assert (no_pages.link, no_pages.first_page) == ("handbook.docx#L3-L4", None)


OCR = {
    "engine": "scripted-ocr 1",
    "pages": [[2, 595, 842], [3, 595, 842]],
    "lines": [[9, 2, 72, 96, 432, 14, 0.9], [10, 2, 72, 113, 240, 14, 0.7], [17, 3, 50, 60, 100, 20, 0.9]],
}


def test_a_citation_into_an_ocr_page_names_the_union_of_its_lines_boxes() -> None:
    pages = [1, 8, 16]
    both = page_link(Citation("scan.pdf", 9, 10), pages, OCR)
    assert both.region == {"page": 2, "x": 72, "y": 96, "w": 432, "h": 31}
    assert both.link == "scan.pdf#page=2&xywh=72,96,432,31&L9-L10"
    across = page_link(Citation("scan.pdf", 10, 17), pages, OCR)  # the region lies on the first page
    assert across.region == {"page": 2, "x": 72, "y": 113, "w": 240, "h": 14} and across.last_page == 3
    page_line_only = page_link(Citation("scan.pdf", 8, 8), pages, OCR)
    assert (page_line_only.region, page_line_only.link) == (None, "scan.pdf#page=2&L8-L8")
    text_page = page_link(Citation("scan.pdf", 2, 4), pages, OCR)  # page 1 has a text layer
    assert (text_page.region, text_page.link) == (None, "scan.pdf#page=1&L2-L4")


def test_the_region_is_the_one_kb_ask_names() -> None:
    pages = [1, 8, 16]
    for start, end in ((9, 10), (10, 17), (7, 9), (2, 9), (16, 17), (8, 8)):
        item = page_link(Citation("scan.pdf", start, end), pages, OCR)
        region = region_of({"ocr": OCR}, start, end)  # what kb ask cites (Region.fragment)
        if region is None:
            assert item.region is None
            continue
        x, y, w, h = region.box
        assert item.region == {"page": region.page, "x": x, "y": y, "w": w, "h": h}
        assert item.link == f"scan.pdf#{region.fragment()}&L{start}-L{end}"
    reaching = page_link(Citation("scan.pdf", 7, 9), pages, OCR)  # from page 1's text layer onto page 2's scan
    assert (reaching.first_page, reaching.last_page) == (1, 2)
    assert reaching.link == "scan.pdf#page=2&xywh=72,96,432,14&L7-L9"


def test_a_single_page_image_has_no_page_in_its_link() -> None:
    ocr = {"lines": [[2, 1, 40, 300, 600, 40, 0.88]]}
    photo = page_link(Citation("birds.png", 2, 2), [1], ocr)
    assert photo.link == "birds.png#page=1&xywh=40,300,600,40&L2-L2" and photo.first_page == 1


@pytest.mark.parametrize("ocr", [None, "x", {"lines": "x"}, {"lines": [[9, 2, "72", 96, 1, 1, 0.9], [9], None]}])
def test_malformed_ocr_metadata_gives_no_region(ocr: object) -> None:
    assert page_link(Citation("scan.pdf", 9, 10), [1, 8], ocr).region is None
