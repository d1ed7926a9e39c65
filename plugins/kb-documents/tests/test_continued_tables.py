"""A table carried over a page break: the next page's rows keep the first page's header (``Block.header``)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import kb_core
from kb_core import Chunk
from kb_core.commands import stored_lines
from kb_core.plugin import Block, OcrLine, ParsedDocument
from kb_core.testing import ScriptedOcr, check_blocks
from kb_documents.assemble import Content, Heading, Page, assemble, parsed_text
from kb_documents.ocr_pages import Ocr
from kb_documents.pdf import PdfParser

Text = tuple[float, float, str]  # x, baseline (points from the foot of the page), text
HEADER = ("Segment", "2019", "2018")
COLUMNS = (60.0, 300.0, 420.0)


def text_pdf(pages: Sequence[Sequence[Text]], size: float = 10.0) -> bytes:
    """A born-digital PDF (A4, Helvetica at ``size`` points) with each page's texts where given."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", ""]
    kids = []
    font = 3 + 2 * len(pages)
    for texts in pages:
        escaped = [t.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for _, _, t in texts]
        stream = "\n".join(f"BT /F1 {size} Tf {x} {y} Td ({e}) Tj ET" for (x, y, _), e in zip(texts, escaped))
        kids.append(f"{len(objects) + 1} 0 R")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 {font} 0 R >> >>"
            f" /Contents {len(objects) + 2} 0 R >>"
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(pages)} >>"
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = "%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n" + "".join(f"{o:010d} 00000 n \n" for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return out.encode("latin-1")


def scanned_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` blank A4 page images at 150 dpi (no text layer: read by OCR)."""
    image, out = Image.new("RGB", (1240, 1754), "white"), io.BytesIO()
    image.save(out, "PDF", resolution=150, save_all=True, append_images=[image] * (pages - 1))
    return out.getvalue()


def scanned_rows(cells: Sequence[Sequence[str]], top: int, columns: Sequence[int] = (150, 600, 850)) -> list[OcrLine]:
    """OCR lines of table rows (boxes in pixels) from ``top`` down, 45 px apart, 20 px a character."""
    return [
        OcrLine(cell, (x, top + 45 * i, 20 * len(cell), 30), 0.9)
        for i, row in enumerate(cells)
        for x, cell in zip(columns, row)
    ]


def rows(cells: Sequence[Sequence[str]], top: float, columns: Sequence[float] = COLUMNS) -> list[Text]:
    """Table rows from baseline ``top`` down, 14 points apart, each cell at its column's x."""
    return [(x, top - 14 * i, cell) for i, row in enumerate(cells) for x, cell in zip(columns, row)]


FIRST = [("Fixed Price", "1,452.4", "1,146.2"), ("Cost Plus", "310.0", "295.5")]
SECOND = [("Time and Materials", "120.3", "98.1"), ("Total", "1,882.7", "1,539.8")]
PAGE_1 = [(60.0, 780.0, "Revenue by contract type, in millions."), *rows([HEADER, *FIRST], 740.0)]


def parse(pages: Sequence[Sequence[Text]]) -> ParsedDocument:
    document = PdfParser().parse_bytes(text_pdf(pages), "report.pdf")
    check_blocks(document)
    return document


def tables(document: ParsedDocument) -> list[Block]:
    return [block for block in document.blocks if block.kind == "table"]


def ingested_chunks(pdf: bytes, tmp_path: Path, config_file: Path) -> list[Chunk]:
    """The chunks kb stores for ``pdf`` (as report.pdf), ingested through kb's public API."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "report.pdf").write_bytes(pdf)
    with kb_core.open_kb(config_path=config_file, kb_dir=tmp_path / "kb") as kb:
        assert kb_core.ingest_paths(kb, [folder]).added == ["report.pdf"]
        return sorted(kb.store.chunks_of(["report.pdf"]), key=lambda chunk: chunk.ordinal)


def test_a_table_over_a_page_break_gives_the_second_page_the_first_pages_header(
    tmp_path: Path, config_file: Path
) -> None:
    pages = [PAGE_1, [*rows(SECOND, 800.0), (60.0, 700.0, "Revenue grew in every segment.")]]
    document = parse(pages)
    first, second = tables(document)
    assert first.text.split("\n") == [
        "Segment | 2019 | 2018",
        "Fixed Price | 1,452.4 | 1,146.2",
        "Cost Plus | 310.0 | 295.5",
    ]
    assert (first.header, second.header) == ("", "Segment | 2019 | 2018")
    assert second.text == "Time and Materials | 120.3 | 98.1\nTotal | 1,882.7 | 1,539.8"  # the parsed text is unchanged
    assert parsed_text(document.blocks).split("\n")[5:8] == ["Page 2", "Time and Materials | 120.3 | 98.1"] + [
        "Total | 1,882.7 | 1,539.8"
    ]
    chunks = ingested_chunks(text_pdf(pages), tmp_path, config_file)
    on_page_2 = [c for c in chunks if c.heading_path[0] == "Page 2"]
    assert on_page_2[0].text.split("\n") == [
        "Page 2",
        "",
        "Segment | 2019 | 2018",  # the first page's header, outside the span (lines 6-9)
        "Time and Materials | 120.3 | 98.1",
        "Total | 1,882.7 | 1,539.8",
    ] + ["", "Revenue grew in every segment."]
    assert (on_page_2[0].start_line, on_page_2[0].end_line) == (6, 9)
    assert all(c.heading_path[0] == "Page 1" for c in chunks if c.start_line < 6)  # a chunk never spans two pages
    lines, exact = stored_lines(chunks)
    assert exact and lines == parsed_text(document.blocks).split("\n")


def test_a_page_that_repeats_the_header_keeps_it_as_its_first_line() -> None:
    for repeat in (HEADER, ("Segment (continued)", "2019", "2018")):
        document = parse([PAGE_1, rows([repeat, *SECOND], 800.0)])
        second = tables(document)[1]
        assert second.header == "" and second.text.split("\n")[0] == " | ".join(repeat)


def test_a_different_table_at_the_top_of_the_next_page_is_not_joined() -> None:
    four = [("Plant", "MWh", "Hours", "Staff"), ("Lakeside", "4210", "8000", "12")]
    document = parse([PAGE_1, rows(four, 800.0, (*COLUMNS, 500.0))])  # the same three columns and a fourth
    assert [t.header for t in tables(document)] == ["", ""]
    moved = rows(SECOND, 800.0, (60.0, 380.0, 500.0))  # three columns, but not where the first page's are
    assert [t.header for t in tables(parse([PAGE_1, moved]))] == ["", ""]


def test_a_heading_or_a_paragraph_between_the_tables_keeps_them_apart() -> None:
    after = [*PAGE_1, (60.0, 600.0, "A note under the table.")]
    assert [t.header for t in tables(parse([after, rows(SECOND, 800.0)]))] == ["", ""]
    before = [(60.0, 800.0, "Costs by contract type, in millions."), *rows(SECOND, 770.0)]
    assert [t.header for t in tables(parse([PAGE_1, before]))] == ["", ""]


def test_a_table_over_three_pages_keeps_the_first_pages_header_throughout() -> None:
    third = [("Other", "1.0", "2.0")]
    document = parse([PAGE_1, rows(SECOND, 800.0), rows(third, 800.0)])
    assert [t.header for t in tables(document)] == ["", "Segment | 2019 | 2018", "Segment | 2019 | 2018"]


def test_scanned_pages_read_by_ocr_join_a_table_over_the_page_break() -> None:
    title = OcrLine("Revenue by contract type, in millions.", (150, 100, 900, 30), 0.9)
    pages = [[title, *scanned_rows([HEADER, *FIRST], 200)], scanned_rows(SECOND, 150)]
    document = PdfParser(ocr=Ocr(ScriptedOcr(pages=pages))).parse_bytes(scanned_pdf(2), "scan.pdf")
    check_blocks(document)
    first, second = tables(document)
    assert first.text.split("\n")[0] == "Segment | 2019 | 2018" and second.header == "Segment | 2019 | 2018"
    assert second.text.split("\n")[0] == "Time and Materials | 120.3 | 98.1"  # (chunked as born-digital's above)
    shifted = scanned_rows(SECOND, 150, (150, 800, 1050))  # three columns, not where the first page's are
    document = PdfParser(ocr=Ocr(ScriptedOcr(pages=[pages[0], shifted]))).parse_bytes(scanned_pdf(2), "scan.pdf")
    assert [t.header for t in tables(document)] == ["", ""]


GRIDS = (((60.0, 120.0), (300.0, 340.0), (420.0, 460.0)), ((60.0, 120.0), (200.0, 240.0), (330.0, 370.0)))
CELLS = st.sampled_from(["Segment", "2019", "Total", "1.0", "Oslo", ""])


@st.composite
def pages(draw: st.DrawFn) -> list[Page]:
    """Pages of headings, paragraphs and tables on one of two grids of three columns."""
    out = []
    for number in range(1, draw(st.integers(1, 5)) + 1):
        items: list[Heading | Content] = []
        for _ in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(["table", "table", "paragraph", "heading"]))
            if kind == "heading":
                items.append(Heading(1, draw(st.sampled_from(["Costs", "Revenue"]))))
            elif kind == "paragraph":
                items.append(Content("paragraph", ("Some words.",)))
            else:
                cells = st.lists(CELLS, min_size=3, max_size=3).map(" | ".join)
                items.append(
                    Content(
                        "table",
                        tuple(draw(st.lists(cells, min_size=1, max_size=4))),
                        draw(st.sampled_from(GRIDS)),
                        10.0,
                    )
                )
        out.append(Page(number, tuple(items)))
    return out


@settings(max_examples=200, deadline=None)
@given(document=pages())
def test_joining_tables_over_pages_changes_no_line_and_names_an_earlier_tables_header(document: list[Page]) -> None:
    assembled = assemble(document)
    plain = assemble(
        [
            Page(p.number, tuple(attrs.evolve(i, columns=()) if isinstance(i, Content) else i for i in p.items))
            for p in document
        ]
    )
    assert [attrs.evolve(b, header="") for b in assembled.blocks] == list(plain.blocks)  # the same text and lines
    headers, before = set(), None
    for block in assembled.blocks:
        if block.kind == "heading" and block.text == block.heading_path[0]:
            continue  # a page's "Page N" line
        if block.header:  # a table at the top of its page, right after a table at the foot of the page before
            assert block.kind == "table" and block.header in headers and block.text.split("\n")[0] != block.header
            page = int(block.heading_path[0].removeprefix("Page "))
            assert before is not None and before.kind == "table" and before.heading_path[0] == f"Page {page - 1}"
        elif block.kind == "table":
            headers.add(block.text.split("\n")[0])
        before = block
