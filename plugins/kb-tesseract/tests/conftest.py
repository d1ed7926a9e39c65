"""Fixtures for kb-tesseract: one engine per test session (models load once). Page rendering and
the check for Tesseract's data live in tesseract_pages.py (a module named conftest would clash
with the core's)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kb_tesseract import make_engine
from kb_tesseract.engine import TesseractEngine


@pytest.fixture(scope="session")
def shared_engine() -> Iterator[TesseractEngine]:
    """The engine with the default options (eng, Hangul, HanS, osd), kept for the session."""
    engine = make_engine({})
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def unsplit_engine() -> Iterator[TesseractEngine]:
    """The engine with ``split_cells = false``: one line per Tesseract text line."""
    engine = make_engine({"split_cells": False})
    yield engine
    engine.close()
