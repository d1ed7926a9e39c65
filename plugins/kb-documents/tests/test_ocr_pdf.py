"""Scanned PDF pages read by OCR (a scripted engine): blocks, page lines, boxes in points, limits, errors."""

from __future__ import annotations

import io
import weakref
from collections.abc import Callable
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image, ImageDraw

from kb_core import KbError, load_config
from kb_core.plugin import OcrImage, OcrLine, ParserContext
from kb_core.testing import ScriptedOcr
from kb_documents.assemble import page_of_line, parsed_text
from kb_documents.limits import Limits
from kb_documents.ocr_pages import MAX_SIDE, Ocr, render_scale
from kb_documents.pdf import PdfParser
from kb_documents.plugin import _pdf

INSTALL = "OCR is not installed (install it: apt-get install -y tesseract-ocr-eng && pip install kb-tesseract)"
DPI = 150
PT = 72 / DPI  # points per pixel of a page scanned at 150 dpi


def line(text: str, x: int, y: int, w: int, h: int = 30, confidence: float = 0.9) -> OcrLine:
    """An OCR line with its box in image pixels."""
    return OcrLine(text, (x, y, w, h), confidence)


def scanned_pdf(pages: int = 1, size: tuple[int, int] = (1240, 1754), resolution: float = DPI) -> bytes:
    """A PDF of ``pages`` page images (no text layer), as a scanner writes it: A4 at 150 dpi by default."""
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).rectangle((100, 100, 300, 140), fill="black")
    out = io.BytesIO()
    image.save(out, "PDF", resolution=resolution, save_all=True, append_images=[image] * (pages - 1))
    return out.getvalue()


def mixed_pdf(text_pdf: bytes) -> bytes:
    """``text_pdf`` with one scanned page appended (page 4 of report.pdf)."""
    document = pdfium.PdfDocument(text_pdf)
    scan = pdfium.PdfDocument(scanned_pdf())
    document.import_pages(scan)
    out = io.BytesIO()
    document.save(out)
    scan.close()
    document.close()
    return out.getvalue()


PAGE_1 = [
    line("Quarterly report", 150, 100, 600, 50),
    line("The plant ran well all quarter and", 150, 200, 900),
    line("output rose again.", 150, 235, 500, confidence=0.7),
    line("Plant", 150, 400, 150),
    line("Output MWh", 600, 400, 250),
    line("Lakeside", 150, 440, 220),
    line("4210", 600, 440, 120, confidence=0.55),
]
PAGE_2 = [line("The second page has one line.", 150, 100, 800)]


def _ocr(engine: ScriptedOcr, progress: Callable[[str, int, int], None] | None = None) -> Ocr:
    return Ocr(engine, INSTALL, progress)


def test_a_scanned_pdf_is_read_into_blocks_with_page_lines() -> None:
    engine = ScriptedOcr(pages=[PAGE_1, PAGE_2])
    doc = PdfParser(ocr=_ocr(engine)).parse_bytes(scanned_pdf(2), "scan.pdf")
    assert parsed_text(doc.blocks).split("\n") == [
        "Page 1",
        "Quarterly report",
        "The plant ran well all quarter and",
        "output rose again.",
        "Plant | Output MWh",
        "Lakeside | 4210",
        "Page 2",
        "The second page has one line.",
    ]
    assert doc.metadata["page_lines"] == [1, 7]
    assert [(b.kind, b.start_line, b.end_line, b.heading_path) for b in doc.blocks] == [
        ("paragraph", 1, 2, ("Page 1",)),  # the page line folds into the first block, as for text PDFs
        ("paragraph", 3, 4, ("Page 1",)),  # a large gap ended the title's paragraph
        ("table", 5, 6, ("Page 1",)),
        ("paragraph", 7, 8, ("Page 2",)),
    ]
    assert page_of_line(doc.metadata["page_lines"], 6) == 1 and doc.title == "scan.pdf"
    assert [(image.width, image.height, image.dpi) for image in engine.seen] == [(1241, 1754, DPI)] * 2


