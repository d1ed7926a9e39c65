"""The PDF parser over the generated fixtures: reading order, headings, tables, pages, bad files."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kb_core import KbError
from kb_core.plugin import ParsedDocument
from kb_documents.assemble import page_of_line, parsed_text
from kb_documents.limits import Limits
from kb_documents.pdf import PdfParser

Fixture = Callable[[str], bytes]
Parse = Callable[..., ParsedDocument]


@pytest.fixture
def parse(fixture_bytes: Fixture) -> Parse:
    """``parse(name, limits=None)``: a fixture parsed by PdfParser.parse_bytes."""
    return lambda name, limits=None: PdfParser(limits).parse_bytes(fixture_bytes(name), name)


def _line_of(doc: ParsedDocument, needle: str) -> int:
    lines = parsed_text(doc.blocks).split("\n")
    return next(n for n, text in enumerate(lines, start=1) if needle in text)


def test_each_page_starts_with_its_page_line_and_heading_paths_carry_the_page(parse: Parse) -> None:
    doc = parse("report.pdf")
    lines = parsed_text(doc.blocks).split("\n")
    assert doc.metadata["pages"] == 3
    assert [lines[n - 1] for n in doc.metadata["page_lines"]] == ["Page 1", "Page 2", "Page 3"]
    for block in doc.blocks:
        page = page_of_line(doc.metadata["page_lines"], block.start_line)
        assert page_of_line(doc.metadata["page_lines"], block.end_line) == page  # no block spans pages
        assert block.heading_path[0] == f"Page {page}"
        assert block.verbatim and block.text.split("\n") == lines[block.start_line - 1 : block.end_line]


def test_page_of_a_line_span(parse: Parse) -> None:
    doc = parse("report.pdf")
    starts = doc.metadata["page_lines"]
    assert page_of_line(starts, _line_of(doc, "commissioned on 14 July")) == 1
    assert page_of_line(starts, _line_of(doc, "Lakeside | 4210")) == 2
    assert page_of_line(starts, _line_of(doc, "version 7.2")) == 3
    assert page_of_line(starts, 0) is None


def test_outline_and_heading_lines_make_the_heading_path(parse: Parse) -> None:
    doc = parse("report.pdf")
    assert doc.title == "Q3 Operations Report"
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.heading_path == ("Page 2", "Q3 Operations Report", "Results")
    columns = next(b for b in doc.blocks if "left column starts" in b.text)
    assert columns.heading_path == ("Page 3", "Q3 Operations Report", "Maintenance")


def test_table_rows_stay_rows(parse: Parse) -> None:
    table = next(b for b in parse("report.pdf").blocks if b.kind == "table")
    assert table.text.split("\n") == [
        "Plant | Output MWh | Availability",
        "Lakeside | 4210 | 99.1%",
        "Ridgeback | 3875 | 97.4%",
        "Saltmarsh | 2950 | 98.8%",
    ]


def test_two_columns_are_not_interleaved(parse: Parse) -> None:
    doc = parse("columns.pdf")
    text = parsed_text(doc.blocks)
    order = [
        text.index(s)
        for s in (
            "Site Notes",
            "The left column starts here",
            "The left column ends here",
            "The right column starts here",
            "The right column ends here",
            "full-width closing paragraph",
        )
    ]
    assert order == sorted(order)
    assert "Panels The right" not in text  # pdfium's own text order would join the columns here


def test_parse_of_lossless_text_equals_parse_bytes(fixture_bytes: Fixture) -> None:
    data = fixture_bytes("report.pdf")
    assert PdfParser().parse(data.decode("utf-8"), "report.pdf") == PdfParser().parse_bytes(data, "report.pdf")


def test_parse_of_lossy_text_says_what_the_core_must_do(fixture_bytes: Fixture) -> None:
    with pytest.raises(KbError, match="parse_bytes"):
        PdfParser().parse(fixture_bytes("corrupt.pdf").decode("utf-8", errors="replace"), "corrupt.pdf")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("encrypted.pdf", "the PDF is encrypted"),
        ("scanned.pdf", "no text layer; OCR is not installed"),
        ("truncated.pdf", "the PDF is truncated"),
        ("corrupt.pdf", "the PDF is damaged"),
        ("handbook.docx", "not a PDF"),
    ],
)
def test_bad_pdfs_raise_one_clear_line(parse: Parse, name: str, message: str) -> None:
    with pytest.raises(KbError) as caught:
        parse(name)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value) and caught.value.hint


def test_page_and_size_limits(parse: Parse) -> None:
    with pytest.raises(KbError, match="3 pages, over the limit of 2"):
        parse("report.pdf", Limits(max_pages=2))
    with pytest.raises(KbError, match="over the limit of 1000"):
        parse("report.pdf", Limits(max_bytes=1000))


def test_characters_over_the_page_limit_are_dropped_with_a_warning(parse: Parse) -> None:
    doc = parse("report.pdf", Limits(max_chars_per_page=40))
    assert any("page 1: text over 40 characters dropped" in w for w in doc.warnings)


def test_limits_come_from_the_backends_documents_table() -> None:
    assert Limits.from_options({"max_pages": 7}).max_pages == 7
    with pytest.raises(KbError, match="is not an option of"):
        Limits.from_options({"max_pagez": 7})
    with pytest.raises(KbError, match="is not a whole number from 1 to"):
        Limits.from_options({"max_pages": 0})


def test_running_header_and_footer_are_dropped(parse: Parse) -> None:
    doc = parse("report.pdf")
    text = parsed_text(doc.blocks)
    assert "Heliograph Solar - Q3 Operations Report - internal" not in text
    assert "of 3" not in text
    assert doc.metadata["running_lines_dropped"] == 6
