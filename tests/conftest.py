"""Shared fixtures: an isolated environment, the real default tokenizer/embedder, and KB factories."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kbtest import DEFAULT_ENV, LEXICAL, TEST_INDEXES

from kb_core.app import KnowledgeBase
from kb_core.config import load_config
from kb_core.extend.contracts import FactoryContext
from kb_core.extend.registry import registry, reset_registry


@pytest.fixture(autouse=True)
def test_indexes_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test indexes for in-process and ``kb`` subprocess tests (the environment is isolated by the
    pytest plugin of kb_core.testing, ``kb_isolated_environment`` in pyproject.toml)."""
    for name, value in DEFAULT_ENV.items():
        monkeypatch.setenv(name, value)
    if LEXICAL not in registry().names("indexes"):  # loaded earlier without the test plugins (a plugin's tests)
        reset_registry(None)


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    """The real default embedder (all-MiniLM-L6-v2 int8), loaded once per session."""
    from kb_core.builtin.embedders.minilm import _minilm
    from kb_core.config import Config

    return _minilm(FactoryContext(Config()))


@pytest.fixture
def make_kb(tmp_path: Path) -> Iterator[Callable[..., KnowledgeBase]]:
    """Factory: a KnowledgeBase in a temp dir on the test indexes; keyword args are dotted config overrides."""
    opened: list[KnowledgeBase] = []

    def factory(name: str = "kb", **overrides: object) -> KnowledgeBase:
        dotted = TEST_INDEXES | {key.replace("__", "."): value for key, value in overrides.items()}
        kb = KnowledgeBase(load_config(kb_dir=tmp_path / name, overrides=dotted, environ={}))
        opened.append(kb)
        return kb

    yield factory
    for kb in opened:
        kb.close()
