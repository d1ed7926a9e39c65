"""kb-tesseract: OCR of scanned pages and photos with Tesseract 5 (through tesserocr), offline.

Registers the OCR engine ``tesseract``. Per page, Tesseract's orientation and script detection
picks the model (``eng``, ``Hangul``, ``HanS`` from Debian's ``tesseract-ocr-*`` packages) and sets
a turned page upright; on a Korean page the doubtful words (Hanja, Latin words) are read again with
``HanT`` and ``eng``; a line is cut into cells at wide gaps (a table row read as one line). Options
live in ``[backends.tesseract]`` (``tessdata``, ``models``, ``osd``, ``split_cells``, ``reread``;
see the README). tesserocr is imported only when the engine is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any

from kb_core import ModelUnavailableError
from kb_core.plugin import FactoryContext, RegisterOcrEngine, hookimpl
from kb_core.plugin.options import RegisterOptions
from kb_tesseract.settings import INSTALL, OPTIONS, SECTION, Settings

if TYPE_CHECKING:
    from kb_tesseract.engine import TesseractEngine

__all__ = ["INSTALL", "Settings", "make_engine", "register_ocr_engines", "register_options"]
__version__ = metadata.version("kb-tesseract")


def make_engine(options: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> TesseractEngine:
    """The engine for ``[backends.tesseract]`` ``options``; a KbError naming the install command
    when Tesseract's data or tesserocr is missing, a ConfigError for a bad option."""
    settings = Settings.from_options(options, environ)
    try:
        from kb_tesseract.engine import TesseractEngine
    except ImportError as error:
        raise ModelUnavailableError(
            f"tesserocr cannot be loaded ({error})", hint="install it: pip install tesserocr==2.13.0"
        ) from error
    return TesseractEngine(settings)


def _factory(ctx: FactoryContext) -> TesseractEngine:
    return make_engine(ctx.options)


@hookimpl
def register_ocr_engines(register: RegisterOcrEngine) -> None:
    """The ``tesseract`` OCR engine."""
    register(
        "tesseract",
        _factory,
        languages="English, Korean, Chinese (simplified); more with Debian tesseract-ocr-* models",
        description="Tesseract OCR (tesserocr), script detected per page",
        licence="Apache-2.0",
        needs="Debian tesseract-ocr-* data",
    )


@hookimpl
def register_options(register: RegisterOptions) -> None:
    """The options of ``[backends.tesseract]``, checked by kb at start."""
    register(SECTION, OPTIONS)
