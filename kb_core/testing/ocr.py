"""OCR for tests: :class:`ScriptedOcr` (a fake engine that reads what it is told),
:class:`ScriptedOcrPlugin` (that registers one as the engine ``scripted``) and
:class:`OcrEngineContract`, the checks every OCR engine plugin passes.

``ScriptedOcr`` is for parser tests that need page images read without an engine installed; it is
never registered and never on kb's runtime path. A plugin's own tests subclass the contract with
its real engine and a page of known text::

    class TestTesseract(OcrEngineContract):
        @pytest.fixture
        def engine(self):
            return make_engine({})  # the plugin's engine, as its factory makes it

        @pytest.fixture
        def text_page(self):
            return render("Invoice 4711 total 93.20"), ["Invoice", "4711", "93.20"]
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import attrs
import pytest

from kb_core.extend.contracts import OcrEngine
from kb_core.extend.hookspecs import RegisterOcrEngine, hookimpl
from kb_core.types import OcrImage, OcrLine


def blank_image(width: int = 200, height: int = 100, dpi: int = 150, shade: int = 255) -> OcrImage:
    """An image of one grey ``shade`` (white by default)."""
    return OcrImage(bytes([shade]) * (width * height * 3), width, height, dpi)


@attrs.define
class ScriptedOcr:
    """A fake OCR engine: ``read`` returns ``pages[i]`` for the i-th image it is shown (then nothing).

    ``lines_for`` (when given) decides instead, from the image. ``seen`` records every image read.
    """

    pages: Sequence[Sequence[OcrLine]] = ()
    lines_for: Callable[[OcrImage], Sequence[OcrLine]] | None = None
    identity: str = "scripted-ocr 1"
    seen: list[OcrImage] = attrs.field(factory=list)

    def languages(self) -> tuple[str, ...]:
        """The languages it claims."""
        return ("English",)

    def read(self, image: OcrImage) -> list[OcrLine]:
        """The scripted lines of the next page."""
        self.seen.append(image)
        if self.lines_for is not None:
            return list(self.lines_for(image))
        index = len(self.seen) - 1
        return list(self.pages[index]) if index < len(self.pages) else []


@attrs.define
class ScriptedOcrPlugin:
    """An in-process plugin that registers the OCR engine ``scripted``: one :class:`ScriptedOcr`
    reading ``lines_for`` (``load_registry(extra_plugins=[("scans", ScriptedOcrPlugin(f))])``)."""

    lines_for: Callable[[OcrImage], Sequence[OcrLine]]
    engine: ScriptedOcr = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.engine = ScriptedOcr(lines_for=self.lines_for)

    @hookimpl
    def register_ocr_engines(self, register: RegisterOcrEngine) -> None:
        """Register ``scripted``, always the same :attr:`engine`."""
        register("scripted", lambda _ctx: self.engine, languages="English")


class OcrEngineContract:
    """What every :class:`~kb_core.plugin.OcrEngine` does. Subclasses give ``engine`` and ``text_page``
    (an image and words that must be read on it)."""

    @pytest.fixture
    def engine(self) -> OcrEngine:
        raise NotImplementedError("give the engine under test")

    @pytest.fixture
    def text_page(self) -> tuple[OcrImage, list[str]]:
        raise NotImplementedError("give an image of known text and words that must be read on it")

    def test_is_an_ocr_engine(self, engine: OcrEngine) -> None:
        assert isinstance(engine, OcrEngine)
        assert isinstance(engine.identity, str) and engine.identity.strip()
        assert engine.languages() and all(isinstance(name, str) and name for name in engine.languages())

    def test_reads_the_words_of_a_page(self, engine: OcrEngine, text_page: tuple[OcrImage, list[str]]) -> None:
        image, words = text_page
        lines = engine.read(image)
        text = " ".join(line.text for line in lines)
        assert [w for w in words if w not in text] == [], text
        for line in lines:
            _check_line(line, image)

    def test_a_blank_page_has_no_lines(self, engine: OcrEngine) -> None:
        assert [line.text for line in engine.read(blank_image()) if line.text.strip()] == []

    @pytest.mark.parametrize("size", [(1, 1), (3, 700), (700, 3)])
    def test_a_sliver_of_an_image_is_read_without_error(self, engine: OcrEngine, size: tuple[int, int]) -> None:
        image = blank_image(*size, shade=0)
        for line in engine.read(image):
            _check_line(line, image)

    def test_noise_is_read_without_error(self, engine: OcrEngine) -> None:
        rng = random.Random(7)
        image = OcrImage(rng.randbytes(160 * 120 * 3), 160, 120, 72)
        for line in engine.read(image):
            _check_line(line, image)

    def test_the_same_image_reads_the_same(self, engine: OcrEngine, text_page: tuple[OcrImage, list[str]]) -> None:
        image, _ = text_page
        assert engine.read(image) == engine.read(image)


def _check_line(line: OcrLine, image: OcrImage) -> None:
    x, y, w, h = line.box
    assert isinstance(line.text, str) and "\n" not in line.text
    assert x >= 0 and y >= 0 and w >= 0 and h >= 0, line
    assert x + w <= image.width and y + h <= image.height, (line, image.width, image.height)
    assert 0.0 <= line.confidence <= 1.0, line
