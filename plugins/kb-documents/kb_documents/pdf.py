"""PDF documents through pdfium (pypdfium2): text per page in reading order, headings, tables as rows.

Every problem is one :class:`kb_core.KbError` line: not a PDF, damaged, truncated, encrypted,
no text layer, over a limit. See :mod:`kb_documents.assemble` for the parsed text and how a
line span maps to a page.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import PurePosixPath
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from kb_core import KbError
from kb_core.plugin import ParsedDocument
from kb_core.plugin.pages import RenderedPage
from kb_documents.assemble import Content, Heading, Page, assemble, content_of
from kb_documents.binary import BinaryParser, png_page
from kb_documents.grid import align_tables
from kb_documents.layout import Glyph, Line, make_runs, order_lines
from kb_documents.limits import Limits
from kb_documents.ocr_pages import Ocr, OcrPage, ocr_metadata, page_items, read_pdf_pages, render_scale
from kb_documents.running import drop_running_lines

#: Pixels per point of a page rendered to show, at most (a tiny page is not blown up past 288 dpi).
MAX_SHOWN_SCALE = 4.0
HEADING_RATIO = 1.15  # a line this much larger than the body text is a heading
MAX_HEADING_LINE_CHARS = 150
DECRYPT_HINT = "save an unprotected copy (for example qpdf --decrypt in.pdf out.pdf) and ingest that"
REPAIR_HINT = "open it in a PDF viewer and save or export it again, then ingest the new file"
OCRMYPDF_HINT = "or run OCR on it first (for example ocrmypdf in.pdf out.pdf) and ingest the result"
_SPACES = re.compile(r"\s+")


def extract_glyphs(page: pdfium.PdfPage, max_chars: int) -> tuple[list[Glyph], bool]:
    """The page's characters with positions and font sizes; True when ``max_chars`` cut them short.

    Positions come from pdfium's loose character boxes (the glyph's advance and the font's
    ascent/descent), so neighbouring letters touch and a gap means a space or a gutter; the box
    bottom stands in for the baseline (it sits a fixed share of the size below it).
    """
    textpage = page.get_textpage()
    try:
        handle = textpage.raw
        count = min(pdfium_c.FPDFText_CountChars(handle), max_chars)
        text = textpage.get_text_range(0, count) if count > 0 else ""
        aligned = len(text) == count  # one UTF-16 unit per character: read them all at once
        box = pdfium_c.FS_RECTF()
        get_box, get_size, get_unicode = (
            pdfium_c.FPDFText_GetLooseCharBox,
            pdfium_c.FPDFText_GetFontSize,
            pdfium_c.FPDFText_GetUnicode,
        )
        glyphs: list[Glyph] = []
        for index in range(count):
            char = text[index] if aligned else _char(get_unicode(handle, index))
            if char in "\r\n\x00\ufffe\uffff" or "\ud800" <= char <= "\udfff":
                continue
            get_box(handle, index, box)
            left, right = (box.left, box.right) if box.left <= box.right else (box.right, box.left)
            glyphs.append(Glyph(char, left, right, min(box.bottom, box.top), get_size(handle, index)))
        return glyphs, pdfium_c.FPDFText_CountChars(handle) > max_chars
    finally:
        textpage.close()


def _char(code: int) -> str:
    return chr(code) if 0 <= code <= 0x10FFFF else "\x00"


def _has_images(page: pdfium.PdfPage) -> bool:
    return any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3))


@contextmanager
def open_pdf(data: bytes) -> Iterator[pdfium.PdfDocument]:
    """Open PDF bytes, turning pdfium's failures into one clear KbError."""
    head = data[:1024]
    if b"%PDF-" not in head:
        raise KbError("not a PDF (no %PDF- header)", hint="check the file; rename it if it is another format")
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code in (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY):
            raise KbError("the PDF is encrypted (password protected); kb cannot read it", hint=DECRYPT_HINT) from None
        if b"%%EOF" not in data[-1024:]:
            raise KbError(
                "the PDF is truncated (it does not end with %%EOF)",
                hint="copy or download it again in full, then ingest it",
            ) from None
        raise KbError(f"the PDF is damaged and cannot be read ({exc})", hint=REPAIR_HINT) from None
    try:
        yield document
    finally:
        document.close()


