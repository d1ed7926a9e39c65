"""Image files (photos and scans: PNG, JPEG, TIFF, WebP, BMP, GIF) read by OCR, decoded with Pillow.

Each frame of a multi-page TIFF is a page (other formats: the first frame). The parsed text is
laid out as for a scanned PDF page (:mod:`kb_documents.ocr_pages`): ``Page 1`` .. ``Page n``
lines, rows, tables; ``metadata["ocr"]`` boxes are in the image's pixels, after the EXIF
orientation is applied. Every problem is one :class:`kb_core.KbError` line: no OCR installed, not
an image kb reads, damaged or truncated, over a limit (the size is checked from the header,
before the pixels are decoded).

The limit is ``max_ocr_pixels``, checked here for every frame read. A JPEG over it (a phone's
48 or 108 megapixel photo) is not refused: its decoder scales it down by 2, 4 or 8 as it decodes
(no full-size copy is ever made), and the lines' boxes are scaled back to the file's own pixels.
Pillow's own process-wide ``Image.MAX_IMAGE_PIXELS`` is left as it is (it warns past it, ignored
here, and refuses an image past twice it: 178,956,970 pixels by default): an image over that is
refused with Pillow's limit named, even when ``max_ocr_pixels`` is larger.
"""

from __future__ import annotations

import io
import math
import warnings
from pathlib import PurePosixPath
from typing import Any

from PIL import ExifTags, Image, ImageOps, JpegImagePlugin, UnidentifiedImageError

from kb_core import KbError
from kb_core.plugin import OcrImage, ParsedDocument
from kb_core.plugin.pages import RenderedPage
from kb_documents.assemble import Page, assemble
from kb_documents.binary import BinaryParser, png_page
from kb_documents.limits import Limits
from kb_documents.ocr_pages import Ocr, OcrPage, clean_lines, ocr_metadata, page_items

#: Pillow formats kb opens (never EPS and the like, which run other programs or rarely hold text).
FORMATS = ("PNG", "JPEG", "TIFF", "WEBP", "BMP", "GIF")
SIGNATURES = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"II*\0", b"MM\0*")
MIN_DPI, MAX_DPI = 70, 1200  # a resolution from the file outside this is not believed
GUESS_INCHES = 11.0  # a photo's resolution is guessed as if its long side were a letter page's
MIN_GUESS, MAX_GUESS = 100, 600
JPEG_REDUCTIONS = (2, 4, 8)  # what a JPEG decoder scales by as it decodes
TURNED = (5, 6, 7, 8)  # EXIF orientations that swap width and height
DAMAGED_HINT = "open it in an image viewer and save it again, then ingest the new file"
PIXELS_HINT = "raise [backends.documents] max_ocr_pixels to read it (or scale the image down)"


