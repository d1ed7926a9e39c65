"""A loopback server that speaks Ollama's HTTP API as documented in ollama/ollama docs/api.md.

It answers ``GET /api/tags``, ``POST /api/show``, ``POST /api/generate`` (non-streamed, for
token counts) and ``POST /api/chat`` (NDJSON, one chunk per line with chunked transfer
encoding, as Go's net/http sends a flushed gin stream). Error bodies are
``{"error":"..."}`` with the status Ollama uses. Tests script faults (stalls, garbage lines,
dropped connections) through attributes of :class:`FakeOllama`, and read back every request
the server received. It binds 127.0.0.1 on an ephemeral port, runs in a daemon thread, and
stops at teardown or, at the latest, after ``LIFETIME_S``.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Callable, Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
import pytest

from kb_core import Config
from kb_ollama.model import OllamaModel, make_model

LIFETIME_S = 60.0
MAX_STALL_S = 10.0
MODEL = "llama3.2:latest"
DIGEST = "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72"
CREATED_AT = "2024-09-12T21:17:29.110811Z"
TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def fake_token_count(text: str) -> int:
    """The fake model's tokenizer: words and punctuation marks, plus one BOS token."""
    return 1 + len(TOKEN_RE.findall(text))


def go_json(value: Any) -> bytes:
    """JSON as Go's encoding/json writes it: compact, with <, > and & escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode("utf-8")


@attrs.define
class Received:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@attrs.define
class FakeOllama:
    """The server's state and the faults a test asks for."""

    url: str = ""
    model: str = MODEL
    digest: str = DIGEST
    models: dict[str, dict[str, Any]] = attrs.field(
        factory=lambda: {MODEL: {"digest": DIGEST, "context_length": 131072, "num_ctx": None}}
    )
    reply: list[str] = attrs.field(factory=lambda: ["The", " sky", " is", " blue", "."])
    chat_lines: list[bytes] | None = None  # send exactly these lines instead of a generated stream
    chat_error: tuple[int, str] | None = None  # answer /api/chat with this status and error
    stall_before_headers: bool = False
    stall_after_lines: int | None = None  # send this many lines, then stall
    line_delay_s: float = 0.0
    drop_after_lines: int | None = None  # send this many lines, then cut the connection mid-chunk
    report_counts: bool = True
    requests: list[Received] = attrs.field(factory=list)
    release: threading.Event = attrs.field(factory=threading.Event)

    @staticmethod
    def count(text: str) -> int:
        """What the fake's tokenizer counts for ``text``."""
        return fake_token_count(text)

    def bodies(self, path: str) -> list[Any]:
        """The JSON bodies of the requests received on ``path``."""
        return [r.body for r in self.requests if r.path == path]

    def stall(self) -> None:
        """Block the handler until the test ends (bounded)."""
        self.release.wait(MAX_STALL_S)


