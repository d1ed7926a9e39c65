"""kb-documents' PDF and image parsers render a page to show (``PageRenderer``), within their own limits:
the contract test kit, through the registry as kb-serve finds them, and what only images do (a JPEG
decoded smaller, Pillow's own limit, a TIFF's frames)."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from kb_core import Config, KbError
from kb_core.plugin import ParserContext
from kb_core.plugin.pages import PageRenderer
from kb_core.testing import PageRendererContract, load_registry
from kb_documents.image import ImageParser
from kb_documents.limits import Limits
from kb_documents.pdf import PdfParser

SHOWN = 1600
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def read_fixture(name: str) -> bytes:
    """The bytes of a generated fixture (good/ or bad/)."""
    return next(path for path in (FIXTURES / "good" / name, FIXTURES / "bad" / name) if path.exists()).read_bytes()


def encoded(image: Image.Image, kind: str, **options: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, kind, **options)
    return out.getvalue()


def photo(size: tuple[int, int] = (900, 600)) -> Image.Image:
    """A white photo with a dark square at its top left (to tell which way up it is)."""
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).rectangle((0, 0, 79, 79), fill="black")
    return image


def grey(image: Image.Image, x: int, y: int) -> int:
    """The grey level of a pixel of a grey image."""
    value = image.getpixel((x, y))
    assert isinstance(value, int)
    return value


def png_header(width: int, height: int) -> bytes:
    """A PNG that claims ``width`` x ``height`` pixels and holds almost none."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0")) + chunk(b"IEND", b"")


def tiff(*colours: str) -> bytes:
    frames = [Image.new("RGB", (60, 40), colour) for colour in colours]
    return encoded(frames[0], "TIFF", save_all=True, append_images=frames[1:])


class TestPdfRenders(PageRendererContract):
    samples = ((read_fixture("scanned.pdf"), 1), (read_fixture("report.pdf"), 3))
    sample_path = "docs/scanned.pdf"
    max_pixels = 500_000  # under what a page's long side of 1600 px would take: the page is drawn smaller

    @pytest.fixture
    def renderer(self) -> Any:
        return PdfParser(Limits(max_ocr_pixels=self.max_pixels))


class TestImageRenders(PageRendererContract):
    samples = ((encoded(photo(), "PNG"), 1), (encoded(photo(), "JPEG"), 1), (tiff("white", "black"), 2))
    sample_path = "photos/heron.png"
    max_pixels = 2_000_000
    over_limit = png_header(3000, 3000)  # refused from its header, before a pixel is decoded

    @pytest.fixture
    def renderer(self) -> Any:
        return ImageParser(Limits(max_ocr_pixels=self.max_pixels))


@pytest.mark.parametrize("name", ["pdf", "image"])
def test_the_registered_parsers_render_pages_with_the_configured_limit(name: str) -> None:
    config = Config(backends={"documents": {"max_ocr_pixels": 300_000}})
    parser = load_registry().get("parsers", name).factory(ParserContext(config))
    assert isinstance(parser, PageRenderer)
    data = read_fixture("scanned.pdf") if name == "pdf" else encoded(photo((1200, 800)), "PNG")
    if name == "image":  # 960,000 pixels: over the configured limit
        with pytest.raises(KbError, match="the image is 1200x800 px, over the limit of 300000 pixels"):
            parser.render_page(data, "a.png", 1, max_side=SHOWN)
        return
    shown = parser.render_page(data, "a.pdf", 1, max_side=SHOWN)
    assert shown.width * shown.height <= 300_000 and shown.height == pytest.approx(shown.width * 842 / 595, abs=2)


def test_a_pdf_page_is_upright_at_its_long_side() -> None:
    shown = PdfParser().render_page(read_fixture("report.pdf"), "r.pdf", 2, max_side=SHOWN)
    assert shown.height == SHOWN and shown.width == pytest.approx(SHOWN * 595.28 / 841.89, abs=1)
    with pytest.raises(KbError, match=r"^the PDF has 3 page\(s\), not a page 4$"):
        PdfParser().render_page(read_fixture("report.pdf"), "r.pdf", 4, max_side=SHOWN)
    with pytest.raises(KbError, match="the PDF is encrypted"):
        PdfParser().render_page(read_fixture("encrypted.pdf"), "e.pdf", 1, max_side=SHOWN)


