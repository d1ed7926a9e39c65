"""kb-openai passes the contract test kit for language models, against a real llama.cpp server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kb_core.plugin import LanguageModel
from kb_core.testing import LanguageModelContract

pytestmark = pytest.mark.slow


class TestOpenAIContract(LanguageModelContract):
    @pytest.fixture
    def language_model(self, build_model: Callable[..., LanguageModel], llama_server: Any) -> LanguageModel:
        return build_model(llama_server.url, api_key=llama_server.key, read_timeout_s=120, total_timeout_s=300)

    @pytest.fixture
    def unavailable_language_model(
        self, build_model: Callable[..., LanguageModel], closed_port: int
    ) -> Callable[[], LanguageModel]:
        return lambda: build_model(f"http://127.0.0.1:{closed_port}/v1")
