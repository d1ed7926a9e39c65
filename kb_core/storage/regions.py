"""Where text read by OCR sits on its page, from what the parser stored in ``metadata["ocr"]``.

A parser that reads page images (kb-documents: scanned PDF pages, photos) stores, for every line of
its parsed text that OCR read, the page, the box and the engine's confidence::

    metadata["ocr"] = {
        "engine": "tesseract 5.5.0 (...)",
        "pages": [[page, width, height], ...],               # in the page's units
        "lines": [[line, page, x, y, width, height, confidence], ...],
    }

Units are the page's own: PDF points for a PDF page (1/72 inch), pixels for an image file. A
citation's region is the box around its lines on its first page, written
``scan.pdf#page=3&xywh=72,140,300,40`` (an image is page 1): the PDF open parameter ``page`` (RFC
8118) and the Media Fragments ``xywh``. Lines under :data:`LOW_CONFIDENCE` are marked low: an answer
resting only on them says so.

>>> metadata = {"ocr": {"lines": [[3, 1, 10, 20, 100, 12, 0.9], [4, 1, 10, 34, 80, 12, 0.5]]}}
>>> region = region_of(metadata, 3, 4)
>>> (region.fragment(), region.confidence, region.low)
('page=1&xywh=10,20,100,26', 0.7, False)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from kb_core.storage.lines import stored_lines
from kb_core.storage.moments import moment_of
from kb_core.types import AnswerCitation, Chunk, Document, Region

#: Below this confidence (0..1) a line read by OCR is marked low (Tesseract's lines under it were
#: mostly noise from ruling lines and smudges in kb's trials: docs/ocr-engines.md).
LOW_CONFIDENCE = 0.6


@attrs.frozen
class OcrLineRegion:
    """One line of a document's parsed text that OCR read: its page, box and confidence."""

    line: int
    page: int
    box: tuple[int, int, int, int]
    confidence: float

    @property
    def low(self) -> bool:
        """Whether the engine's confidence in it is under :data:`LOW_CONFIDENCE`."""
        return self.confidence < LOW_CONFIDENCE


def ocr_lines(metadata: Mapping[str, Any]) -> dict[int, OcrLineRegion]:
    """The OCR'd lines of a document by line number (empty when none; malformed entries are left out).

    A box is clamped to its page's size when ``metadata["ocr"]["pages"]`` gives it (a box stored by an
    older kb could reach a point past the page's edge)."""
    found: dict[int, OcrLineRegion] = {}
    ocr = metadata.get("ocr")
    rows = ocr.get("lines") if isinstance(ocr, Mapping) else None
    if not isinstance(rows, list):
        return found
    sizes = page_sizes(metadata)
    for row in rows:
        if not (isinstance(row, list) and len(row) == 7):
            continue
        line, page, x, y, w, h, confidence = row
        numbers = (line, page, x, y, w, h)
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
            continue
        if not isinstance(confidence, (int, float)) or line < 1 or page < 1 or min(x, y, w, h) < 0:
            continue
        box = clamped((x, y, w, h), sizes.get(page))  # (the confidence clamped before float(): 10**400 overflows)
        found[line] = OcrLineRegion(line, page, box, float(min(1.0, max(0.0, confidence))))
    return found


def page_sizes(metadata: Mapping[str, Any]) -> dict[int, tuple[int, int]]:
    """The size (width, height in the page's units) of every page OCR read, by number (malformed ones left out)."""
    ocr = metadata.get("ocr")
    rows = ocr.get("pages") if isinstance(ocr, Mapping) else None
    found: dict[int, tuple[int, int]] = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, list) and len(row) == 3 and all(type(v) is int and v >= 1 for v in row):
            found[row[0]] = (row[1], row[2])
    return found


def clamped(box: tuple[int, int, int, int], size: tuple[int, int] | None) -> tuple[int, int, int, int]:
    """``box`` (x, y, width, height, none negative) cut to a page of ``size`` (None: left as it is)."""
    if size is None:
        return box
    x, y, w, h = box
    left, top = min(x, size[0]), min(y, size[1])
    return (left, top, min(x + w, size[0]) - left, min(y + h, size[1]) - top)


def page_count(metadata: Mapping[str, Any]) -> int:
    """How many pages a document has (0: it has none): its ``page_lines`` (kb-documents' PDFs and images
    store the first line of each page there), else the pages OCR read."""
    page_lines = metadata.get("page_lines")
    if isinstance(page_lines, list) and page_lines:
        return len(page_lines)
    return max(page_sizes(metadata), default=0)


