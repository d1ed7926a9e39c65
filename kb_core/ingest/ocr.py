"""The OCR engine an ingest hands its parsers: chosen by ``[ingest] ocr``, made on the first page it
must read, and remembering what it read by the image's content, so that an unchanged scan is never
read twice (not after ``kb reindex``, a changed setting or a renamed file either).

What an engine read is kept under ``<kb>/ocr-cache/`` as one JSON file per page image, named by
the SHA-256 of the engine's identity, the image's size, resolution and pixels.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import attrs

from kb_core.config import Config
from kb_core.extend.contracts import FactoryContext, OcrEngine
from kb_core.extend.registry import Registry
from kb_core.storage.sqlite_files import make_private_dir
from kb_core.types import OcrImage, OcrLine, Progress

#: The one command that installs the OCR engine kb documents (Tesseract's data from Debian, then the plugin).
OCR_INSTALL = (
    "apt-get install -y --no-install-recommends tesseract-ocr-eng tesseract-ocr-osd"
    " tesseract-ocr-script-hang tesseract-ocr-script-hans && pip install kb-tesseract"
)
OCR_MISSING = f"OCR is not installed (install it: {OCR_INSTALL})"
OCR_OFF = 'OCR is off ([ingest] ocr = "off"; set it to "auto" to read scans and photos)'
CACHE_FOLDER = "ocr-cache"


class _KnowledgeBase(Protocol):
    """What :func:`choose_ocr` reads of a :class:`~kb_core.app.KnowledgeBase` (which makes it once, ``kb.ocr()``)."""

    config: Config
    registry: Registry
    progress: Progress | None

    @property
    def directory(self) -> Path: ...


def choose_ocr(kb: _KnowledgeBase) -> tuple[OcrEngine | None, str]:
    """The OCR engine ``[ingest] ocr`` names (made on first use, cached by content), or None and why not."""
    setting = kb.config.ingest.ocr
    if setting == "off":
        return None, OCR_OFF
    names = kb.registry.names("ocr_engines")
    if setting == "auto":
        if not names:
            return None, OCR_MISSING
        setting = names[0]
    if setting not in names:  # scans fail with this line; the rest of an ingest goes on
        installed = ", ".join(names) or "none"
        return None, f"no OCR engine named {setting!r} is installed ([ingest] ocr; installed: {installed})"
    factory = kb.registry.get("ocr_engines", setting).factory
    options = kb.config.backend_options(setting)
    return CachedOcr(lambda: factory(FactoryContext(kb.config, options, kb.progress)), kb.directory / CACHE_FOLDER), ""


@attrs.define
class CachedOcr:
    """An :class:`OcrEngine` that makes the real one on first use and keeps what it read by content."""

    make: Callable[[], OcrEngine]
    folder: Path
    _engine: OcrEngine | None = None
    #: Pages read by the engine / answered from the cache, in this process.
    read_count: int = 0
    cached_count: int = 0

    @property
    def engine(self) -> OcrEngine:
        """The real engine (made now if it was not yet)."""
        if self._engine is None:
            self._engine = self.make()
        return self._engine

    @property
    def identity(self) -> str:
        """The real engine's identity."""
        return self.engine.identity

    def languages(self) -> tuple[str, ...]:
        """What the real engine reads."""
        return self.engine.languages()

    def read(self, image: OcrImage) -> list[OcrLine]:
        """The lines of ``image``: from the cache when this engine read the same pixels before."""
        digest = hashlib.sha256()
        digest.update(f"{self.identity}\0{image.width}x{image.height}@{image.dpi}\0".encode())
        digest.update(image.pixels)
        key = digest.hexdigest()
        path = self.folder / key[:2] / f"{key}.json"
        lines = _load(path)
        if lines is not None:
            self.cached_count += 1
            return lines
        lines = self.engine.read(image)
        self.read_count += 1
        _save(path, lines)
        return lines


def _load(path: Path) -> list[OcrLine] | None:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        return [OcrLine(str(t), (int(x), int(y), int(w), int(h)), float(c)) for t, (x, y, w, h), c in rows]
    except (OSError, ValueError, TypeError):  # absent, or damaged: read the page again
        return None


def _save(path: Path, lines: list[OcrLine]) -> None:
    text = json.dumps([[ln.text, list(ln.box), ln.confidence] for ln in lines])
    partial = None
    try:
        make_private_dir(path.parent)
        handle, partial = tempfile.mkstemp(suffix=".tmp", dir=path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(partial, path)
    except OSError:  # a cache that cannot be written only costs time
        if partial is not None:
            with contextlib.suppress(OSError):
                os.unlink(partial)
