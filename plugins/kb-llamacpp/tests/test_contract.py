"""kb-llamacpp passes the contract test kit for language models, with its real default model."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import pytest

from kb_core import FactoryContext, LanguageModel, load_config
from kb_core.testing import LanguageModelContract
from kb_llamacpp import make_model

pytestmark = pytest.mark.slow


@functools.cache
def _model(kb_dir: str) -> LanguageModel:
    config = load_config(None, kb_dir, {"models.llm.context_tokens": 2048}, environ={})
    return make_model(FactoryContext(config))


class TestLlamaCppContract(LanguageModelContract):
    @pytest.fixture
    def language_model(self, tmp_path_factory: pytest.TempPathFactory) -> LanguageModel:
        return _model(str(tmp_path_factory.getbasetemp() / "kb-contract"))

    @pytest.fixture
    def unavailable_language_model(self, tmp_path: Path) -> Callable[[], LanguageModel]:
        missing = tmp_path / "no-such-model.gguf"
        config = load_config(None, tmp_path, {"models.llm.model": str(missing)}, environ={})
        return lambda: make_model(FactoryContext(config))
