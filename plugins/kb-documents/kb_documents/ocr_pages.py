"""Pages read by OCR: scanned PDF pages rendered one at a time, lines laid out as rows and blocks.

An OCR engine returns lines with boxes in image pixels. They go through the same layout as a
born-digital PDF's glyph runs (:mod:`kb_documents.layout`): lines whose vertical extents overlap
are one row (several boxes far apart: a table row, cells joined by `` | ``), and prose columns
are read one after the other. Consecutive rows with several cells make a ``table`` block, the
others paragraphs, broken at large vertical gaps.

``metadata["ocr"]`` maps the parsed text back to the page::

    {"engine": "<identity>",
     "pages": [[page, width, height], ...],                  # page size in page units
     "lines": [[line, page, x, y, w, h, confidence], ...]}  # a parsed-text line's box

Page units are PDF points for a PDF page and pixels for an image; boxes are measured from the
top left of the page as displayed; a row joined from several OCR lines has their union box and
the lowest confidence (rounded to 2 places).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable, Sequence
from itertools import islice
from statistics import median
from typing import Any

import attrs
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from kb_core import KbError
from kb_core.plugin import OcrEngine, OcrImage, OcrLine, Progress
from kb_documents.assemble import Content, content_of
from kb_documents.grid import align_tables
from kb_documents.layout import Line, Run, merge_touching, order_lines

DEFAULT_MISSING = "OCR is not installed (install an OCR engine plugin, such as kb-tesseract)"
MAX_SIDE = 10_000  # a rendered page's long side, in pixels
DEFAULT_DPI = 200.0  # a scanned page's resolution when it holds no image to measure
MIN_DPI, MAX_DPI = 150.0, 300.0
PARAGRAPH_GAP = 0.8  # a vertical gap of this many median line heights ends a paragraph
MAX_IMAGES_MEASURED = 100
_HEIGHT_TO_SIZE = 1.05  # layout.Run spans 0.8 size above its baseline and 0.25 below


@attrs.frozen
class Ocr:
    """The OCR a parser has: the engine (None without one), the line to show without it, and progress."""

    engine: OcrEngine | None = None
    missing: str = DEFAULT_MISSING
    progress: Progress | None = None

    @classmethod
    def from_context(cls, ctx: object) -> Ocr:
        """From a ParserContext (a plain FactoryContext, from an older kb-core, has no OCR)."""
        missing = getattr(ctx, "ocr_missing", "") or DEFAULT_MISSING
        return cls(getattr(ctx, "ocr", None), missing, getattr(ctx, "progress", None))

    def identity(self) -> str:
        """The engine's identity ("" without one)."""
        return self.engine.identity if self.engine is not None else ""

    def report(self, path: str, done: int, total: int) -> None:
        """Tell the ingest another page was read."""
        if self.progress is not None:
            self.progress(f"ocr {path}", done, total)

    def read(self, image: OcrImage, page: int) -> list[OcrLine]:
        """The engine's lines for ``image``; its failures (other than a KbError) as one KbError line."""
        assert self.engine is not None
        try:
            return list(self.engine.read(image))
        except KbError:
            raise
        except Exception as exc:  # noqa: BLE001 - an engine must not raise; say which page it failed on
            raise KbError(f"the OCR engine failed on page {page} ({type(exc).__name__}: {exc})") from None


@attrs.frozen
class OcrPage:
    """A page read by OCR: its number, size in page units, pixels per page unit, and the lines read
    (cleaned: text on one line, boxes inside the image, confidences in 0..1)."""

    number: int
    width: float
    height: float
    scale: float
    lines: tuple[OcrLine, ...]

    def layout(self) -> list[Line]:
        """The lines as rows in reading order; each Line's ``sources`` index ``self.lines``."""
        runs = [self._run(index, line) for index, line in enumerate(self.lines)]
        return align_tables(order_lines(merge_touching(runs)))

    def _run(self, index: int, line: OcrLine) -> Run:
        x, y, w, h = (value / self.scale for value in line.box)
        size = max(h, 1.0 / self.scale) / _HEIGHT_TO_SIZE
        bottom = self.height - (y + h)  # the layout counts up from the foot of the page, as PDF does
        return Run(line.text, x, x + w, bottom + 0.25 * size, size, (index,))


