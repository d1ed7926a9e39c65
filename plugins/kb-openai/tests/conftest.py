"""Two servers for the tests.

* ``llama_server``: a real llama.cpp server (llama-cpp-python's, run as ``python -m kb_llamacpp.server``
  so that it loads the model as kb-llamacpp does: no weight repacking where AMX crashes) on
  127.0.0.1 with the model kb-llamacpp ships, started once per session with an API key. The
  interpreter is ``$KB_LLAMA_SERVER_PYTHON`` (default: this one); it must have
  ``llama-cpp-python[server]`` and kb-llamacpp (or set ``KB_LLAMA_MODEL`` to a GGUF file).
* ``fake_server``: a loopback server of the protocol, for the failures a real server cannot be
  made to produce (malformed streams, stalls, cut connections, arbitrary HTTP errors). It binds an
  ephemeral port in a daemon thread and stops at teardown or after ``LIFETIME_S``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from kb_core import Config
from kb_openai.model import OpenAIModel, make_model

LIFETIME_S = 60.0
MAX_STALL_S = 10.0
SERVER_KEY = "sk-test-7f3a9c1e5b2d4f6a8c0e"
SERVER_MODEL = "qwen-test"
START_TIMEOUT_S = 180.0


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the real llama.cpp server ----------------------------------------------------------------


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


# -- the fake server of the protocol ----------------------------------------------------------


@attrs.define
class FakeServer:
    """What the fake answers, and what it received."""

    url: str = ""
    models: list[str] = attrs.field(factory=lambda: ["fake-model"])
    reply: list[str] = attrs.field(factory=lambda: ["The", " sky", " is", " blue", "."])
    usage: dict[str, Any] | None = attrs.field(factory=lambda: {"prompt_tokens": 12, "completion_tokens": 5})
    status: tuple[int, bytes] | None = None  # answer /chat/completions with this status and body
    raw_stream: list[bytes] | None = None  # send exactly these bytes as the stream
    stall_before_headers: bool = False
    stall_after_events: int | None = None
    drop_after_events: int | None = None
    event_delay_s: float = 0.0
    models_status: int = 200
    tokenize: bool = True
    requests: list[tuple[str, dict[str, str], Any]] = attrs.field(factory=list)
    release: threading.Event = attrs.field(factory=threading.Event)

    def bodies(self, path: str) -> list[Any]:
        """The JSON bodies received on ``path``."""
        return [body for p, _, body in self.requests if p == path]

    def stream_events(self) -> list[bytes]:
        """The SSE events of a normal answer, as a llama.cpp or vLLM server sends them."""
        events: list[dict[str, Any]] = [
            {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
        ]
        events += [{"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]} for t in self.reply]
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        if self.usage is not None:
            events.append({"choices": [], "usage": self.usage})
        out = [
            b"data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", **e}).encode() + b"\n\n"
            for e in events
        ]
        return out + [b"data: [DONE]\n\n"]


class Handler(BaseHTTPRequestHandler):
    """The routes of an OpenAI-compatible server, with scripted faults."""

    protocol_version = "HTTP/1.1"
    timeout = 15
    fake: FakeServer

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def do_GET(self) -> None:
        """``GET /v1/models``."""
        self.fake.requests.append((self.path, dict(self.headers.items()), None))
        if self.path != "/v1/models" or self.fake.models_status != 200:
            self._send(self.fake.models_status if self.path == "/v1/models" else 404, b'{"detail":"Not Found"}')
            return
        data = [{"id": m, "object": "model", "owned_by": "me"} for m in self.fake.models]
        self._send(200, json.dumps({"object": "list", "data": data}).encode())

    def do_POST(self) -> None:
        """``POST /v1/chat/completions`` and ``/extras/tokenize/count``."""
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        self.fake.requests.append((self.path, dict(self.headers.items()), body))
        if self.path == "/extras/tokenize/count" and self.fake.tokenize:
            self._send(200, json.dumps({"count": len(body["input"].split())}).encode())
        elif self.path == "/v1/chat/completions":
            self._chat()
        else:
            self._send(404, b'{"detail":"Not Found"}')

    def _chat(self) -> None:
        fake = self.fake
        if fake.stall_before_headers:
            fake.release.wait(MAX_STALL_S)
            return
        if fake.status is not None:
            self._send(fake.status[0], fake.status[1])
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = fake.raw_stream if fake.raw_stream is not None else fake.stream_events()
        for number, event in enumerate(events):
            if fake.stall_after_events == number:
                fake.release.wait(MAX_STALL_S)
                return
            if fake.drop_after_events == number:
                self.wfile.write(b'40\r\ndata: {"choices"')  # a chunk cut short, then the socket closes
                self.wfile.flush()
                self.close_connection = True
                return
            self._chunk(event)
            if fake.event_delay_s:
                time.sleep(fake.event_delay_s)
        self.wfile.write(b"0\r\n\r\n")


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    """A fresh fake server per test."""
    fake = FakeServer()
    handler = type("BoundHandler", (Handler,), {"fake": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    timer = threading.Timer(LIFETIME_S, server.shutdown)
    timer.daemon = True
    timer.start()
    try:
        yield fake
    finally:
        fake.release.set()
        timer.cancel()
        server.shutdown()
        server.server_close()


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


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening."""
    return free_port()
