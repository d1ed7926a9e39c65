"""The backend against a real Ollama server: runs only when ``KB_OLLAMA_URL`` names one on loopback.

``KB_OLLAMA_MODEL`` picks the model (default: the first one ``/api/tags`` lists). Example::

    KB_OLLAMA_URL=http://127.0.0.1:11434 KB_OLLAMA_MODEL=llama3.2 pytest plugins/kb-ollama/tests/test_real_server.py
"""

from __future__ import annotations

import ipaddress
import os
import socket

import pytest

from kb_core import Config
from kb_core.plugin import Done, GenerateRequest, Token
from kb_ollama.client import BaseUrl, OllamaClient, Timeouts
from kb_ollama.model import make_model
from kb_ollama.protocol import parse_tags

URL = os.environ.get("KB_OLLAMA_URL", "")


def _loopback(url: str) -> bool:
    host = BaseUrl.parse(url).host
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback for info in socket.getaddrinfo(host, None))
    except (OSError, ValueError):
        return False


pytestmark = [
    pytest.mark.skipif(not URL, reason="no real Ollama server: set KB_OLLAMA_URL=http://127.0.0.1:11434 to run"),
    pytest.mark.skipif(bool(URL) and not _loopback(URL), reason="KB_OLLAMA_URL must name a loopback address"),
]


@pytest.fixture(scope="module")
def real_model():
    name = os.environ.get("KB_OLLAMA_MODEL")
    if not name:
        pulled = parse_tags(OllamaClient(BaseUrl.parse(URL), Timeouts(5, 30, 30)).get_json("/api/tags"))
        if not pulled:
            pytest.skip("the Ollama server at KB_OLLAMA_URL has no model pulled: run 'ollama pull llama3.2'")
        name = pulled[0].name
    config = Config()
    config.models.llm.context_tokens = 2048
    return make_model(config, {"model": name})


def test_real_server_is_healthy(real_model):
    assert real_model.check() == []
    assert 0 < real_model.context_tokens <= 2048
    assert real_model.model_ref.path and real_model.model_ref.path.startswith("sha256:")


def test_real_server_streams_and_counts(real_model):
    request = GenerateRequest(system="Reply with one short sentence.", user="Say hello.", max_tokens=16, seed=1)
    events = list(real_model.generate_stream(request))
    tokens, done = [e for e in events if isinstance(e, Token)], events[-1]
    assert isinstance(done, Done) and done.error is None, done
    assert tokens and done.finish_reason in ("stop", "length")
    assert done.prompt_tokens > 0 and 0 < done.completion_tokens <= 16


def test_real_server_counts_tokens(real_model):
    short, long = real_model.count_tokens("Hello"), real_model.count_tokens("Hello, world. " * 20)
    assert 1 <= short <= 3
    assert long > short * 10
    assert real_model.count_tokens("하늘은 왜 파란가요?") >= 5