def clean_lines(lines: Iterable[OcrLine], width: int, height: int, enlarge: int = 1) -> tuple[OcrLine, ...]:
    """The lines with text, their text on one line without control characters, boxes clipped to the image.

    ``enlarge``: the lines were read on the image decoded that many times smaller; their boxes grow back.
    """
    cleaned = []
    for line in lines:
        text = " ".join("".join(c for c in str(line.text) if _kept(c)).split())
        if not text:
            continue
        x, y, w, h = (_pixel(v, enlarge) for v in line.box)
        x0, y0 = min(max(x, 0), width), min(max(y, 0), height)
        x1, y1 = min(max(x + w, x0), width), min(max(y + h, y0), height)
        confidence = float(line.confidence)
        confidence = min(max(confidence, 0.0), 1.0) if math.isfinite(confidence) else 0.0
        cleaned.append(OcrLine(text, (x0, y0, x1 - x0, y1 - y0), confidence))
    return tuple(cleaned)


def _pixel(value: object, enlarge: int) -> int:
    """A coordinate an engine gave, in the image's pixels: 0 for NaN or no number, and far past any image
    for an infinity or a huge one (clipped to the image after; ``int()`` of them raises)."""
    try:
        number = float(value) * enlarge  # type: ignore[arg-type]  # (an engine's value: anything)
    except (TypeError, ValueError, OverflowError):
        return 0
    return 0 if math.isnan(number) else int(min(max(number, -_FAR), _FAR))


_FAR = 1e12  # pixels: beyond any image (a side is at most MAX_SIDE, or max_ocr_pixels)


def _kept(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) not in ("Cc", "Cs", "Cn")


def page_items(lines: Sequence[Line]) -> list[Content]:
    """Rows as blocks: consecutive rows of several cells are a table, the others paragraphs."""
    if not lines:
        return []
    gap_limit = PARAGRAPH_GAP * median(line.top - line.bottom for line in lines)
    items: list[Content] = []
    current: list[Line] = []
    kind = ""
    previous: Line | None = None
    for line in lines:
        line_kind = "table" if line.cells > 1 else "paragraph"
        if previous is not None and (line_kind != kind or _breaks(previous, line, gap_limit)):
            items.append(content_of(kind, current))
            current = []
        kind = line_kind
        current.append(line)
        previous = line
    items.append(content_of(kind, current))
    return items


def _breaks(previous: Line, line: Line, gap_limit: float) -> bool:
    moved_up = line.top > previous.top  # the next column
    return moved_up or (line.cells == 1 and previous.bottom - line.top > gap_limit)


def line_entries(page: OcrPage, lines: Sequence[Line], first_line: int) -> list[list[int | float]]:
    """``[line, page, x, y, w, h, confidence]`` for the page's rows, numbered from ``first_line``.

    A box is the union of its OCR lines' boxes, scaled to page units and rounded, then cut to the page's
    size as :func:`ocr_metadata` stores it: the image's last pixel may lie past the page's last point
    (pdfium rounds a bitmap's sides up), and a rounded x plus a rounded width may pass the edge."""
    entries: list[list[int | float]] = []
    width, height = round(page.width), round(page.height)
    for offset, line in enumerate(lines):
        read = [page.lines[i] for i in line.sources]
        x0 = min(r.box[0] for r in read)
        y0 = min(r.box[1] for r in read)
        x1 = max(r.box[0] + r.box[2] for r in read)
        y1 = max(r.box[1] + r.box[3] for r in read)
        x, y, w, h = (round(v / page.scale) for v in (x0, y0, x1 - x0, y1 - y0))
        x, y = min(x, width), min(y, height)
        box = [x, y, min(w, width - x), min(h, height - y)]
        entries.append([first_line + offset, page.number, *box, round(min(r.confidence for r in read), 2)])
    return entries


def ocr_metadata(
    identity: str, pages: Sequence[tuple[OcrPage, list[Line]]], page_lines: Sequence[int]
) -> dict[str, Any]:
    """``metadata["ocr"]`` for the pages read (``page_lines`` from :func:`kb_documents.assemble.assemble`)."""
    return {
        "engine": identity,
        "pages": [[page.number, round(page.width), round(page.height)] for page, _ in pages],
        "lines": [
            entry for page, lines in pages for entry in line_entries(page, lines, page_lines[page.number - 1] + 1)
        ],
    }


