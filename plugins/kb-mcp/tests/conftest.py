"""Fixtures for kb-mcp: an isolated environment and a small knowledge base ingested with the real default
engines. The helpers live in mcp_helpers.py (a module named conftest would clash with the core's)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import kb_core
from kb_core.testing import isolate_environment

sys.path.insert(0, str(Path(__file__).parent))

from mcp_helpers import scripted_plugin_path, write_notes


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No user config, no stray KB_* variables, platform dirs under a temp folder."""
    isolate_environment(monkeypatch, tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A knowledge base holding NOTES, ingested once per module with the real default engines."""
    base = tmp_path_factory.mktemp("mcp-kb")
    notes = write_notes(base / "notes")
    with kb_core.open_kb(kb_dir=base / "kb", overrides={}) as kb:
        report = kb_core.ingest_paths(kb, [notes])
    assert not report.failed
    return base / "kb"


@pytest.fixture
def scripted_pythonpath(tmp_path: Path) -> str:
    """PYTHONPATH for a subprocess that should have the ``scripted`` backend."""
    return scripted_plugin_path(tmp_path / "plugins")
