"""The backend under test, pointed at the kit's fake chat server (``kb_core.testing.FakeChatServer``).

``fake_ollama`` is that server serving ``llama3.2:latest`` as Ollama does (``GET /api/tags``,
``POST /api/show``, ``/api/generate``, ``/api/chat``; see ``kb_core/testing/chat_server.py``), with
``KB_OLLAMA_URL`` cleared so it is the target. Tests script faults (stalls, garbage lines, dropped
connections) through its attributes and read back every request it received. ``closed_port`` and
``unanswered_port`` come from the kit's pytest plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kb_core import Config
from kb_core.testing import FakeChatServer, serve_chat
from kb_ollama.model import OllamaModel, make_model

MODEL = "llama3.2:latest"


@pytest.fixture
def fake_ollama(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeChatServer]:
    """A running fake Ollama server on 127.0.0.1; ``KB_OLLAMA_URL`` is cleared so it is the target."""
    monkeypatch.delenv("KB_OLLAMA_URL", raising=False)
    with serve_chat(FakeChatServer(model=MODEL)) as fake:
        yield fake


def make_config(**llm: Any) -> Config:
    """A default configuration with ``[models.llm]`` values replaced."""
    config = Config()
    for key, value in llm.items():
        setattr(config.models.llm, key, value)
    return config


@pytest.fixture
def build_model(fake_ollama: FakeChatServer) -> Callable[..., OllamaModel]:
    """``build_model(url=..., model=..., **llm)``: the backend, pointed at the fake server by default."""

    def build(url: str | None = None, model: str = MODEL, **llm: Any) -> OllamaModel:
        options = {"url": url or fake_ollama.url, "model": model}
        return make_model(make_config(**llm), options, environ={})

    return build