def _outline(document: pdfium.PdfDocument) -> dict[int, dict[str, int]]:
    """Outline titles by page index (normalised title -> level, 1 = outermost)."""
    found: dict[int, dict[str, int]] = {}
    try:
        for count, bookmark in enumerate(document.get_toc(max_depth=8)):
            if count > 5000:
                break
            dest = bookmark.get_dest()
            index = dest.get_index() if dest is not None else None
            title = _norm(bookmark.get_title() or "")
            if index is not None and title:
                found.setdefault(index, {}).setdefault(title, bookmark.level + 1)
    except pdfium.PdfiumError:
        return {}
    return found


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def _title(document: pdfium.PdfDocument, path: str, pages: list[Page]) -> str:
    try:
        title = (document.get_metadata_value("Title") or "").strip()
    except (pdfium.PdfiumError, KeyError, UnicodeDecodeError):
        title = ""
    if title:
        return title[:200]
    first = next((i.text for p in pages for i in p.items if isinstance(i, Heading)), "")
    return first[:200] or PurePosixPath(path).name


def _body_size(pages_lines: list[list[Line]]) -> float:
    sizes: Counter[float] = Counter()
    for lines in pages_lines:
        for line in lines:
            sizes[round(line.size, 1)] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _heading_level(line: Line, body: float, outline: dict[str, int], heading_sizes: list[float]) -> int | None:
    if line.cells > 1 or len(line.text) > MAX_HEADING_LINE_CHARS:
        return None
    level = outline.get(_norm(line.text))
    if level is not None:
        return level
    if body and line.size >= body * HEADING_RATIO and not line.text.rstrip().endswith((".", ",", ";", ":")):
        return heading_sizes.index(round(line.size, 1)) + 1 + (1 if outline else 0)
    return None


def _page_items(
    lines: list[Line], body: float, outline: dict[str, int], heading_sizes: list[float]
) -> list[Heading | Content]:
    items: list[Heading | Content] = []
    current: list[Line] = []
    kind = ""
    previous: Line | None = None

    def close() -> None:
        if current:
            items.append(content_of(kind, current))
            current.clear()

    for line in lines:
        level = _heading_level(line, body, outline, heading_sizes)
        if level is not None:
            close()
            items.append(Heading(level, line.text))
            previous = None
            continue
        line_kind = "table" if line.cells > 1 else "paragraph"
        if previous is not None and line_kind == kind:
            gap = previous.bottom - line.top
            moved_up = line.top > previous.top
            resized = abs(line.size - previous.size) > 0.5
            if line_kind == "paragraph" and (gap > 0.7 * line.size or moved_up or resized):
                close()
        elif previous is not None:
            close()
        kind = line_kind
        current.append(line)
        previous = line
    close()
    return items


