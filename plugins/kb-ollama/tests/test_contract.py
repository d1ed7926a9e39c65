"""kb-ollama passes the contract test kit for language models, against a server speaking Ollama's protocol."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kb_core.plugin import LanguageModel
from kb_core.testing import LanguageModelContract


class TestOllamaContract(LanguageModelContract):
    @pytest.fixture
    def language_model(self, build_model: Callable[..., LanguageModel]) -> LanguageModel:
        return build_model()

    @pytest.fixture
    def unavailable_language_model(
        self, build_model: Callable[..., LanguageModel], closed_port: int
    ) -> Callable[[], LanguageModel]:
        return lambda: build_model(url=f"http://127.0.0.1:{closed_port}")