def test_an_image_is_upright_on_white_and_never_larger_than_it_is() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # stored a quarter turn off: shown turned 90 degrees clockwise
    turned = encoded(photo().transpose(Image.Transpose.ROTATE_90), "JPEG", quality=90, exif=exif)
    shown = ImageParser().render_page(turned, "t.jpg", 1, max_side=SHOWN)
    upright = Image.open(io.BytesIO(shown.data)).convert("L")
    assert (shown.width, shown.height) == upright.size == (900, 600)  # not blown up to 1600
    assert grey(upright, 40, 40) < 60 and grey(upright, 890, 590) > 200  # the dark square at the top left
    clear = encoded(Image.new("LA", (50, 50), (0, 0)), "PNG")  # black, and wholly transparent
    shown = ImageParser().render_page(clear, "c.png", 1, max_side=SHOWN)
    assert grey(Image.open(io.BytesIO(shown.data)).convert("L"), 25, 25) == 255  # on white


def test_an_image_over_the_pixel_limit_is_refused_before_it_is_decoded() -> None:
    with pytest.raises(KbError, match="over the limit of 40000000 pixels"):  # (Pillow read only the header)
        ImageParser().render_page(png_header(30000, 30000), "big.png", 1, max_side=SHOWN)
    with pytest.raises(KbError, match="the image is 900x600 px, over the limit of 100000 pixels"):
        ImageParser(Limits(max_ocr_pixels=100_000)).render_page(encoded(photo(), "PNG"), "p.png", 1, max_side=SHOWN)


def test_a_jpeg_over_the_pixel_limit_is_decoded_smaller_as_it_is_read() -> None:
    big = encoded(Image.new("RGB", (4000, 3000), "white"), "JPEG")  # 12 MP: a quarter decodes to 1000x750
    shown = ImageParser(Limits(max_ocr_pixels=1_000_000)).render_page(big, "p.jpg", 1, max_side=SHOWN)
    assert (shown.width, shown.height) == (1000, 750)
    with pytest.raises(KbError, match="the image is 4000x3000 px, over the limit of 100000 pixels"):
        ImageParser(Limits(max_ocr_pixels=100_000)).render_page(big, "p.jpg", 1, max_side=SHOWN)  # an eighth: 500x375
    thin = encoded(Image.new("RGB", (1, 3200), "white"), "JPEG")  # a side of 1 px cannot be halved
    shown = ImageParser().render_page(thin, "t.jpg", 1, max_side=SHOWN)
    assert (shown.width, shown.height) == (1, 1600)


def test_rendering_leaves_pillows_limit_alone_and_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1_000_000)  # Pillow's check, under ours: its limit is named
    with pytest.raises(KbError, match="over Pillow's own limit of 2000000 pixels"):
        ImageParser().render_page(png_header(2000, 2000), "p.png", 1, max_side=SHOWN)
    assert Image.MAX_IMAGE_PIXELS == 1_000_000


def test_only_a_tiffs_later_frames_are_pages() -> None:
    frames = [Image.new("RGB", (60, 40), colour) for colour in ("white", "black")]
    gif = encoded(frames[0], "GIF", save_all=True, append_images=frames[1:])
    with pytest.raises(KbError, match="the image has no page 2"):  # kb-documents reads only a GIF's first frame
        ImageParser().render_page(gif, "g.gif", 2, max_side=SHOWN)
    second = ImageParser().render_page(tiff("white", "black"), "t.tiff", 2, max_side=SHOWN)
    assert grey(Image.open(io.BytesIO(second.data)).convert("L"), 30, 20) == 0
    with pytest.raises(KbError, match="the image has no page 2"):
        ImageParser(Limits(max_pages=1)).render_page(tiff("white", "black"), "t.tiff", 2, max_side=SHOWN)
