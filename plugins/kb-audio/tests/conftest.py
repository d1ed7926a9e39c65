"""The kb-audio tests' fixtures: the scripted transcriber in place of Whisper, and a knowledge base with the scripted
model. The recordings and helpers live in audiotest.py (a module named conftest would clash with the core's)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kb_audio.parser import WhisperTranscriber

import kb_core
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, extractive, load_registry

sys.path.insert(0, str(Path(__file__).parent))

from audiotest import scripted_words  # noqa: E402  (after the path is set)


@pytest.fixture
def scripted_speech(monkeypatch: pytest.MonkeyPatch) -> None:
    """The installed plugin's parser hears SPOKEN instead of running Whisper."""
    monkeypatch.setattr(WhisperTranscriber, "words", lambda self, samples: scripted_words(samples))


@pytest.fixture
def open_kb(tmp_path: Path) -> Iterator[Callable[[], kb_core.KnowledgeBase]]:
    """``open_kb()``: a knowledge base in ``tmp_path/kb`` with the test lexical index and the scripted model
    answering with its first passage (``extractive``)."""
    opened: list[kb_core.KnowledgeBase] = []

    def make() -> kb_core.KnowledgeBase:
        plugins = [("test-indexes", TestIndexesPlugin()), ("scripted", ScriptedPlugin(extractive))]
        overrides = {"indexes.enabled": ["test-lexical"], "models.llm.backend": "scripted", "rag.answer_check": 0}
        config = kb_core.load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={})
        kb = kb_core.KnowledgeBase(config, load_registry(extra_plugins=plugins))
        opened.append(kb)
        return kb

    yield make
    for kb in opened:
        kb.close()
