"""Image files read by OCR (a scripted engine): pages, orientation, resolution, and every bad file in one line."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw, ImageFont

from kb_core import KbError, load_config
from kb_core.plugin import FactoryContext, OcrImage, OcrLine, ParsedDocument, ParserContext
from kb_core.testing import BytesParserContract, ScriptedOcr, check_blocks, load_registry
from kb_documents.assemble import page_of_line, parsed_text
from kb_documents.image import ImageParser
from kb_documents.limits import Limits
from kb_documents.ocr_pages import Ocr
from kb_documents.pdf import PdfParser
from kb_documents.plugin import IMAGE_EXTENSIONS, _image

INSTALL = "OCR is not installed (install it: apt-get install -y tesseract-ocr-eng && pip install kb-tesseract)"


def one_line(image: OcrImage) -> list[OcrLine]:
    """What the scripted engine reads on any image: one line in its top left corner."""
    return [OcrLine("Invoice 4711", (0, 0, max(image.width // 2, 1), max(image.height // 4, 1)), 0.876)]


def parser(limits: Limits | None = None, engine: ScriptedOcr | None = None, **ocr: Any) -> ImageParser:
    """An ImageParser with a scripted engine (``one_line`` unless told otherwise)."""
    return ImageParser(limits, Ocr(engine or ScriptedOcr(lines_for=one_line), INSTALL, **ocr))


def encode(image: Image.Image, kind: str, **options: Any) -> bytes:
    """``image`` saved as ``kind`` (PNG, JPEG, ...)."""
    out = io.BytesIO()
    image.save(out, kind, **options)
    return out.getvalue()


def png_header(width: int, height: int) -> bytes:
    """A valid PNG that claims ``width`` x ``height`` pixels and holds (almost) none: a decompression bomb's header."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )


PHOTO = encode(Image.new("RGB", (800, 600), "white"), "JPEG")


def test_a_photo_is_one_page_titled_by_its_file_name() -> None:
    lines = [
        OcrLine("Receipt", (40, 20, 200, 40), 0.99),
        OcrLine("Coffee", (40, 100, 150, 30), 0.9),
        OcrLine("3.20", (600, 100, 80, 30), 0.8),
        OcrLine("Cake", (40, 140, 100, 30), 0.95),
        OcrLine("4.10", (600, 140, 80, 30), 0.6),
    ]
    doc = parser(engine=ScriptedOcr(pages=[lines])).parse_bytes(PHOTO, "photos/receipt.jpg")
    assert doc.title == "receipt.jpg"
    assert parsed_text(doc.blocks).split("\n") == ["Page 1", "Receipt", "Coffee | 3.20", "Cake | 4.10"]
    assert [b.kind for b in doc.blocks] == ["paragraph", "table"]
    assert doc.metadata == {
        "format": "image",
        "pages": 1,
        "page_lines": [1],
        "ocr": {
            "engine": "scripted-ocr 1",
            "pages": [[1, 800, 600]],
            "lines": [[2, 1, 40, 20, 200, 40, 0.99], [3, 1, 40, 100, 640, 30, 0.8], [4, 1, 40, 140, 640, 30, 0.6]],
        },
    }


def test_exif_orientation_is_applied_before_reading() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated 90 degrees: the camera was held upright
    engine = ScriptedOcr(lines_for=one_line)
    doc = parser(engine=engine).parse_bytes(encode(Image.new("RGB", (800, 600), "white"), "JPEG", exif=exif), "p.jpg")
    assert (engine.seen[0].width, engine.seen[0].height) == (600, 800)
    assert doc.metadata["ocr"]["pages"] == [[1, 600, 800]]


@pytest.mark.parametrize(
    ("size", "options", "dpi"),
    [
        ((850, 1100), {"dpi": (300, 300)}, 300),  # the file's own
        ((2200, 1700), {}, 200),  # guessed: the long side over 11 inches
        ((500, 400), {}, 100),  # guessed, at least 100
        ((6000, 3000), {"dpi": (20, 20)}, 545),  # an unbelievable resolution is guessed instead
        ((9000, 4000), {}, 600),  # guessed, at most 600
    ],
)
def test_the_resolution_comes_from_the_file_or_is_guessed(
    size: tuple[int, int], options: dict[str, Any], dpi: int
) -> None:
    engine = ScriptedOcr(lines_for=one_line)
    parser(engine=engine).parse_bytes(encode(Image.new("L", size, 255), "PNG", **options), "scan.png")
    assert engine.seen[0].dpi == dpi