def region_of(metadata: Mapping[str, Any], start_line: int, end_line: int) -> Region | None:
    """The box around the OCR'd lines ``start_line..end_line`` on the first page they reach (None: no OCR'd line).

    Its confidence is the mean of those lines'; it is ``low`` when that is under :data:`LOW_CONFIDENCE`.
    """
    return _region(ocr_lines(metadata), start_line, end_line)


def _region(lines: Mapping[int, OcrLineRegion], start_line: int, end_line: int) -> Region | None:
    # (from the lines that exist: a span of a billion lines is no more work than the document's lines)
    chosen = [lines[n] for n in sorted(n for n in lines if start_line <= n <= end_line)]
    if not chosen:
        return None
    page = chosen[0].page
    on_page = [r for r in chosen if r.page == page]
    left = min(r.box[0] for r in on_page)
    top = min(r.box[1] for r in on_page)
    right = max(r.box[0] + r.box[2] for r in on_page)
    bottom = max(r.box[1] + r.box[3] for r in on_page)
    confidence = sum(r.confidence for r in on_page) / len(on_page)
    return Region(page, (left, top, right - left, bottom - top), round(confidence, 2), confidence < LOW_CONFIDENCE)


#: The note of a grounded answer whose every citation is text OCR read with low confidence.
LOW_CONFIDENCE_NOTE = "it rests only on text read by OCR with low confidence: check it against the page"


def with_regions(
    citations: tuple[AnswerCitation, ...], get_document: Callable[[str], Document | None]
) -> tuple[AnswerCitation, ...]:
    """``citations`` with the region of each one whose document has OCR'd lines in its span, and the moment
    of each one whose document is a recording (:mod:`kb_core.storage.moments`); each cited document read,
    and its metadata parsed, once."""
    lines_of: dict[str, dict[int, OcrLineRegion]] = {}
    metadata_of: dict[str, Mapping[str, Any]] = {}
    located = []
    for item in citations:
        path = item.citation.path
        if path not in lines_of:
            document = get_document(path)
            metadata_of[path] = document.metadata if document is not None else {}
            lines_of[path] = ocr_lines(metadata_of[path])
        start, end = item.citation.start_line, item.citation.end_line
        region = _region(lines_of[path], start, end)
        moment = moment_of(metadata_of[path], start, end) if metadata_of[path].get("moments") else None
        if region is not None or moment is not None:
            item = attrs.evolve(item, region=region or item.region, moment=moment)
        located.append(item)
    return tuple(located)


def rests_on_low_confidence(citations: tuple[AnswerCitation, ...]) -> bool:
    """Whether every one of an answer's citations is OCR'd text of low confidence (False without any)."""
    return bool(citations) and all(c.region is not None and c.region.low for c in citations)


def noted_low_confidence(note: str, citations: tuple[AnswerCitation, ...]) -> str:
    """``note``, saying so when the answer :func:`rests_on_low_confidence`."""
    if not rests_on_low_confidence(citations):
        return note
    return f"{note}; {LOW_CONFIDENCE_NOTE}" if note else LOW_CONFIDENCE_NOTE


def ocr_summary(metadata: Mapping[str, Any]) -> str:
    """One line on what OCR read of a document: engine, lines, pages, how many of low confidence."""
    ocr = metadata.get("ocr")
    engine = ocr.get("engine") if isinstance(ocr, Mapping) else None
    lines = ocr_lines(metadata)
    pages = len({r.page for r in lines.values()})
    low = sum(r.low for r in lines.values())
    return f"{engine or 'an OCR engine'} read {len(lines)} lines on {pages} page(s), {low} of low confidence"


def chunk_ocr_lines(metadata: Mapping[str, Any], chunk: Chunk, chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    """The OCR'd lines of ``chunk`` (for ``kb inspect``): line, page, box, confidence, low and its text,
    as the document's ``chunks`` put it back (:func:`~kb_core.storage.lines.stored_lines`)."""
    lines = ocr_lines(metadata)
    texts, _exact = stored_lines(chunks)
    return [
        {
            "line": n,
            "page": lines[n].page,
            "box": list(lines[n].box),
            "confidence": lines[n].confidence,
            "low": lines[n].low,
            "text": (texts[n - 1] if n <= len(texts) else None) or "",
        }
        for n in sorted(n for n in lines if chunk.start_line <= n <= chunk.end_line)
    ]
