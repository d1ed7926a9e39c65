"""End to end: ``kb_core.ingest_paths`` over a scanned PDF and a photo with a scripted OCR engine, then search and
``kb pages``' regions; and the same through the real engine when kb-tesseract is installed."""

from __future__ import annotations

import io
import json
from pathlib import Path

import attrs
import jsonschema
import pytest
from PIL import Image, ImageDraw, ImageFont

import kb_core
from kb_core.plugin import OcrImage, OcrLine
from kb_core.testing import ScriptedOcrPlugin, load_registry
from kb_documents.cli import SCHEMA, resolve

PLUGIN = Path(__file__).resolve().parent.parent
SCAN_SIZE = (1241, 1754)  # an A4 page scanned at 150 dpi, as pdfium renders it
PHOTO_SIZE = (800, 600)


def lines_for(image: OcrImage) -> list[OcrLine]:
    """The scan's pages and the photo, told apart by their size."""
    if (image.width, image.height) == PHOTO_SIZE:
        return [OcrLine("Kingfisher sighting at the weir", (40, 300, 600, 40), 0.88)]
    return [
        OcrLine("Maintenance log", (150, 150, 500, 50), 0.97),
        OcrLine("The heron pump was serviced and its seals replaced.", (150, 300, 1000, 30), 0.93),
        OcrLine("Next inspection in spring.", (150, 335, 600, 30), 0.81),
    ]


def _scan(pages: int) -> bytes:
    page = Image.new("RGB", (1240, 1754), "white")
    out = io.BytesIO()
    page.save(out, "PDF", resolution=150, save_all=True, append_images=[page] * (pages - 1))
    return out.getvalue()


def _photo() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", PHOTO_SIZE, "white").save(out, "PNG")
    return out.getvalue()


def _kb(tmp_path: Path, engine: str, plugins: list[tuple[str, object]]) -> kb_core.KnowledgeBase:
    config = tmp_path / "config.toml"
    config.write_text(f'[ingest]\nocr = "{engine}"\n')
    return kb_core.KnowledgeBase(kb_core.load_config(config, tmp_path / "kb"), load_registry(plugins))


def test_ingest_reads_scans_and_photos_and_pages_names_the_region(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "scan.pdf").write_bytes(_scan(2))
    (folder / "birds.png").write_bytes(_photo())
    plugin = ScriptedOcrPlugin(lines_for)
    with _kb(tmp_path, "scripted", [("scripted-ocr", plugin)]) as kb:
        report = kb_core.ingest_paths(kb, [folder])
        assert sorted(report.added) == ["birds.png", "scan.pdf"] and report.failed == []
        # the photo and one scanned page: the core keeps reads by image content, and both pages are alike
        assert len(plugin.engine.seen) == 2
        query = kb_core.SearchQuery(text="heron pump seals", mode="lexical", k=3)
        top = kb_core.search(kb, query).hits[0]
        assert top.doc_path == "scan.pdf" and top.heading_path[0] in ("Page 1", "Page 2")
        (linked,) = resolve(kb.store, [str(top.citation)])
        page = linked.first_page
        assert linked.region is not None and linked.region["page"] == page
        x, y, w, h = (linked.region[k] for k in "xywh")
        assert (x, y) == (72, 72) and w == 480  # in points: 150 px at 150 dpi is 72 pt
        assert (
            linked.link
            == f"scan.pdf#page={page}&xywh={x},{y},{w},{h}&L{top.citation.start_line}-L{top.citation.end_line}"
        )
        photo = kb_core.search(kb, kb_core.SearchQuery(text="kingfisher weir", mode="lexical", k=1)).hits[0]
        (photo_link,) = resolve(kb.store, [str(photo.citation)])
        assert (
            photo_link.link
            == f"birds.png#page=1&xywh=40,300,600,40&L{photo.citation.start_line}-L{photo.citation.end_line}"
        )
        payload = {"schema_version": SCHEMA, "citations": [attrs.asdict(linked), attrs.asdict(photo_link)]}
        schema = json.loads((PLUGIN / "kb_documents/schemas/page_citations.v1.json").read_text())
        jsonschema.validate(payload, schema)
        again = kb_core.ingest_paths(kb, [folder])
        assert again.added == [] and len(plugin.engine.seen) == 2


def test_ingest_without_ocr_names_the_install_command_for_each_scan_and_photo(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "scan.pdf").write_bytes(_scan(1))
    (folder / "birds.png").write_bytes(_photo())
    with _kb(tmp_path, "off", []) as kb:
        report = kb_core.ingest_paths(kb, [folder])
    reasons = {w.path: w.reason for w in report.failed}
    assert sorted(reasons) == ["birds.png", "scan.pdf"]
    assert reasons["scan.pdf"].startswith('no text layer; OCR is off ([ingest] ocr = "off"')
    assert reasons["birds.png"].startswith('an image is read by OCR; OCR is off ([ingest] ocr = "off"')


@pytest.mark.slow
@pytest.mark.needs_ocr_data
def test_ingest_with_the_real_engine(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    page = Image.new("RGB", (1700, 2200), "white")
    ImageDraw.Draw(page).text(
        (150, 300), "Herons nest in the reed beds by the weir.", fill="black", font=ImageFont.load_default(size=44)
    )
    page.save(folder / "notes.png", dpi=(200, 200))
    with _kb(tmp_path, "tesseract", []) as kb:
        report = kb_core.ingest_paths(kb, [folder])
        assert report.added == ["notes.png"], report.failed
        top = kb_core.search(kb, kb_core.SearchQuery(text="herons reed beds", mode="lexical", k=1)).hits[0]
        (linked,) = resolve(kb.store, [str(top.citation)])
    assert top.doc_path == "notes.png" and linked.region is not None
    assert linked.link.startswith("notes.png#page=1&xywh=")
