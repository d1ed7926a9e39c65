"""Shared fixtures: an isolated environment, the real default tokenizer/embedder, and KB factories."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kbtest import DEFAULT_ENV, LEXICAL

from kb_core.app import KnowledgeBase
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
def make_kb(make_test_kb: Callable[..., KnowledgeBase]) -> Callable[..., KnowledgeBase]:
    """Factory: a KnowledgeBase in a temp dir on the test indexes; keyword args are dotted config overrides
    (kb_core.testing's ``make_test_kb``, under the name the core's tests use)."""
    return make_test_kb
