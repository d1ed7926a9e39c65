"""Shared paths and helpers for the kb-documents tests (builders of decks, books and notebooks: part_formats.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # part_formats (a module named conftest would clash with the core's)

PLUGIN = Path(__file__).resolve().parent.parent
FIXTURES = PLUGIN / "fixtures"
GOOD = FIXTURES / "good"
BAD = FIXTURES / "bad"
SAMPLES = FIXTURES / "samples"


def read_fixture(name: str) -> bytes:
    """The bytes of ``good/NAME`` or ``bad/NAME``."""
    for folder in (GOOD, BAD):
        if (folder / name).exists():
            return (folder / name).read_bytes()
    raise FileNotFoundError(name)


@pytest.fixture(scope="session")
def fixture_bytes() -> Callable[[str], bytes]:
    """``fixture_bytes(name)``: the bytes of a generated fixture (good/ or bad/)."""
    return read_fixture


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The folder of generated fixtures (good/ and bad/)."""
    return FIXTURES


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    """An empty kb configuration file, so a user's own configuration never leaks into a test."""
    path = tmp_path / "config.toml"
    path.write_text("")
    return path
