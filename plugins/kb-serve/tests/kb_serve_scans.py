"""Scanned pages and a photo of known text for kb-serve's tests, and the OCR engine that reads them.

The pages are drawn with Pillow, each line of text where the engine then says it is.
:func:`start_with_scans` registers kb_core.testing's ``ScriptedOcrPlugin`` in process as the engine ``scripted``
(``[ingest] ocr = "scripted"``, :data:`OVERRIDES`): it returns each page's lines, scaled to the
image it is shown, with chosen confidences: one line of the scan, and every line of the photo, under
kb's ``LOW_CONFIDENCE`` (0.6). (A scripted engine, not Tesseract, so that the boxes and the
confidences, low ones included, are known.)

``scan.pdf``: page 1 an A4 portrait page, page 2 an A4 landscape page (150 dpi images, so 595 x 842
and 842 x 595 points); ``birds.png``: a 900 x 600 photo with a dark square at its top left.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
from PIL import Image, ImageDraw, ImageFont

import kb_core
from kb_core.plugin import OcrImage, OcrLine
from kb_core.testing import ScriptedOcrPlugin

DPI = 150
PORTRAIT = (1240, 1754)
LANDSCAPE = (1754, 1240)
PHOTO = (900, 600)
MARK = (0, 0, 80, 80)  # the photo's dark square (x, y, w, h), to tell which way up it is
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
OVERRIDES = {"ingest.ocr": "scripted"}
Box = tuple[int, int, int, int]


@attrs.frozen
class Drawn:
    """A line of text drawn on a page (in its pixels) and the confidence the engine reports for it."""

    text: str
    box: Box
    confidence: float


PAGE_ONE: tuple[Drawn, ...] = (
    Drawn("Quarry pump log", (150, 150, 410, 60), 0.97),
    Drawn("The quarry pump at Wexcombe was serviced on 12 March.", (150, 300, 860, 36), 0.95),
    Drawn("Its seals were replaced with grey nitrile rings.", (150, 350, 665, 36), 0.41),
    Drawn("Next inspection of the quarry pump in spring.", (150, 400, 665, 36), 0.93),
)
PAGE_TWO: tuple[Drawn, ...] = (
    Drawn("Weir gauge", (150, 150, 275, 60), 0.96),
    Drawn("The Wexcombe weir gauge read 3.2 metres after the storm.", (150, 300, 875, 36), 0.92),
)
PHOTO_LINES: tuple[Drawn, ...] = (
    Drawn("A kingfisher was seen at the Wexcombe mill race", (120, 240, 790, 40), 0.38),
    Drawn("on the first Tuesday of June at dawn.", (120, 300, 590, 40), 0.44),
)


def _font(size: int) -> Any:
    return ImageFont.truetype(str(FONT), size) if FONT.exists() else ImageFont.load_default(size)


def draw(size: tuple[int, int], lines: Sequence[Drawn]) -> Image.Image:
    """A white page of ``size`` pixels with each line's text written in its box."""
    page = Image.new("RGB", size, "white")
    pen = ImageDraw.Draw(page)
    for line in lines:
        x, y, _w, h = line.box
        pen.text((x, y), line.text, fill="black", font=_font(round(h * 0.8)))
    return page


def scan_pdf() -> bytes:
    """The two-page scan as a PDF of page images (no text layer)."""
    out = io.BytesIO()
    first, second = draw(PORTRAIT, PAGE_ONE), draw(LANDSCAPE, PAGE_TWO)
    first.save(out, "PDF", resolution=DPI, save_all=True, append_images=[second])
    return out.getvalue()


def photo() -> Image.Image:
    """The photo, upright: its text, and a dark square at the top left."""
    image = draw(PHOTO, PHOTO_LINES)
    x, y, w, h = MARK
    ImageDraw.Draw(image).rectangle((x, y, x + w - 1, y + h - 1), fill="black")
    return image


def photo_png() -> bytes:
    """The photo as a PNG."""
    out = io.BytesIO()
    photo().save(out, "PNG", dpi=(DPI, DPI))
    return out.getvalue()


def turned_jpeg() -> bytes:
    """The photo as a camera stores it turned: pixels a quarter turn off, EXIF orientation 6 to put it upright."""
    exif = Image.Exif()
    exif[0x0112] = 6  # shown turned 90 degrees clockwise
    out = io.BytesIO()
    photo().transpose(Image.Transpose.ROTATE_90).save(out, "JPEG", quality=90, exif=exif)
    return out.getvalue()


def lines_for(image: OcrImage) -> list[OcrLine]:
    """What the engine reads on ``image``: the photo's lines, or a scanned page's scaled to its rendering."""
    if (image.width, image.height) == PHOTO:
        drawn, scale = PHOTO_LINES, 1.0
    elif image.width < image.height:
        drawn, scale = PAGE_ONE, image.width / PORTRAIT[0]
    else:
        drawn, scale = PAGE_TWO, image.width / LANDSCAPE[0]
    return [OcrLine(d.text, scaled(d.box, scale), d.confidence) for d in drawn]


def scaled(box: Box, scale: float) -> Box:
    """``box`` times ``scale``, in whole pixels."""
    x, y, w, h = box
    return round(x * scale), round(y * scale), round(w * scale), round(h * scale)


def write_scans(folder: Path, files: Sequence[str] = ("scan.pdf", "birds.png")) -> Path:
    """``folder`` with the named files of this module written into it (``birds.jpg``: :func:`turned_jpeg`)."""
    makers: dict[str, Callable[[], bytes]] = {"scan.pdf": scan_pdf, "birds.png": photo_png, "birds.jpg": turned_jpeg}
    folder.mkdir(parents=True, exist_ok=True)
    for name in files:
        (folder / name).write_bytes(makers[name]())
    return folder


def start_with_scans(start_server: Callable[..., Any], folder: Path, **settings: Any) -> Any:
    """A server (``start_server``) whose knowledge base has ingested ``folder``, OCR'd by :func:`lines_for`."""
    server = start_server(plugins=[("scans-ocr", ScriptedOcrPlugin(lines_for))], overrides=OVERRIDES, **settings)
    report = server.app.state.service.write(lambda kb: kb_core.ingest_paths(kb, [folder]))
    assert report.failed == [], report.failed
    return server
