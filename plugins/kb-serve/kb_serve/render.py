"""A page of a scanned PDF or an image file as a PNG of modest size, made in a child process.

``GET /documents/{path}/pages/{page}.png`` (:mod:`kb_serve.page_images`) runs this file as a script,
``python -I render.py pdf|image PAGE MAX_PIXELS``, the document's bytes on stdin and the PNG on
stdout (a failure: exit status 2 and one line on stderr). A process of its own, because pdfium
must never be called from two threads at once (an upload's ingest may be parsing a PDF in the
server), and so that a page image's pixels never stay in the server's memory. The script imports
only the standard library, Pillow and pypdfium2 (both installed with kb-documents), so it starts in
a tenth of a second.

* A PDF page is rendered by pdfium, rotation applied, its long side :data:`MAX_SIDE` pixels (at
  most :data:`MAX_SCALE` pixels per point).
* An image file is opened by Pillow (only the formats kb-documents reads), its size checked from the
  header before anything is decoded (at most ``MAX_PIXELS``, kb-documents' ``max_ocr_pixels``; a
  JPEG's size as it decodes, at down to an eighth, as kb-documents reads it), the
  TIFF frame that is the page chosen (other formats have one page: kb-documents reads only their
  first frame), the EXIF orientation applied, transparency put on white (as OCR saw it), scaled down
  to :data:`MAX_SIDE`, and encoded anew: the file's own bytes never leave.

Only :func:`main`, in the child process, sets Pillow's process-wide ``Image.MAX_IMAGE_PIXELS`` (to
``MAX_PIXELS``: its own bomb check then never refuses what ours lets through);
:func:`render_image_page` changes nothing of the process it runs in.
"""

from __future__ import annotations

import io
import sys
import warnings
from typing import Any

#: The long side of a page image, in pixels.
MAX_SIDE = 1600
#: Pixels per PDF point at most (a tiny page is not blown up past 288 dpi).
MAX_SCALE = 4.0
#: The image formats opened (as kb-documents: never EPS and the like).
FORMATS = ("PNG", "JPEG", "TIFF", "WEBP", "BMP", "GIF")
FAILED = 2


class RenderError(Exception):
    """Why a page cannot be rendered, in one line."""


def _png(image: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=6)
    return out.getvalue()


def render_pdf_page(data: bytes, page: int) -> bytes:
    """Page ``page`` (1-based) of the PDF ``data`` as a PNG, its long side :data:`MAX_SIDE` pixels."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise RenderError(f"pdfium cannot open the PDF ({exc})") from None
    try:
        if not 1 <= page <= len(document):
            raise RenderError(f"the PDF has {len(document)} page(s), not a page {page}")
        handle = document[page - 1]
        try:
            width, height = handle.get_size()
            if not (width >= 1 and height >= 1):
                raise RenderError(f"page {page} has no size")
            scale = min(MAX_SIDE / max(width, height), MAX_SCALE)
            bitmap = handle.render(scale=scale)
            try:
                return _png(bitmap.to_pil())
            finally:
                bitmap.close()
        finally:
            handle.close()
    finally:
        document.close()


def _upright_rgb(image: Any) -> Any:
    """The current frame upright (EXIF orientation), as 8-bit RGB with transparency on white."""
    from PIL import Image, ImageOps

    image = ImageOps.exif_transpose(image)
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", rgba.size, "white")
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    if image.mode.startswith("I") or image.mode == "F":  # 16- or 32-bit grey: scaled to 0..255, not clipped
        wide = image if image.mode in ("I", "F") else image.convert("I")
        high = wide.getextrema()[1]
        if isinstance(high, int | float) and (high > 255 or (wide.mode == "F" and 0 < high <= 1)):
            factor = 255.0 / float(high)
            wide = wide.point(lambda value: value * factor)
        image = wide.convert("L")
    return image.convert("RGB")


def _reduction(size: tuple[int, int], max_pixels: int) -> int:
    """What a JPEG of ``size`` is decoded smaller by (1, 2, 4 or 8): under ``max_pixels``, long side still MAX_SIDE."""
    width, height = size
    reduction = 1
    for smaller in (2, 4, 8):
        over = -(-width // reduction) * -(-height // reduction) > max_pixels
        if over or max(size) // smaller >= MAX_SIDE:
            reduction = smaller
    return reduction


def _check(size: tuple[int, int], max_pixels: int, decodes_to: tuple[int, int] | None = None) -> None:
    """Refuse an image of ``size`` whose pixels as decoded (``decodes_to``: a JPEG's fewer) are over ``max_pixels``."""
    width, height = size
    if (decodes_to or size)[0] * (decodes_to or size)[1] > max_pixels:
        raise RenderError(f"the image is {width}x{height} px, over the limit of {max_pixels} pixels")
    if width < 1 or height < 1:
        raise RenderError(f"the image is {width}x{height} px: it has no pixels")


def render_image_page(data: bytes, page: int, max_pixels: int) -> bytes:
    """Page ``page`` of the image ``data`` (a TIFF's frame; other formats have one) as a new PNG, upright, its
    long side at most :data:`MAX_SIDE` pixels; an image over ``max_pixels`` is refused before it is decoded."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (Pillow's size warning among them: the size is checked here)
            with Image.open(io.BytesIO(data), formats=FORMATS) as image:
                if page < 1 or (page > 1 and image.format != "TIFF"):  # (a GIF's later frames were never read)
                    raise RenderError(f"the image has no page {page}")
                if page > 1:
                    try:
                        image.seek(page - 1)
                    except EOFError:
                        raise RenderError(f"the image has no page {page}") from None
                size = image.size
                reduction = _reduction(size, max_pixels)
                image.draft("RGB", (max(1, size[0] // reduction), max(1, size[1] // reduction)))  # a JPEG: smaller
                _check(size, max_pixels, image.size)  # from the header: nothing is decoded yet
                upright = _upright_rgb(image)
                upright.thumbnail((MAX_SIDE, MAX_SIDE))
                return _png(upright)
    except RenderError:
        raise
    except Image.DecompressionBombError:  # Pillow's own check, past twice its MAX_IMAGE_PIXELS
        pillow = Image.MAX_IMAGE_PIXELS
        limit = max_pixels if pillow is None else min(max_pixels, 2 * pillow)
        raise RenderError(f"the image is over the limit of {limit} pixels") from None
    except Exception as exc:  # noqa: BLE001 - Pillow reports damage in many ways (OSError, SyntaxError, ...)
        raise RenderError(f"the image cannot be decoded ({type(exc).__name__}: {exc})") from None


def main(argv: list[str]) -> int:
    """``render.py pdf|image PAGE MAX_PIXELS``: the document on stdin, the PNG on stdout."""
    try:
        kind, page, max_pixels = argv[0], int(argv[1]), int(argv[2])
        data = sys.stdin.buffer.read()
        if kind == "pdf":
            png = render_pdf_page(data, page)
        elif kind == "image":
            from PIL import Image

            Image.MAX_IMAGE_PIXELS = max_pixels  # (this process renders this one page)
            png = render_image_page(data, page, max_pixels)
        else:
            raise RenderError(f"cannot render a {kind!r}")
    except RenderError as exc:
        print(" ".join(str(exc).split())[:400], file=sys.stderr)
        return FAILED
    except ImportError as exc:
        print(f"{exc.name or 'a renderer'} is not installed (pip install kb-documents)", file=sys.stderr)
        return FAILED
    sys.stdout.buffer.write(png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
