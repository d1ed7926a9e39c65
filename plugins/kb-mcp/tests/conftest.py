"""Fixtures for kb-mcp: a small knowledge base ingested with the real default engines (the environment is
isolated by kb_core.testing's pytest plugin). The helpers live in mcp_helpers.py (a module named conftest
would clash with the core's)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import kb_core

sys.path.insert(0, str(Path(__file__).parent))

from mcp_helpers import scripted_plugin_path, write_notes


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