def test_every_tiff_frame_is_a_page_with_progress() -> None:
    frames = [
        Image.new("RGB", (300, 200), "white"),
        Image.new("RGB", (200, 300), "white"),
        Image.new("1", (100, 50), 1),
    ]
    data = encode(frames[0], "TIFF", save_all=True, append_images=frames[1:])
    calls: list[tuple[str, int, int]] = []
    engine = ScriptedOcr(lines_for=one_line)
    doc = parser(engine=engine, progress=lambda *a: calls.append(a)).parse_bytes(data, "fax.tiff")
    assert parsed_text(doc.blocks).split("\n") == [
        "Page 1",
        "Invoice 4711",
        "Page 2",
        "Invoice 4711",
        "Page 3",
        "Invoice 4711",
    ]
    assert doc.metadata["page_lines"] == [1, 3, 5]
    assert doc.metadata["ocr"]["pages"] == [[1, 300, 200], [2, 200, 300], [3, 100, 50]]
    assert [entry[:2] for entry in doc.metadata["ocr"]["lines"]] == [[2, 1], [4, 2], [6, 3]]
    assert calls == [("ocr fax.tiff", 1, 3), ("ocr fax.tiff", 2, 3), ("ocr fax.tiff", 3, 3)]
    assert [b.heading_path for b in doc.blocks] == [("Page 1",), ("Page 2",), ("Page 3",)]
    with pytest.raises(KbError, match="the TIFF has more than 2 pages, over the limit"):
        parser(Limits(max_pages=2)).parse_bytes(data, "fax.tiff")


def test_transparent_and_16_bit_images_reach_the_engine_readable() -> None:
    engine = ScriptedOcr(lines_for=one_line)
    clear = Image.new("RGBA", (40, 20), (0, 0, 0, 0))
    ImageDraw.Draw(clear).rectangle((0, 0, 9, 9), fill=(0, 0, 0, 255))
    parser(engine=engine).parse_bytes(encode(clear, "PNG"), "clear.png")
    pixels = engine.seen[-1].pixels
    assert pixels[:3] == b"\0\0\0" and pixels[-3:] == b"\xff\xff\xff"  # black text, white where it was clear
    deep = Image.new("I;16", (40, 20), 30000)
    deep.putpixel((39, 19), 60000)
    parser(engine=engine).parse_bytes(encode(deep, "PNG"), "deep.png")
    pixels = engine.seen[-1].pixels
    assert 100 < pixels[0] < 160 and pixels[-1] == 255  # scaled to 8 bits, not clipped to white


def test_without_ocr_each_image_is_one_line_naming_the_install_command(config_file: Path) -> None:
    image = _image(ParserContext(load_config(config_file), ocr=None, ocr_missing=INSTALL))
    with pytest.raises(KbError) as caught:
        image.parse_bytes(PHOTO, "photo.jpg")
    assert caught.value.message == f"an image is read by OCR; {INSTALL}"
    with pytest.raises(KbError, match="OCR is not installed"):
        ImageParser().parse_bytes(PHOTO, "photo.jpg")  # made without a context: a line of its own


def test_the_image_parser_is_registered_for_image_files() -> None:
    registration = load_registry().get("parsers", "image")
    assert tuple(registration.info["extensions"]) == IMAGE_EXTENSIONS
    assert {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"} <= set(IMAGE_EXTENSIONS)


def _error(data: bytes, name: str, limits: Limits | None = None) -> KbError:
    with pytest.raises(KbError) as caught:
        parser(limits).parse_bytes(data, name)
    assert "\n" not in str(caught.value)
    return caught.value


def test_a_decompression_bomb_is_refused_from_its_header() -> None:
    error = _error(png_header(30000, 30000), "bomb.png")
    assert error.message == "the image is 30000x30000 px, over the limit of 40000000 pixels"
    assert "max_ocr_pixels" in (error.hint or "")
    just_over = _error(png_header(7000, 7000), "big.png")  # between the limit and Pillow's own error
    assert just_over.message == "the image is 7000x7000 px, over the limit of 40000000 pixels"
    small = _error(encode(Image.new("L", (300, 300), 255), "PNG"), "small.png", Limits(max_ocr_pixels=50_000))
    assert small.message == "the image is 300x300 px, over the limit of 50000 pixels"


def test_parsing_leaves_pillows_own_limit_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 123_456_789)  # (what another part of the process chose)
    parser(Limits(max_ocr_pixels=50_000_000)).parse_bytes(PHOTO, "photo.jpg")
    assert Image.MAX_IMAGE_PIXELS == 123_456_789
    _error(png_header(30000, 30000), "bomb.png", Limits(max_ocr_pixels=60_000))
    assert Image.MAX_IMAGE_PIXELS == 123_456_789


