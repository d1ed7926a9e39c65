"""The servers the tests run against.

* ``llama_server``: a real llama.cpp server (llama-cpp-python's, run as ``python -m kb_llamacpp.server``
  so that it loads the model as kb-llamacpp does: no weight repacking where AMX crashes) on
  127.0.0.1 with the model kb-llamacpp ships, started once per session with an API key. The
  interpreter is ``$KB_LLAMA_SERVER_PYTHON`` (default: this one); it must have
  ``llama-cpp-python[server]`` and kb-llamacpp (or set ``KB_LLAMA_MODEL`` to a GGUF file).
* ``fake_chat_server`` (from kb_core.testing's pytest plugin, as are ``closed_port`` and
  ``unanswered_port``): a loopback server of the protocol, for the failures a real server cannot be
  made to produce (malformed streams, stalls, cut connections, arbitrary HTTP errors); its
  ``openai_url`` is the backend's URL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from kb_core import Config
from kb_core.testing import free_port
from kb_openai.model import OpenAIModel, make_model

SERVER_KEY = "sk-test-7f3a9c1e5b2d4f6a8c0e"
SERVER_MODEL = "qwen-test"
START_TIMEOUT_S = 180.0


@attrs.frozen
class LlamaServer:
    """A running llama.cpp server: its base URL, key, model alias and GGUF file."""

    url: str
    key: str
    model: str
    gguf: Path
    log: Path


def server_python() -> str:
    """The interpreter that runs the server."""
    return os.environ.get("KB_LLAMA_SERVER_PYTHON") or sys.executable


def packaged_gguf(python: str) -> Path:
    """The GGUF file kb-llamacpp ships (joined into the model cache on first use), or ``$KB_LLAMA_MODEL``."""
    if os.environ.get("KB_LLAMA_MODEL"):
        return Path(os.environ["KB_LLAMA_MODEL"])
    probe = subprocess.run(
        [python, "-c", "from kb_llamacpp import default_model_path; print(default_model_path())"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tempfile.gettempdir(),  # the interpreter's own packages, not a kb_core in the current folder
    )
    if probe.returncode != 0:
        pytest.fail(
            f"{python} cannot locate kb-llamacpp's model ({probe.stderr.strip().splitlines()[-1:]}); "
            "set KB_LLAMA_SERVER_PYTHON to an interpreter with kb-llamacpp and llama-cpp-python[server], "
            "or KB_LLAMA_MODEL to a GGUF file"
        )
    return Path(probe.stdout.strip())


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """Start the real server once for the session; stop it at the end."""
    python = server_python()
    gguf = packaged_gguf(python)
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        python,
        "-m",
        "kb_llamacpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        SERVER_MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "2",
        "--api_key",
        SERVER_KEY,
        "--verbose",
        "false",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"the llama.cpp server exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                answer = httpx.get(f"{url}/models", headers={"Authorization": f"Bearer {SERVER_KEY}"}, timeout=2)
                if answer.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the llama.cpp server did not start within {START_TIMEOUT_S:g} s")
            time.sleep(0.5)
        yield LlamaServer(url, SERVER_KEY, SERVER_MODEL, gguf, log)
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@pytest.fixture
def build_model() -> Callable[..., OpenAIModel]:
    """Make the backend for a URL with short timeouts."""

    def build(url: str, *, read_timeout_s: float = 5.0, total_timeout_s: float = 30.0, **options: Any) -> OpenAIModel:
        config = Config()
        config.models.llm.connect_timeout_s = 2.0
        config.models.llm.read_timeout_s = read_timeout_s
        config.models.llm.total_timeout_s = total_timeout_s
        return make_model(config, {"url": url, **options}, environ={})

    return build