class ImageParser(BinaryParser):
    """Image files through OCR: one ``Page N`` line per page (TIFF frame), then its rows and tables; a page as
    a PNG to show."""

    kind = "image"

    def __init__(self, limits: Limits | None = None, ocr: Ocr | None = None) -> None:
        self.limits = limits or Limits()
        self.ocr = ocr or Ocr()

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """Read the image's text by OCR; every failure is a KbError."""
        self.check_size(data, self.limits.max_bytes)
        if self.ocr.engine is None:
            raise KbError(f"an image is read by OCR; {self.ocr.missing}")
        if not data:
            raise KbError("the image is empty (0 bytes)", hint="nothing to index; remove it or add it to .kbignore")
        try:
            return self._parse(data, path)
        except Exception as exc:  # noqa: BLE001 - Pillow reports damage in many ways (OSError, SyntaxError, ...)
            raise self._failure(exc, data) from None

    def render_page(self, data: bytes, path: str, page: int, *, max_side: int) -> RenderedPage:
        """Page ``page`` (a TIFF's frame; other formats have one) as a new PNG to show: upright, transparency
        on white, its long side at most ``max_side``. Decoded within ``max_ocr_pixels`` as when it is read (a
        JPEG smaller, and no larger than it is shown); every failure is a KbError, as :meth:`parse_bytes`'s."""
        self.check_size(data, self.limits.max_bytes)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (as when it is read: the size is checked here)
                with Image.open(io.BytesIO(data), formats=FORMATS) as image:
                    self._seek_page(image, page)
                    self._decode_smaller(image, max(1, max_side))
                    ImageOps.exif_transpose(image, in_place=True)
                    upright = _rgb(image)
                    upright.thumbnail((max(1, max_side), max(1, max_side)))
                    return png_page(upright)
        except Exception as exc:  # noqa: BLE001 - as parse_bytes
            raise self._failure(exc, data) from None

    def _failure(self, exc: Exception, data: bytes) -> KbError:
        """The one line of what went wrong decoding ``data`` (``exc`` itself when it is a KbError)."""
        if isinstance(exc, KbError):
            return exc
        if isinstance(exc, Image.DecompressionBombError):  # (its warning is ignored: the size is checked here)
            return self._refused_by_pillow(_header_size(data))
        if isinstance(exc, UnidentifiedImageError):
            if data.startswith(SIGNATURES) or data[8:12] == b"WEBP":
                return KbError("the image is damaged (its header cannot be read)", hint=DAMAGED_HINT)
            return KbError(
                "not an image kb reads (PNG, JPEG, TIFF, WebP, BMP or GIF)",
                hint="check the file; rename it if it is another format",
            )
        if isinstance(exc, MemoryError):
            return KbError("the image is too large to decode in the memory available", hint=PIXELS_HINT)
        return KbError(f"the image is damaged or truncated ({type(exc).__name__}: {exc})", hint=DAMAGED_HINT)

    def _seek_page(self, image: Image.Image, page: int) -> None:
        """Make frame ``page`` current: only a TIFF's later frames are pages (kb reads a GIF's first alone)."""
        if page < 1 or (page > 1 and (image.format != "TIFF" or page > self.limits.max_pages)):
            raise KbError(f"the image has no page {page}")
        if page > 1:
            try:
                image.seek(page - 1)
            except EOFError:
                raise KbError(f"the image has no page {page}") from None

    def _decode_smaller(self, image: Image.Image, max_side: int) -> None:
        """Set a JPEG to decode smaller (within ``max_ocr_pixels``, its long side still ``max_side``); refuse
        a frame whose pixels as decoded are over the limit, from its header, before anything is decoded."""
        width, height = image.size
        if isinstance(image, JpegImagePlugin.JpegImageFile):
            reduction = 1
            for smaller in JPEG_REDUCTIONS:
                over = math.ceil(width / reduction) * math.ceil(height / reduction) > self.limits.max_ocr_pixels
                if over or max(width, height) // smaller >= max_side:
                    reduction = smaller
            if reduction > 1:
                image.draft(image.mode, (max(1, width // reduction), max(1, height // reduction)))
        if image.size[0] * image.size[1] > self.limits.max_ocr_pixels:
            raise self._too_large((width, height))
        self._check_size(image.size)

    def _parse(self, data: bytes, path: str) -> ParsedDocument:
        pages: list[OcrPage] = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Pillow warns of damage (corrupt EXIF, ...) and of size: checked below
            with Image.open(io.BytesIO(data), formats=FORMATS) as image:
                full_size = image.size
                reduction = self._reduction(image)  # from the header: nothing is decoded yet
                count = self._frame_count(image)
                for index in range(count):
                    if index:
                        image.seek(index)
                        self._check_size(image.size)
                    pages.append(self._read_frame(image, index + 1, reduction, full_size if reduction > 1 else None))
                    self.ocr.report(path, index + 1, count)
        return self._document(pages, path)

    def _reduction(self, image: Image.Image) -> int:
        """1, or what a JPEG over ``max_ocr_pixels`` is scaled down by as it is decoded (set on ``image``)."""
        width, height = image.size
        if width * height <= self.limits.max_ocr_pixels or not isinstance(image, JpegImagePlugin.JpegImageFile):
            self._check_size(image.size)
            return 1
        for reduction in JPEG_REDUCTIONS:  # the decoder's size is the ceiling of size / reduction
            if math.ceil(width / reduction) * math.ceil(height / reduction) <= self.limits.max_ocr_pixels:
                image.draft(image.mode, (max(1, width // reduction), max(1, height // reduction)))
                self._check_size(image.size)
                return reduction
        raise self._too_large(image.size)

    def _check_size(self, size: tuple[int, int]) -> None:
        width, height = size
        if width * height > self.limits.max_ocr_pixels:
            raise self._too_large(size)
        if width < 1 or height < 1:
            raise KbError(f"the image is {width}x{height} px: it has no pixels", hint=DAMAGED_HINT)

    def _too_large(self, size: tuple[int, int] | None) -> KbError:
        shown = f"{size[0]}x{size[1]} px" if size else "too large"
        return KbError(f"the image is {shown}, over the limit of {self.limits.max_ocr_pixels} pixels", hint=PIXELS_HINT)

    def _refused_by_pillow(self, size: tuple[int, int] | None) -> KbError:
        """Why Pillow's own check (twice ``Image.MAX_IMAGE_PIXELS``) refused an image as it opened it."""
        pillow = Image.MAX_IMAGE_PIXELS
        if size is None or pillow is None or size[0] * size[1] > self.limits.max_ocr_pixels:
            return self._too_large(size)
        return KbError(
            f"the image is {size[0]}x{size[1]} px, over Pillow's own limit of {2 * pillow} pixels",
            hint="scale the image down (max_ocr_pixels does not raise Pillow's limit)",
        )

    def _frame_count(self, image: Image.Image) -> int:
        """The TIFF's pages (found by seeking, which reads no pixels); 1 for other formats."""
        if image.format != "TIFF":
            return 1
        count = 1
        while True:
            try:
                image.seek(count)
            except EOFError:
                break
            count += 1
            if count > self.limits.max_pages:
                raise KbError(
                    f"the TIFF has more than {self.limits.max_pages} pages, over the limit",
                    hint="raise [backends.documents] max_pages to read it",
                )
        image.seek(0)
        return count

    def _read_frame(
        self, frame: Image.Image, number: int, reduction: int = 1, full_size: tuple[int, int] | None = None
    ) -> OcrPage:
        """Decode the current frame (upright, RGB), read it, and drop its pixels.

        A frame decoded smaller by ``reduction`` gives its ``full_size``: the page's size and the
        lines' boxes are in the file's own pixels, upright.
        """
        full_width, full_height = full_size or frame.size
        if frame.getexif().get(ExifTags.Base.Orientation) in TURNED:
            full_width, full_height = full_height, full_width
        dpi = _file_dpi(frame.info.get("dpi"), reduction)
        ImageOps.exif_transpose(frame, in_place=True)  # in place: one copy of the pixels fewer
        upright = _rgb(frame)
        width, height = upright.size
        if dpi is None:
            dpi = round(min(MAX_GUESS, max(MIN_GUESS, max(width, height) / GUESS_INCHES)))
        image = OcrImage(upright.tobytes(), width, height, dpi)
        del upright
        lines = clean_lines(self.ocr.read(image, number), full_width, full_height, reduction)
        return OcrPage(number, full_width, full_height, 1.0, lines)

    def _document(self, pages: list[OcrPage], path: str) -> ParsedDocument:
        read = [(page, page.layout()) for page in pages]
        if not any(lines for _, lines in read):
            raise KbError(
                f"OCR found no text in the image ({len(pages)} page(s) read)",
                hint="nothing to index; remove it or add it to .kbignore",
            )
        assembled = assemble(Page(page.number, tuple(page_items(lines))) for page, lines in read)
        metadata: dict[str, Any] = {
            "format": "image",
            "pages": len(pages),
            "page_lines": list(assembled.page_lines),
            "ocr": ocr_metadata(self.ocr.identity(), read, assembled.page_lines),
        }
        return ParsedDocument(PurePosixPath(path).name, assembled.blocks, metadata, ())


def _file_dpi(value: object, reduction: int = 1) -> int | None:
    """The horizontal resolution a file states (of its image decoded ``reduction`` times smaller), if believable."""
    try:
        dpi = float(value[0] if isinstance(value, tuple) else value) / reduction  # type: ignore[arg-type]
    except (TypeError, ValueError, IndexError):
        return None
    return round(dpi) if MIN_DPI <= dpi <= MAX_DPI else None


def _rgb(image: Image.Image) -> Image.Image:
    """The image as 8-bit RGB; transparent parts on white (dark text on a clear background stays readable)."""
    if image.mode == "RGB":
        return image
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        page = Image.new("RGB", rgba.size, "white")
        page.paste(rgba, mask=rgba.getchannel("A"))
        return page
    if image.mode.startswith("I") or image.mode == "F":
        image = _eight_bit_grey(image)
    return image.convert("RGB")


def _eight_bit_grey(image: Image.Image) -> Image.Image:
    """A 16- or 32-bit grey image scaled to 0..255 (Pillow's conversion clips it: mostly white)."""
    wide = image if image.mode in ("I", "F") else image.convert("I")
    extrema = wide.getextrema()
    high = float(extrema[1]) if isinstance(extrema[1], int | float) else 255.0
    if high > 255 or (wide.mode == "F" and 0 < high <= 1):
        factor = 255.0 / high
        wide = wide.point(lambda value: value * factor)
    return wide.convert("L")


def _header_size(data: bytes) -> tuple[int, int] | None:
    """The size an image's header claims, read without Pillow's size check (for the error message)."""
    prefix = data[:16]
    for name in FORMATS:
        factory, accept = Image.OPEN.get(name, (None, None))
        try:
            if factory is not None and (accept is None or accept(prefix) is True):
                size: tuple[int, int] = factory(io.BytesIO(data), "").size
                return size
        except Exception:  # noqa: BLE001,S112 - only for the message; the caller has a fallback
            continue
    return None
