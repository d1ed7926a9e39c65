"""The Tesseract OCR engine: orientation and script detection picks the model, then text lines are read.

Per page: Tesseract's OSD (``osd.traineddata``) names the script and how far the page is turned;
a turned page is set upright, read with the script's model (``eng``, ``Hangul``, ``HanS``, ...,
else all models together), and each line's box is mapped back onto the image as it was given.
Pages are laid out automatically (columns, blocks), except with a Korean model: as one column.
On a Korean page the words the Korean model read doubtfully (Hanja, Latin words) are read again
with the ``reread`` models (:mod:`kb_tesseract.reread`). A page whose script OSD is unsure of, and
that reads poorly with that script's model, is read with each other model (:data:`SURE_SCRIPT`).
With ``split_cells`` a line is cut into cells at wide gaps between its words
(:mod:`kb_tesseract.cells`): the result iterator walks the page word by word for their boxes.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from importlib import metadata
from typing import Any, NamedTuple

import tesserocr
from tesserocr import PSM, RIL, PyTessBaseAPI, iterate_level

from kb_core import ModelUnavailableError
from kb_core.plugin import OcrImage, OcrLine
from kb_tesseract.cells import Word, line_height, segment, split_words
from kb_tesseract.pixels import box_back, clamp_box, join_cjk, turn
from kb_tesseract.reread import Corners, Reader, reread_words
from kb_tesseract.settings import INSTALL, Settings

#: Resolutions Tesseract believes; outside them it prints a warning and assumes 70 dpi.
MIN_DPI, MAX_DPI = 70, 2400
#: Tesseract refuses images wider or taller than this.
MAX_SIDE = 32767
#: OSD's orientation confidence from which a page is turned (15 is "reasonably confident").
MIN_ORIENT_CONF = 2.0
OSD = "osd"
#: Models whose pages are laid out as one column: Tesseract's automatic layout analysis takes lines
#: of Hangul for pictures and drops them (tesseract-ocr/tesseract#3423, #4016; README, "Korean").
SINGLE_COLUMN = frozenset({"Hangul", "kor"})
#: Models whose pages have their doubtful words read again with the ``reread`` models.
REREAD_AFTER = frozenset({"Hangul", "kor"})
#: OSD's script confidence from which its script is taken as is. Under it (2 of 60 English
#: TAT-QA pages, 0.34 and 0.63; a Korean page with Hanja and Latin words taken for Latin, 0.0; a
#: pure Korean page taken for Japanese, 0.11) a reading whose mean confidence (0..1, by characters)
#: is under SECOND_OPINION is read again with each other model, and the most confident reading
#: kept: the two Korean pages read 0.35 (eng) and 0.24 (HanS), 0.88 and 0.92 with Hangul; the two
#: English pages 0.95 and 0.96 with eng (so they are not read again).
SURE_SCRIPT = 1.0
SECOND_OPINION = 0.6


class TextLine(NamedTuple):
    """A text line as Tesseract read it: text, corners and confidence (0-100) on the image it read,
    its row height (``RowAttributes``) and its words with text."""

    text: str
    corners: Corners
    confidence: float
    row_height: float
    words: list[Word]


class TesseractEngine:
    """Fills :class:`kb_core.plugin.OcrEngine` with tesserocr. One ``PyTessBaseAPI`` per model, made
    on first use and kept; a lock makes concurrent callers take turns."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._apis: dict[str, PyTessBaseAPI] = {}
        self._lock = threading.Lock()
        models = [*settings.models, OSD] if settings.osd else list(settings.models)
        version = tesserocr.tesseract_version().splitlines()[0].strip()  # "tesseract 5.5.4"
        cells = "split_cells on" if settings.split_cells else "split_cells off"
        reread = f"reread {', '.join(settings.reread)}; " if settings.reread else ""
        self._identity = (
            f"{version} (tesserocr {tesserocr.__version__}; {', '.join(models)}; {reread}"
            f"kb-tesseract {metadata.version('kb-tesseract')}; {cells})"
        )

    @property
    def identity(self) -> str:
        """Tesseract's and tesserocr's versions, the models used (and those that read Korean pages'
        doubtful words again), this plugin's version and whether lines are split into cells, e.g.
        ``tesseract 5.5.4 (tesserocr 2.13.0; eng, Hangul, HanS, osd; reread HanT, eng; kb-tesseract
        0.2.0; split_cells on)``: what a page is read into changes with any of them."""
        return self._identity

    def languages(self) -> tuple[str, ...]:
        """The languages of the installed models it uses (English, Korean, Chinese (simplified), ...)."""
        return self.settings.languages()

    def read(self, image: OcrImage) -> list[OcrLine]:
        """The text lines of ``image`` in reading order, a line split into cells at wide gaps with
        ``split_cells`` (:mod:`kb_tesseract.cells`); ``[]`` for a page without text or one Tesseract
        cannot take (never raises for an image)."""
        width, height = image.width, image.height
        if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE) or len(image.pixels) < width * height * 3:
            return []
        pixels = bytes(image.pixels)
        dpi = min(max(int(image.dpi), MIN_DPI), MAX_DPI)
        with self._lock:
            try:
                return self._read(pixels, width, height, dpi)
            except RuntimeError:  # tesserocr's errors: an image it could not take or read
                return []

    def close(self) -> None:
        """Free every loaded model (the engine loads them again when used)."""
        with self._lock:
            for api in self._apis.values():
                api.End()
            self._apis.clear()

    def _read(self, pixels: bytes, width: int, height: int, dpi: int) -> list[OcrLine]:
        if self.settings.osd:
            model, quarters, sure = self._detect(pixels, width, height, dpi)
        else:
            model, quarters, sure = self.settings.fallback, 0, True
        upright, up_width, up_height = turn(pixels, width, height, quarters)
        found = self._recognise(model, upright, up_width, up_height, dpi)
        if not sure and _mean_confidence(found) < SECOND_OPINION:
            for other in self.settings.models:
                if other != model:
                    again = self._recognise(other, upright, up_width, up_height, dpi)
                    found = max(found, again, key=_mean_confidence)
        lines = []
        for line in found:
            for text, (left, top, right, bottom), confidence in self._pieces(line):
                text = join_cjk(" ".join(text.split()))
                if not text:
                    continue
                upright_box = clamp_box(left, top, right, bottom, up_width, up_height)
                # inside the turned image, so inside the original once turned back
                lines.append(OcrLine(text, box_back(upright_box, width, height, quarters), confidence))
        return lines

    def _recognise(self, model: str, pixels: bytes, width: int, height: int, dpi: int) -> list[TextLine]:
        """The text lines of the upright page read with ``model``, a Korean page's doubtful words
        read again with the ``reread`` models."""
        api = self._api(model)
        try:
            api.SetImageBytes(pixels, width, height, 3, width * 3)
            api.SetSourceResolution(dpi)  # after SetImageBytes, which resets it
            if not api.Recognize():
                return []
            iterator = api.GetIterator()
            if iterator is None:
                return []
            found = list(_text_lines(iterator))
        finally:
            api.Clear()
        if model in REREAD_AFTER and self.settings.reread:
            found = self._reread(found, model, pixels, width, height, dpi)
        return found

    def _reread(
        self, lines: list[TextLine], model: str, pixels: bytes, width: int, height: int, dpi: int
    ) -> list[TextLine]:
        """``lines`` with their doubtful words read again by the other ``reread`` models
        (:func:`kb_tesseract.reread.reread_words`); each model gets the page only when first needed."""
        used: list[PyTessBaseAPI] = []

        def reader(name: str) -> Reader:
            def read(box: Corners) -> list[Word]:
                api = self._api(name, line=True)
                if api not in used:
                    api.SetImageBytes(pixels, width, height, 3, width * 3)
                    api.SetSourceResolution(dpi)
                    used.append(api)
                left, top, right, bottom = box
                api.SetRectangle(left, top, right - left, bottom - top)
                if not api.Recognize():
                    return []
                iterator = api.GetIterator()
                if iterator is None:
                    return []
                return [word for item in iterate_level(iterator, RIL.WORD) if (word := _word(item)) is not None]

            return read

        readers = [reader(name) for name in self.settings.reread if name != model]
        try:
            out = []
            for line in lines:
                _, top, _, bottom = line.corners
                words = reread_words(line.words, top, bottom, readers, (width, height))
                if words != line.words:
                    text = " ".join(word.text for word in words)
                    confidence = sum(word.confidence for word in words) / len(words) if words else 0.0
                    line = line._replace(text=text, confidence=confidence, words=words)
                out.append(line)
            return out
        finally:
            for api in used:
                api.Clear()

    def _pieces(self, line: TextLine) -> list[tuple[str, Corners, float]]:
        """The line's text, corners and confidence (0..1); with ``split_cells``, those of each of
        its cells when it has several (or a table rule among its words)."""
        whole = [(line.text, line.corners, _unit(line.confidence))]
        if not self.settings.split_cells or not line.words:
            return whole
        height = line_height(line.row_height, line.corners[3] - line.corners[1])
        cells = split_words(line.words, height)
        if len(cells) == 1 and len(cells[0]) == len(line.words):
            return whole
        pieces = (segment(cell) for cell in cells)
        return [(piece.text, (piece.left, piece.top, piece.right, piece.bottom), piece.confidence) for piece in pieces]

    def _detect(self, pixels: bytes, width: int, height: int, dpi: int) -> tuple[str, int, bool]:
        """The model for the page's script, the quarter turns (counter-clockwise) that set it
        upright and whether OSD was sure of the script (:data:`SURE_SCRIPT`); the fallback model
        and no turn when OSD finds nothing (blank or tiny pages)."""
        osd = self._api(OSD)
        try:
            osd.SetImageBytes(pixels, width, height, 3, width * 3)
            osd.SetSourceResolution(dpi)
            found = osd.DetectOrientationScript()
        except RuntimeError:
            found = None
        finally:
            osd.Clear()
        if not found:
            return self.settings.fallback, 0, True
        model = self.settings.model_for(str(found.get("script_name") or ""))
        degrees = int(found.get("orient_deg") or 0)  # how far the page is turned clockwise
        turned = float(found.get("orient_conf") or 0.0) >= MIN_ORIENT_CONF
        sure = float(found.get("script_conf") or 0.0) >= SURE_SCRIPT
        return model, (degrees // 90) % 4 if turned else 0, sure

    def _api(self, model: str, line: bool = False) -> PyTessBaseAPI:
        """The loaded model (kept); ``line``: one that reads a box as one line of text."""
        key = f"{model} line" if line else model
        api = self._apis.get(key)
        if api is None:
            if model == OSD:
                psm = PSM.OSD_ONLY
            elif line:
                psm = PSM.SINGLE_LINE
            else:
                psm = PSM.SINGLE_COLUMN if SINGLE_COLUMN.intersection(model.split("+")) else PSM.AUTO
            try:
                api = PyTessBaseAPI(path=str(self.settings.tessdata), lang=model, psm=psm)
            except RuntimeError as error:
                raise ModelUnavailableError(
                    f"Tesseract could not load {model} from {self.settings.tessdata} ({error})",
                    hint=f"reinstall it: {INSTALL}",
                ) from error
            self._apis[key] = api
        return api


def _text_lines(iterator: Any) -> Iterator[TextLine]:
    """The text lines of a recognised page in reading order, each with its words: the result
    iterator walks the words, and a word at the beginning of a text line starts the next line.
    Lines without a box are left out, as are words without text or a box."""
    line: TextLine | None = None
    started = False
    for item in iterate_level(iterator, RIL.WORD):
        if not started or item.IsAtBeginningOf(RIL.TEXTLINE):
            if line is not None:
                yield line
            line, started = _start_line(item), True
        if line is not None:
            word = _word(item)
            if word is not None:
                line.words.append(word)
    if line is not None:
        yield line


def _start_line(item: Any) -> TextLine | None:
    corners = item.BoundingBox(RIL.TEXTLINE)
    if not corners:
        return None
    try:
        text = item.GetUTF8Text(RIL.TEXTLINE)
    except RuntimeError:  # "No text returned": the one empty item of a page without text
        text = ""
    try:
        row_height = float(item.RowAttributes()["row_height"])
    except (RuntimeError, KeyError, TypeError, ValueError):
        row_height = math.nan
    left, top, right, bottom = corners
    return TextLine(text, (left, top, right, bottom), float(item.Confidence(RIL.TEXTLINE)), row_height, [])


def _mean_confidence(lines: list[TextLine]) -> float:
    """The lines' mean confidence (0..1), each line weighed by its characters (whitespace aside:
    Tesseract gives lines it could not read a confidence too); 0 without text."""
    sizes = [len("".join(line.text.split())) for line in lines]
    characters = sum(sizes)
    return sum(_unit(line.confidence) * size for line, size in zip(lines, sizes)) / characters if characters else 0.0


def _unit(percent: float) -> float:
    """A confidence of 0-100 as 0..1 (0 when it is not a number)."""
    return min(max(percent / 100.0, 0.0), 1.0) if math.isfinite(percent) else 0.0


def _word(item: Any) -> Word | None:
    corners = item.BoundingBox(RIL.WORD)
    if not corners:
        return None
    try:
        text = item.GetUTF8Text(RIL.WORD).strip()
    except RuntimeError:
        return None
    if not text:
        return None
    left, top, right, bottom = corners
    return Word(text, left, top, right, bottom, float(item.Confidence(RIL.WORD)))