def test_ocr_metadata_gives_boxes_in_points_with_the_rows_union_and_lowest_confidence() -> None:
    doc = PdfParser(ocr=_ocr(ScriptedOcr(pages=[PAGE_1, PAGE_2]))).parse_bytes(scanned_pdf(2), "scan.pdf")
    assert doc.metadata["format"] == "pdf"
    ocr = doc.metadata["ocr"]
    assert ocr["engine"] == "scripted-ocr 1"
    assert ocr["pages"] == [[1, 595, 842], [2, 595, 842]]  # A4 in points
    by_line = {entry[0]: entry for entry in ocr["lines"]}
    assert sorted(by_line) == [2, 3, 4, 5, 6, 8]  # every text line, never a "Page N" line
    assert by_line[2] == [2, 1, round(150 * PT), round(100 * PT), round(600 * PT), round(50 * PT), 0.9]
    assert by_line[4][-1] == 0.7
    # "Lakeside | 4210": the union of both boxes, the lower confidence
    assert by_line[6] == [6, 1, 72, round(440 * PT), round(570 * PT), round(30 * PT), 0.55]
    assert by_line[8][:2] == [8, 2]
    assert all(isinstance(v, int) for entry in ocr["lines"] for v in entry[:6])


def test_boxes_far_apart_on_a_row_are_cells_and_near_ones_one_cell() -> None:
    page = [
        line("Name", 100, 100, 100),
        line("Total", 700, 102, 100),
        line("Kestrel", 100, 140, 120),
        line("17", 700, 138, 40),
        line("one line that", 100, 300, 300),
        line("the engine split", 410, 300, 300),  # a word gap: the same cell
    ]
    doc = PdfParser(ocr=_ocr(ScriptedOcr(pages=[page]))).parse_bytes(scanned_pdf(), "scan.pdf")
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.text.split("\n")[-2:] == ["Name | Total", "Kestrel | 17"]
    assert parsed_text(doc.blocks).split("\n")[-1] == "one line that the engine split"


def test_two_columns_of_prose_are_read_one_after_the_other() -> None:
    left = [line(f"left column line {n} of the prose", 100, 200 + 40 * n, 500) for n in range(4)]
    right = [line(f"right column line {n} of prose", 700, 200 + 40 * n, 480) for n in range(4)]
    doc = PdfParser(ocr=_ocr(ScriptedOcr(pages=[right + left]))).parse_bytes(scanned_pdf(), "scan.pdf")
    lines = parsed_text(doc.blocks).split("\n")
    assert lines[1:] == [f"left column line {n} of the prose" for n in range(4)] + [
        f"right column line {n} of prose" for n in range(4)
    ]


def test_progress_is_reported_per_page_and_one_page_image_is_held_at_a_time() -> None:
    calls: list[tuple[str, int, int]] = []
    alive: list[weakref.ref[OcrImage]] = []

    class Engine:
        identity = "weak 1"

        def languages(self) -> tuple[str, ...]:
            return ("English",)

        def read(self, image: OcrImage) -> list[OcrLine]:
            assert [ref for ref in alive if ref() is not None] == [], "an earlier page image is still held"
            alive.append(weakref.ref(image))
            return [line(f"page {len(alive)}", 100, 100, 300)]

    ocr = Ocr(Engine(), INSTALL, lambda *args: calls.append(args))
    doc = PdfParser(ocr=ocr).parse_bytes(scanned_pdf(3), "scan.pdf")
    assert calls == [("ocr scan.pdf", 1, 3), ("ocr scan.pdf", 2, 3), ("ocr scan.pdf", 3, 3)]
    assert "page 3" in parsed_text(doc.blocks) and doc.metadata["ocr"]["engine"] == "weak 1"


def test_a_mixed_pdf_reads_only_its_scanned_page(fixture_bytes: Callable[[str], bytes]) -> None:
    engine = ScriptedOcr(pages=[PAGE_2])
    doc = PdfParser(ocr=_ocr(engine)).parse_bytes(mixed_pdf(fixture_bytes("report.pdf")), "mixed.pdf")
    assert len(engine.seen) == 1 and doc.warnings == ()
    lines = parsed_text(doc.blocks).split("\n")
    assert lines[doc.metadata["page_lines"][3] - 1 :] == ["Page 4", "The second page has one line."]
    assert doc.metadata["ocr"]["pages"] == [[4, 595, 842]]
    assert [entry[:2] for entry in doc.metadata["ocr"]["lines"]] == [[len(lines), 4]]
    assert doc.title == "Q3 Operations Report"  # the text pages keep their headings
    assert any(b.kind == "table" and "Lakeside | 4210" in b.text for b in doc.blocks)