class OllamaHandler(BaseHTTPRequestHandler):
    """Ollama's routes, answered byte for byte like its Go server."""

    protocol_version = "HTTP/1.1"
    timeout = 15
    fake: FakeOllama

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Keep test output quiet."""

    # -- plumbing -----------------------------------------------------------------------------

    def _head(self, status: int, content_type: str, extra: list[tuple[str, str]]) -> None:
        reason = self.responses.get(status, ("",))[0]
        lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}", f"Date: {formatdate(usegmt=True)}"]
        lines += [f"{k}: {v}" for k, v in extra]
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    def _json(self, status: int, value: Any) -> None:
        body = go_json(value)
        self._head(status, "application/json; charset=utf-8", [("Content-Length", str(len(body)))])
        self.wfile.write(body)
        self.wfile.flush()

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw else None

    def _record(self, body: Any) -> None:
        self.fake.requests.append(Received(self.command, self.path, dict(self.headers.items()), body))

    # -- routes -------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        """``GET /api/tags``."""
        self._record(None)
        if self.path != "/api/tags":
            self._head(404, "text/plain", [("Content-Length", "18")])
            self.wfile.write(b"404 page not found")
            return
        models = [
            {
                "name": name,
                "model": name,
                "modified_at": "2024-09-12T21:10:02.512374-07:00",
                "size": 2019393189,
                "digest": info["digest"],
                "details": {
                    "parent_model": "",
                    "format": "gguf",
                    "family": "llama",
                    "families": ["llama"],
                    "parameter_size": "3.2B",
                    "quantization_level": "Q4_K_M",
                },
            }
            for name, info in self.fake.models.items()
        ]
        self._json(200, {"models": models})

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        """``POST /api/show``, ``/api/generate`` and ``/api/chat``."""
        body = self._read_body()
        self._record(body)
        name = str((body or {}).get("model", ""))
        info = self.fake.models.get(name) or self.fake.models.get(f"{name}:latest")
        routes = {"/api/show": self._show, "/api/generate": self._generate, "/api/chat": self._chat}
        if self.path not in routes:
            self._head(404, "text/plain", [("Content-Length", "18")])
            self.wfile.write(b"404 page not found")
        elif info is None:
            self._error(404, f"model '{name}' not found")
        else:
            routes[self.path](body, info)

    def _show(self, body: dict[str, Any], info: dict[str, Any]) -> None:
        parameters = 'stop                           "<|start_header_id|>"\nstop                           "<|eot_id|>"'
        if info.get("num_ctx"):
            parameters = f"num_ctx                        {info['num_ctx']}\n" + parameters
        model_info: dict[str, Any] = {"general.architecture": "llama", "general.parameter_count": 3212749888}
        if info.get("context_length"):
            model_info["llama.context_length"] = info["context_length"]
        self._json(
            200,
            {
                "license": "LLAMA 3.2 COMMUNITY LICENSE AGREEMENT",
                "modelfile": f'# Modelfile generated by "ollama show"\nFROM {body["model"]}\n',
                "parameters": parameters,
                "template": "<|start_header_id|>user<|end_header_id|>\n\n{{ .Prompt }}<|eot_id|>",
                "details": {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"]},
                "model_info": model_info,
                "modified_at": "2024-09-12T21:10:02.512374-07:00",
            },
        )

    def _generate(self, body: dict[str, Any], info: dict[str, Any]) -> None:
        options = body.get("options") or {}
        count = min(fake_token_count(body.get("prompt", "")), int(options.get("num_ctx") or 2048))
        answer: dict[str, Any] = {
            "model": body["model"],
            "created_at": CREATED_AT,
            "response": "The",
            "done": True,
            "done_reason": "length",
            "total_duration": 201222000,
            "load_duration": 6683708,
        }
        if self.fake.report_counts:
            answer |= {"prompt_eval_count": count, "prompt_eval_duration": 130079000, "eval_count": 1}
        self._json(200, answer)

    def _chat(self, body: dict[str, Any], info: dict[str, Any]) -> None:
        fake = self.fake
        if fake.chat_error:
            self._error(*fake.chat_error)
            return
        if fake.stall_before_headers:
            fake.stall()
            return
        self._head(200, "application/x-ndjson", [("Transfer-Encoding", "chunked")])
        lines = fake.chat_lines if fake.chat_lines is not None else list(self._generated(body))
        for sent, line in enumerate(lines):
            if sent == fake.stall_after_lines:
                fake.stall()
                return
            if sent == fake.drop_after_lines:
                self.wfile.write(f"{len(line) + 10:x}\r\n".encode() + line[:3])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fake.line_delay_s and fake.release.wait(fake.line_delay_s):
                return
            self._chunk(line)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _generated(self, body: dict[str, Any]) -> Iterator[bytes]:
        """The stream a model answering ``fake.reply`` sends, honouring num_predict and stop."""
        options = body.get("options") or {}
        limit, stops = options.get("num_predict", -1), options.get("stop") or []
        prompt = "".join(m["content"] for m in body["messages"])
        sent, reason = 0, "stop"
        for piece in self.fake.reply:
            if piece.strip() in stops:
                break
            if limit >= 0 and sent >= limit:
                reason = "length"
                break
            message = {"role": "assistant", "content": piece}
            yield go_json({"model": body["model"], "created_at": CREATED_AT, "message": message, "done": False}) + b"\n"
            sent += 1
        final = {
            "model": body["model"],
            "created_at": CREATED_AT,
            "message": {"role": "assistant", "content": ""},
            "done_reason": reason,
            "done": True,
            "total_duration": 4883583458,
            "load_duration": 1334875,
            "prompt_eval_count": fake_token_count(prompt),
            "prompt_eval_duration": 342546000,
            "eval_count": sent,
            "eval_duration": 4535599000,
        }
        yield go_json(final) + b"\n"


@pytest.fixture
def fake_ollama(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOllama]:
    """A running fake Ollama server on 127.0.0.1; ``KB_OLLAMA_URL`` is cleared so it is the target."""
    monkeypatch.delenv("KB_OLLAMA_URL", raising=False)
    fake = FakeOllama()
    handler = type("Handler", (OllamaHandler,), {"fake": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    watchdog = threading.Timer(LIFETIME_S, server.shutdown)
    watchdog.daemon = True
    thread.start()
    watchdog.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        fake.release.set()
        watchdog.cancel()
        server.shutdown()
        server.server_close()
        thread.join(5)


def make_config(**llm: Any) -> Config:
    """A default configuration with ``[models.llm]`` values replaced."""
    config = Config()
    for key, value in llm.items():
        setattr(config.models.llm, key, value)
    return config


@pytest.fixture
def build_model(fake_ollama: FakeOllama) -> Callable[..., OllamaModel]:
    """``build_model(url=..., model=..., **llm)``: the backend, pointed at the fake server by default."""

    def build(url: str | None = None, model: str = MODEL, **llm: Any) -> OllamaModel:
        options = {"url": url or fake_ollama.url, "model": model}
        return make_model(make_config(**llm), options, environ={})

    return build


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def unanswered_port() -> Iterator[int]:
    """A loopback port whose accept queue is full, so new connections hang until they time out."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = int(server.getsockname()[1])
    held: list[socket.socket] = []
    try:
        for _ in range(8):
            probe = socket.socket()
            probe.settimeout(0.2)
            held.append(probe)
            try:
                probe.connect(("127.0.0.1", port))
            except TimeoutError:
                break
        else:
            pytest.skip("this system completes loopback connections beyond the listen backlog")
        yield port
    finally:
        for sock in held:
            sock.close()
        server.close()