# --------------------------------------------------------------------------- scanned PDF pages


def pdf_page_dpi(page: pdfium.PdfPage) -> float:
    """The resolution of the largest image on a PDF page, clamped to 150-300 dpi; 200 without one."""
    best = 0.0
    try:
        for image in islice(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3), MAX_IMAGES_MEASURED):
            width_px, _ = image.get_px_size()
            bounds = image.get_bounds() if hasattr(image, "get_bounds") else image.get_pos()  # pypdfium2 5 / 4
            left, _, right, _ = bounds
            if right - left > 1:
                best = max(best, width_px / ((right - left) / 72.0))
    except (pdfium.PdfiumError, ValueError, TypeError):
        pass
    return DEFAULT_DPI if best <= 0 or not math.isfinite(best) else min(MAX_DPI, max(MIN_DPI, best))


def render_scale(width: float, height: float, dpi: float, max_pixels: int) -> float:
    """Pixels per point: ``dpi`` / 72, less when the image would exceed ``max_pixels`` or MAX_SIDE.

    pdfium rounds a bitmap's sides up, so the caps count one pixel more on each side.
    """
    scale = dpi / 72.0
    area, perimeter = width * height, width + height
    if (width * scale + 1) * (height * scale + 1) > max_pixels:  # solve (w s + 1)(h s + 1) = max_pixels
        scale = (-perimeter + math.sqrt(perimeter * perimeter + 4 * area * (max_pixels - 1))) / (2 * area)
    return min(scale, (MAX_SIDE - 1) / max(width, height))


def render_page(page: pdfium.PdfPage, max_pixels: int) -> tuple[OcrImage, float] | None:
    """The page as an RGB image for OCR and its scale (pixels per point); None for a page of no size."""
    width, height = page.get_size()
    if not (math.isfinite(width) and math.isfinite(height)) or width < 1 or height < 1:
        return None
    scale = render_scale(width, height, pdf_page_dpi(page), max_pixels)
    if width * scale < 1 or height * scale < 1:
        return None
    bitmap = page.render(scale=scale, rev_byteorder=True, prefer_bgrx=False, maybe_alpha=False, grayscale=False)
    try:
        if bitmap.width * bitmap.height > max_pixels or bitmap.n_channels != 3:
            raise KbError(f"pdfium rendered a {bitmap.width}x{bitmap.height} px page image kb did not ask for")
        pixels = _packed_rows(bitmap.buffer, bitmap.width * 3, bitmap.stride, bitmap.height)
        return OcrImage(pixels, bitmap.width, bitmap.height, round(scale * 72)), scale
    finally:
        bitmap.close()


def _packed_rows(buffer: Any, row: int, stride: int, height: int) -> bytes:
    view = memoryview(buffer).cast("B")
    if stride == row:
        return bytes(view[: row * height])
    return b"".join(view[i * stride : i * stride + row] for i in range(height))


def read_pdf_pages(
    document: pdfium.PdfDocument, indexes: Sequence[int], ocr: Ocr, max_pixels: int, path: str
) -> tuple[dict[int, OcrPage], list[str]]:
    """OCR the pages at ``indexes``, one at a time (each page image is dropped once read), and warnings."""
    pages: dict[int, OcrPage] = {}
    warnings: list[str] = []
    for done, index in enumerate(indexes, start=1):
        page = document[index]
        try:
            width, height = page.get_size()
            rendered = render_page(page, max_pixels)
        except pdfium.PdfiumError as exc:
            warnings.append(f"page {index + 1}: could not be rendered for OCR ({exc})")
            rendered = None
        finally:
            page.close()
        if rendered is not None:
            image, scale = rendered
            lines = clean_lines(ocr.read(image, index + 1), image.width, image.height)
            del image, rendered  # never more than one page image at a time
            pages[index] = OcrPage(index + 1, width, height, scale, lines)
        ocr.report(path, done, len(indexes))
    return pages, warnings
