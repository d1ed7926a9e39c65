"""Shared paths and helpers for the kb-documents tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parent.parent
FIXTURES = PLUGIN / "fixtures"
GOOD = FIXTURES / "good"
BAD = FIXTURES / "bad"


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