def test_without_ocr_a_mixed_pdf_warns_naming_the_install_command(fixture_bytes: Callable[[str], bytes]) -> None:
    doc = PdfParser(ocr=Ocr(None, INSTALL)).parse_bytes(mixed_pdf(fixture_bytes("report.pdf")), "mixed.pdf")
    assert doc.warnings == (f"page(s) 4 have no text layer (scanned?); {INSTALL}",)
    assert "ocr" not in doc.metadata


@pytest.mark.parametrize("data", [scanned_pdf(2), None], ids=["made", "fixture"])
def test_without_ocr_a_scanned_pdf_is_one_line_naming_the_install_command(
    data: bytes | None, fixture_bytes: Callable[[str], bytes], config_file: Path
) -> None:
    parser = _pdf(ParserContext(load_config(config_file), ocr=None, ocr_missing=INSTALL))
    with pytest.raises(KbError) as caught:
        parser.parse_bytes(data or fixture_bytes("scanned.pdf"), "scan.pdf")
    assert caught.value.message == f"no text layer; {INSTALL}"
    assert "ocrmypdf" in (caught.value.hint or "")


def test_the_factory_hands_the_parser_the_engine_and_progress(config_file: Path) -> None:
    calls: list[tuple[str, int, int]] = []
    engine = ScriptedOcr(pages=[PAGE_2])
    context = ParserContext(load_config(config_file), progress=lambda *a: calls.append(a), ocr=engine)
    doc = _pdf(context).parse_bytes(scanned_pdf(), "scan.pdf")
    assert "The second page has one line." in parsed_text(doc.blocks) and calls == [("ocr scan.pdf", 1, 1)]


def test_a_scan_where_ocr_reads_nothing_has_no_text() -> None:
    with pytest.raises(KbError, match=r"the PDF has no text \(OCR read none on its 2 scanned page\(s\)\)"):
        PdfParser(ocr=_ocr(ScriptedOcr())).parse_bytes(scanned_pdf(2), "blank.pdf")


def test_an_engine_that_raises_is_one_line_naming_the_page() -> None:
    def fail(image: OcrImage) -> list[OcrLine]:
        raise RuntimeError("boom")

    with pytest.raises(KbError, match=r"^the OCR engine failed on page 1 \(RuntimeError: boom\)$"):
        PdfParser(ocr=_ocr(ScriptedOcr(lines_for=fail))).parse_bytes(scanned_pdf(), "scan.pdf")


def test_a_page_of_200_by_200_inches_is_rendered_within_the_pixel_limits() -> None:
    engine = ScriptedOcr(lines_for=lambda image: [line("huge", 0, 0, image.width // 2, image.height // 4)])
    data = scanned_pdf(size=(1440, 1440), resolution=7.2)  # 1440 px at 7.2 dpi: 200 inches, 14400 points
    for limits in (Limits(), Limits(max_ocr_pixels=1_000_000)):
        doc = PdfParser(limits, _ocr(engine)).parse_bytes(data, "poster.pdf")
        image = engine.seen[-1]
        assert image.width * image.height <= limits.max_ocr_pixels and max(image.width, image.height) <= MAX_SIDE
        assert doc.metadata["ocr"]["pages"] == [[1, 14400, 14400]]
        x, y, w, h = doc.metadata["ocr"]["lines"][0][2:6]
        assert (x, y) == (0, 0) and abs(w - 7200) <= 10 and abs(h - 3600) <= 10  # still in points


@pytest.mark.parametrize(
    ("size", "dpi", "limit"),
    [
        ((595, 842), 200, 40_000_000),
        ((14400, 14400), 150, 40_000_000),
        ((612, 792), 300, 100_000),
        ((1e6, 2), 200, 10**7),
    ],
)
def test_render_scale_keeps_both_caps(size: tuple[float, float], dpi: float, limit: int) -> None:
    width, height = size
    scale = render_scale(width, height, dpi, limit)
    assert 0 < scale <= dpi / 72
    assert (width * scale + 1) * (height * scale + 1) <= limit * 1.0001
    assert max(width, height) * scale < MAX_SIDE


def test_max_ocr_pixels_comes_from_the_backends_documents_table() -> None:
    assert Limits().max_ocr_pixels == 40_000_000
    assert Limits.from_options({"max_ocr_pixels": 1000}).max_ocr_pixels == 1000
    with pytest.raises(KbError, match="is not a whole number from 1 to"):
        Limits.from_options({"max_ocr_pixels": -1})
