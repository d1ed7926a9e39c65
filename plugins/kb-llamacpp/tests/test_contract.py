"""kb-llamacpp passes the contract test kit for language models, with its real default model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kb_core import load_config
from kb_core.plugin import FactoryContext, LanguageModel
from kb_core.testing import LanguageModelContract
from kb_llamacpp import make_model
from kb_llamacpp.model import LlamaCppModel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def real_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppModel]:
    config = load_config(None, tmp_path_factory.mktemp("kb-contract"), {"models.llm.context_tokens": 2048}, environ={})
    model = make_model(FactoryContext(config))
    yield model
    model.close()  # one model in memory at a time: each holds about 2 GB


class TestLlamaCppContract(LanguageModelContract):
    @pytest.fixture
    def language_model(self, real_model: LlamaCppModel) -> LanguageModel:
        return real_model

    @pytest.fixture
    def unavailable_language_model(self, tmp_path: Path) -> Callable[[], LanguageModel]:
        missing = tmp_path / "no-such-model.gguf"
        config = load_config(None, tmp_path, {"models.llm.model": str(missing)}, environ={})
        return lambda: make_model(FactoryContext(config))