class PdfParser(BinaryParser):
    """PDF files: one ``Page N`` line per page, then its headings, paragraphs and table rows; a page as a PNG to show.

    A page with images but no text (a scan) is rendered and read by ``ocr.engine`` when there is one
    (see :mod:`kb_documents.ocr_pages`); without one, such pages are named in a warning, and a PDF
    of nothing else fails with ``ocr.missing`` (the line naming the install command).
    """

    kind = "PDF"

    def __init__(self, limits: Limits | None = None, ocr: Ocr | None = None) -> None:
        self.limits = limits or Limits()
        self.ocr = ocr or Ocr()

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """Parse PDF bytes; every failure is a KbError."""
        self.check_size(data, self.limits.max_bytes)
        try:
            return self._parse(data, path)
        except KbError:
            raise
        except Exception as exc:  # noqa: BLE001 - pdfium reports damage in many ways
            raise KbError(f"the PDF cannot be read ({type(exc).__name__}: {exc})", hint=REPAIR_HINT) from None

    def render_page(self, data: bytes, path: str, page: int, *, max_side: int) -> RenderedPage:
        """Page ``page`` (1-based) as a PNG to show, rotation applied, its long side ``max_side`` pixels (at
        most :data:`MAX_SHOWN_SCALE` per point) and its pixels within ``max_ocr_pixels``; a KbError when it cannot."""
        self.check_size(data, self.limits.max_bytes)
        try:
            with open_pdf(data) as document:
                if not 1 <= page <= len(document):
                    raise KbError(f"the PDF has {len(document)} page(s), not a page {page}")
                handle = document[page - 1]
                try:
                    width, height = handle.get_size()
                    if not (math.isfinite(width) and math.isfinite(height) and width >= 1 and height >= 1):
                        raise KbError(f"page {page} of the PDF has no size", hint=REPAIR_HINT)
                    dpi = 72 * min(max(1, max_side) / max(width, height), MAX_SHOWN_SCALE)
                    scale = render_scale(width, height, dpi, self.limits.max_ocr_pixels)
                    if width * scale < 1 or height * scale < 1:
                        raise KbError(
                            f"page {page} cannot be shown in {self.limits.max_ocr_pixels} pixels",
                            hint="raise [backends.documents] max_ocr_pixels to show it",
                        )
                    bitmap = handle.render(scale=scale)
                    try:
                        return png_page(bitmap.to_pil())
                    finally:
                        bitmap.close()
                finally:
                    handle.close()
        except KbError:
            raise
        except Exception as exc:  # noqa: BLE001 - pdfium reports damage in many ways
            raise KbError(
                f"page {page} of the PDF cannot be shown ({type(exc).__name__}: {exc})", hint=REPAIR_HINT
            ) from None

    def _parse(self, data: bytes, path: str) -> ParsedDocument:
        warnings: list[str] = []
        with open_pdf(data) as document:
            count = len(document)
            if count > self.limits.max_pages:
                raise KbError(
                    f"the PDF has {count} pages, over the limit of {self.limits.max_pages}",
                    hint="raise [backends.documents] max_pages to read it",
                )
            if b"%%EOF" not in data[-1024:]:
                warnings.append("the PDF does not end with %%EOF (truncated?); read what pdfium could recover")
            outline = _outline(document)
            pages_lines, image_only = self._text_pages(document, warnings)
            scanned: dict[int, OcrPage] = {}
            if image_only and self.ocr.engine is not None:
                scanned, more = read_pdf_pages(document, image_only, self.ocr, self.limits.max_ocr_pixels, path)
                warnings.extend(more)
            elif image_only:
                self._no_ocr(image_only, any(pages_lines), warnings)
            read = {index: page.layout() for index, page in scanned.items()}
            if not any(pages_lines) and not any(read.values()):
                raise KbError(_nothing_read(image_only), hint="nothing to index; remove it or add it to .kbignore")
            pages, running = self._pages(pages_lines, read, outline)
            title = _title(document, path, pages)
        assembled = assemble(pages)
        metadata: dict[str, Any] = {
            "format": "pdf",
            "pages": count,
            "page_lines": list(assembled.page_lines),
            "running_lines_dropped": running,
        }
        if scanned:
            done = [(scanned[index], read[index]) for index in sorted(scanned)]
            metadata["ocr"] = ocr_metadata(self.ocr.identity(), done, assembled.page_lines)
        return ParsedDocument(title, assembled.blocks, metadata, tuple(warnings))

    def _text_pages(self, document: pdfium.PdfDocument, warnings: list[str]) -> tuple[list[list[Line]], list[int]]:
        """Each page's lines from its text layer, and the indexes of pages with images and no text."""
        pages_lines: list[list[Line]] = []
        image_only: list[int] = []
        for index in range(len(document)):
            page = document[index]
            try:
                glyphs, cut = extract_glyphs(page, self.limits.max_chars_per_page)
                if cut:
                    warnings.append(f"page {index + 1}: text over {self.limits.max_chars_per_page} characters dropped")
                if not glyphs and _has_images(page):
                    image_only.append(index)
            finally:
                page.close()
            pages_lines.append(align_tables(order_lines(make_runs(glyphs))))
        return pages_lines, image_only

    def _no_ocr(self, image_only: list[int], has_text: bool, warnings: list[str]) -> None:
        """Without OCR: a PDF of scans fails naming the install command; a mixed one warns."""
        if not has_text:
            raise KbError(f"no text layer; {self.ocr.missing}", hint=OCRMYPDF_HINT)
        numbers = [index + 1 for index in image_only]
        shown = ", ".join(map(str, numbers[:10])) + (" ..." if len(numbers) > 10 else "")
        warnings.append(f"page(s) {shown} have no text layer (scanned?); {self.ocr.missing}")

    def _pages(
        self, pages_lines: list[list[Line]], read: dict[int, list[Line]], outline: dict[int, dict[str, int]]
    ) -> tuple[list[Page], int]:
        """The pages' items (headings and running lines from the text layer only) and the running lines dropped."""
        body = _body_size(pages_lines)
        pages_lines, running = drop_running_lines(pages_lines, body)
        heading_sizes = sorted(
            {round(ln.size, 1) for lines in pages_lines for ln in lines if body and ln.size >= body * HEADING_RATIO},
            reverse=True,
        )
        pages = [
            Page(index + 1, tuple(page_items(read[index])))
            if index in read
            else Page(index + 1, tuple(_page_items(lines, body, outline.get(index, {}), heading_sizes)))
            for index, lines in enumerate(pages_lines)
        ]
        return pages, running


def _nothing_read(image_only: list[int]) -> str:
    if image_only:
        return f"the PDF has no text (OCR read none on its {len(image_only)} scanned page(s))"
    return "the PDF has no text"
