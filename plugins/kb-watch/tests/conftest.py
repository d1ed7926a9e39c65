"""Fixtures for kb-watch: an isolated environment (no user config, no KB_* variables)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kb_core.testing import isolate_environment

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No user config, no stray KB_* variables, platform dirs under a temp folder."""
    isolate_environment(monkeypatch, tmp_path_factory.mktemp("home"))
