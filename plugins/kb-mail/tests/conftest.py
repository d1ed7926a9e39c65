"""The kb-mail tests' knowledge base: the test lexical index and the scripted model. The builders of mail live in
mailtest.py (a module named conftest would clash with the core's)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import kb_core
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, extractive, load_registry

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def open_kb(tmp_path: Path) -> Iterator[object]:
    """``open_kb(extra=None)``: a knowledge base in ``tmp_path/kb`` with the test lexical index and the scripted model
    answering with its first passage (``extractive``)."""
    opened: list[kb_core.KnowledgeBase] = []

    def make(extra: list[tuple[str, object]] | None = None) -> kb_core.KnowledgeBase:
        plugins = [("test-indexes", TestIndexesPlugin()), ("scripted", ScriptedPlugin(extractive)), *(extra or [])]
        overrides = {"indexes.enabled": ["test-lexical"], "models.llm.backend": "scripted", "rag.answer_check": 0}
        config = kb_core.load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={})
        kb = kb_core.KnowledgeBase(config, load_registry(extra_plugins=plugins))
        opened.append(kb)
        return kb

    yield make
    for kb in opened:
        kb.close()