def test_an_image_pillow_refuses_under_max_ocr_pixels_names_pillows_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100_000)  # Pillow refuses past 200,000 pixels
    error = _error(png_header(1000, 1000), "big.png")
    assert error.message == "the image is 1000x1000 px, over Pillow's own limit of 200000 pixels"
    assert "scale the image down" in (error.hint or "")
    ours = _error(png_header(1000, 1000), "big.png", Limits(max_ocr_pixels=500_000))  # over both: ours is named
    assert ours.message == "the image is 1000x1000 px, over the limit of 500000 pixels"


@pytest.mark.parametrize(("orientation", "full"), [(1, (1200, 1000)), (6, (1000, 1200))])
def test_a_jpeg_over_the_limit_is_decoded_smaller_and_cited_in_its_own_pixels(
    orientation: int, full: tuple[int, int]
) -> None:
    exif = Image.Exif()
    exif[0x0112] = orientation
    photo = encode(Image.new("RGB", (1200, 1000), "white"), "JPEG", exif=exif, dpi=(400, 400))
    engine = ScriptedOcr(lines_for=one_line)
    doc = parser(Limits(max_ocr_pixels=500_000), engine).parse_bytes(photo, "phone.jpg")  # 1.2 MP: halved
    seen = engine.seen[0]
    assert (seen.width * 2, seen.height * 2) == full and seen.dpi == 200
    assert doc.metadata["ocr"]["pages"] == [[1, *full]]
    assert doc.metadata["ocr"]["lines"] == [[2, 1, 0, 0, full[0] // 2, full[1] // 4, 0.88]]  # the box grew back
    quartered = ScriptedOcr(lines_for=one_line)
    parser(Limits(max_ocr_pixels=100_000), quartered).parse_bytes(photo, "phone.jpg")
    assert quartered.seen[0].width * quartered.seen[0].height == 300 * 250


def test_only_a_jpeg_is_decoded_smaller_and_only_down_to_an_eighth() -> None:
    big = Image.new("RGB", (1200, 1000), "white")
    png = _error(encode(big, "PNG"), "screen.png", Limits(max_ocr_pixels=500_000))
    assert png.message == "the image is 1200x1000 px, over the limit of 500000 pixels"
    jpeg = _error(encode(big, "JPEG"), "huge.jpg", Limits(max_ocr_pixels=10_000))  # an eighth is 150x125
    assert jpeg.message == "the image is 1200x1000 px, over the limit of 10000 pixels"
    thin = _error(encode(Image.new("RGB", (1, 3000), "white"), "JPEG"), "thin.jpg", Limits(max_ocr_pixels=1000))
    assert thin.message == "the image is 1x3000 px, over the limit of 1000 pixels"  # a 1 px side cannot be halved


def test_a_tiff_frame_over_the_limit_is_refused_before_it_is_decoded() -> None:
    frames = [Image.new("L", (100, 100), 255), Image.new("L", (400, 400), 255)]
    data = encode(frames[0], "TIFF", save_all=True, append_images=frames[1:])
    assert _error(data, "two.tif", Limits(max_ocr_pixels=50_000)).message.startswith("the image is 400x400 px")


@pytest.mark.parametrize(
    ("data", "name", "message"),
    [
        (PHOTO[: len(PHOTO) // 2], "cut.jpg", "the image is damaged or truncated"),
        (b"just some text in a file named like a picture\n" * 3, "notes.png", "not an image kb reads"),
        (b"", "empty.png", "the image is empty (0 bytes)"),
        (b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n", "a.png", "not an image kb reads"),  # never EPS
        (png_header(0, 10), "zero.png", "the image is damaged (its header cannot be read)"),
    ],
    ids=["truncated-jpeg", "text", "zero-bytes", "eps", "zero-width"],
)
def test_bad_images_are_one_line(data: bytes, name: str, message: str) -> None:
    error = _error(data, name)
    assert error.message.startswith(message), error.message
    assert error.hint


def test_an_image_where_ocr_reads_nothing_is_one_line() -> None:
    with pytest.raises(KbError, match=r"OCR found no text in the image \(1 page\(s\) read\)"):
        parser(engine=ScriptedOcr()).parse_bytes(PHOTO, "cat.jpg")


def test_the_byte_limit_applies() -> None:
    assert _error(PHOTO, "photo.jpg", Limits(max_bytes=100)).message.startswith(f"the image is {len(PHOTO)} bytes")


SEEDS = [
    encode(Image.new("RGB", (64, 48), "white"), kind, **options)
    for kind, options in [
        ("PNG", {}),
        ("JPEG", {}),
        ("GIF", {}),
        ("BMP", {}),
        ("WEBP", {}),
        ("TIFF", {"compression": "tiff_lzw"}),
    ]
]
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ_PARSER = parser(Limits(max_ocr_pixels=4_000_000, max_pages=20))


def _only_kb_errors(data: bytes) -> None:
    try:
        doc = FUZZ_PARSER.parse_bytes(data, "x.png")
    except KbError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert isinstance(doc, ParsedDocument)
        check_blocks(doc)


@FUZZ
@given(data=st.binary(max_size=4096))
def test_arbitrary_bytes_raise_only_kb_errors(data: bytes) -> None:
    _only_kb_errors(data)


@FUZZ
@given(seed=st.sampled_from(SEEDS), edits=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=8))
def test_damaged_images_raise_only_kb_errors(seed: bytes, edits: list[tuple[float, int]]) -> None:
    data = bytearray(seed)
    for at, value in edits:
        data[min(int(at * len(data)), len(data) - 1)] = value
    _only_kb_errors(bytes(data))
    _only_kb_errors(bytes(data[: int(len(data) * (edits[0][0] if edits else 0.5))]))


ocr_lines = st.lists(
    st.builds(
        OcrLine,
        st.text(st.characters(codec="utf-8"), max_size=12),
        st.tuples(st.integers(-50, 700), st.integers(-50, 500), st.integers(-10, 300), st.integers(-5, 80)),
        st.floats(allow_nan=True, allow_infinity=True),
    ),
    max_size=25,
)


@FUZZ
@given(pages=st.lists(ocr_lines, min_size=1, max_size=3))
def test_whatever_an_engine_returns_every_text_line_has_its_box(pages: list[list[OcrLine]]) -> None:
    frames = [Image.new("L", (640, 480), 255) for _ in pages]
    data = encode(frames[0], "TIFF", save_all=True, append_images=frames[1:])
    try:
        doc = parser(engine=ScriptedOcr(pages=pages)).parse_bytes(data, "scan.tif")
    except KbError as exc:
        assert str(exc).startswith("OCR found no text in the image")
        return
    check_blocks(doc)
    text = parsed_text(doc.blocks).split("\n")
    page_lines = doc.metadata["page_lines"]
    entries = doc.metadata["ocr"]["lines"]
    assert [n for n in range(1, len(text) + 1) if n not in page_lines] == [entry[0] for entry in entries]
    for number, page, x, y, w, h, confidence in entries:
        assert text[number - 1].strip() and page_of_line(page_lines, number) == page
        assert 0 <= x <= x + w <= 640 and 0 <= y <= y + h <= 480 and 0 <= confidence <= 1


class TestImageParserContract(BytesParserContract):
    samples = tuple(SEEDS)
    sample_path = "photos/page.png"

    @pytest.fixture
    def parser(self) -> Any:
        return parser()


def _tesseract(config_file: Path) -> Any:
    registration = load_registry().get("ocr_engines", "tesseract")  # (the test is marked needs_ocr_data)
    return registration.factory(FactoryContext(load_config(config_file)))


def _english_page() -> Image.Image:
    page = Image.new("RGB", (1700, 2200), "white")  # letter size at 200 dpi
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=44)
    draw.text((150, 200), "Heliograph Quarterly Report", fill="black", font=font)
    draw.text((150, 320), "The inverter firmware was certified in July.", fill="black", font=font)
    for row, (name, value) in enumerate([("Plant", "Output"), ("Lakeside", "4210"), ("Ridgeback", "3875")]):
        draw.text((150, 480 + 70 * row), name, fill="black", font=font)
        draw.text((1100, 480 + 70 * row), value, fill="black", font=font)
    return page


@pytest.mark.needs_ocr_data
def test_the_real_engine_reads_a_scanned_english_page(config_file: Path) -> None:
    engine = _tesseract(config_file)
    data = encode(_english_page(), "PDF", resolution=200)
    doc = PdfParser(ocr=Ocr(engine)).parse_bytes(data, "scan.pdf")
    text = parsed_text(doc.blocks)
    for words in ("Heliograph Quarterly Report", "firmware was certified", "Lakeside", "4210"):
        assert words in text, text
    assert doc.metadata["ocr"]["pages"] == [[1, 612, 792]]
    for _, page, x, y, w, h, confidence in doc.metadata["ocr"]["lines"]:
        assert page == 1 and 0 <= x <= x + w <= 612 and 0 <= y <= y + h <= 792 and 0 <= confidence <= 1
    photo = parser(engine=engine).parse_bytes(encode(_english_page(), "PNG", dpi=(200, 200)), "page.png")
    assert "firmware was certified" in parsed_text(photo.blocks)
