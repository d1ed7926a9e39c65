"""A fake chat server for language-model backends that talk HTTP: Ollama's API and the OpenAI-compatible one.

:func:`serve_chat` runs a real HTTP server on a free loopback port in a daemon thread (stopped when
the block ends or, at the latest, after ``LIFETIME_S``) that answers both protocols, byte for byte
like the servers it stands for (chunked streams, their error bodies, Go's JSON escapes for Ollama):

=============================  ==================================================================
``GET /api/tags``              Ollama: the pulled :attr:`FakeChatServer.models`
``POST /api/show``             Ollama: a model's facts (``context_length`` in ``model_info``,
                               ``num_ctx`` in ``parameters``)
``POST /api/generate``         Ollama, not streamed: ``prompt_eval_count`` of the prompt
                               (:meth:`FakeChatServer.count`; none when ``report_counts`` is off)
``POST /api/chat``             Ollama: the reply as NDJSON lines, or one object with ``"stream": false``
``GET /v1/models``             OpenAI: the served models (``models_status`` other than 200 refuses)
``POST /v1/chat/completions``  OpenAI: the reply as Server-Sent Events closed by ``usage`` and
                               ``[DONE]``, or one ``chat.completion`` when ``stream`` is not true
``POST /extras/tokenize/count``  llama-cpp-python's count of whitespace-separated words (``tokenize``)
=============================  ==================================================================

A chat answers :attr:`FakeChatServer.reply` piece by piece, honouring the request's token limit
(``num_predict``, ``max_tokens``: finish reason ``length``) and stop strings. A test scripts
faults through the server's attributes (an error before the stream, exactly these stream bytes,
a stall before the headers or after n pieces, a connection cut mid-chunk, a delay between pieces)
and reads back every request it received (:attr:`FakeChatServer.requests`)::

    def test_a_cut_stream_is_an_error(fake_chat_server):  # the kit's pytest fixture
        fake_chat_server.drop_after = 2
        model = make_model(..., {"url": fake_chat_server.openai_url})
        ...
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

#: Seconds a server lives at most (a test that never ends its block does not leave it running).
LIFETIME_S = 60.0
#: Seconds a stall holds a request at most (a test's end releases it sooner).
MAX_STALL_S = 10.0
DIGEST = "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72"
CREATED_AT = "2024-09-12T21:17:29.110811Z"
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def _go_json(value: Any) -> bytes:
    """JSON as Go's encoding/json writes it (Ollama): compact, with <, > and & escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode("utf-8")


def _json(value: Any) -> bytes:
    """JSON as Python's servers write it (llama-cpp-python, vLLM)."""
    return json.dumps(value).encode()


@attrs.define
class Received:
    """One request as the server received it (``body``: the parsed JSON, or None)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def _facts() -> dict[str, Any]:
    return {"digest": DIGEST, "context_length": 131072, "num_ctx": None}


@attrs.define
class FakeChatServer:
    """What the fake serves and answers, the faults a test asks for, and what it received."""

    #: The server's root, ``http://127.0.0.1:<port>`` (an Ollama backend's URL), set when it starts.
    url: str = ""
    #: The model it serves first, and its digest.
    model: str = "fake-model"
    digest: str = DIGEST
    #: Served (pulled) models by name: ``digest``, ``context_length`` (model_info), ``num_ctx`` (parameters).
    models: dict[str, dict[str, Any]] = attrs.field(
        default=attrs.Factory(lambda self: {self.model: _facts() | {"digest": self.digest}}, takes_self=True)
    )
    #: The reply of every chat, one piece per stream line or event.
    reply: list[str] = attrs.field(factory=lambda: ["The", " sky", " is", " blue", "."])
    #: OpenAI: the ``usage`` a chat ends with (None: no usage event).
    usage: dict[str, Any] | None = attrs.field(factory=lambda: {"prompt_tokens": 12, "completion_tokens": 5})
    #: Ollama: ``/api/generate`` reports ``prompt_eval_count``.
    report_counts: bool = True
    #: llama.cpp: ``/extras/tokenize/count`` exists.
    tokenize: bool = True
    #: OpenAI: the status ``GET /v1/models`` answers (401: a key refused, 404: a server without it).
    models_status: int = 200
    #: Answer a chat with this status and error: a message (in the protocol's error body) or the exact body.
    chat_error: tuple[int, str | bytes] | None = None
    #: Stream exactly these pieces (lines, events), one HTTP chunk each, instead of the reply.
    stream: list[bytes] | None = None
    #: Hold a chat before its headers, or after this many pieces, until the test ends.
    stall_before_headers: bool = False
    stall_after: int | None = None
    #: Cut the connection in the middle of piece n.
    drop_after: int | None = None
    #: Seconds between two pieces of a stream.
    delay_s: float = 0.0
    requests: list[Received] = attrs.field(factory=list)
    release: threading.Event = attrs.field(factory=threading.Event)

    @property
    def openai_url(self) -> str:
        """The base URL of the OpenAI-compatible API (an OpenAI backend's URL)."""
        return f"{self.url}/v1"

    @staticmethod
    def count(text: str) -> int:
        """Ollama's token count of ``text``: words and punctuation marks, plus one BOS token."""
        return 1 + len(_TOKEN.findall(text))

    def bodies(self, path: str) -> list[Any]:
        """The JSON bodies of the requests received on ``path``."""
        return [r.body for r in self.requests if r.path == path]

    def stall(self) -> None:
        """Hold the request until the test ends (at most ``MAX_STALL_S``)."""
        self.release.wait(MAX_STALL_S)

    def answer(self, limit: int | None, stops: list[str]) -> tuple[list[str], str]:
        """The pieces of the reply a request gets and its finish reason (``length`` when the limit cut it)."""
        pieces: list[str] = []
        for piece in self.reply:
            if piece.strip() in stops:
                break
            if limit is not None and 0 <= limit <= len(pieces):
                return pieces, "length"
            pieces.append(piece)
        return pieces, "stop"


class _Handler(BaseHTTPRequestHandler):
    """The routes of both protocols (see the module docstring)."""

    protocol_version = "HTTP/1.1"
    timeout = 15
    fake: FakeChatServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Keep test output quiet."""

    # -- plumbing -----------------------------------------------------------------------------

    def _head(self, status: int, content_type: str, extra: list[tuple[str, str]]) -> None:
        reason = self.responses.get(status, ("",))[0]
        lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}", f"Date: {formatdate(usegmt=True)}"]
        lines += [f"{k}: {v}" for k, v in extra]
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self._head(status, content_type, [("Content-Length", str(len(body)))])
        self.wfile.write(body)
        self.wfile.flush()

    def _not_found(self) -> None:
        if self.path.startswith("/api/"):  # Go's router
            self._send(404, b"404 page not found", "text/plain")
        else:  # FastAPI's (llama-cpp-python, vLLM)
            self._send(404, b'{"detail":"Not Found"}')

    def _stream(self, content_type: str, pieces: list[bytes]) -> None:
        """Send ``pieces`` as a chunked stream, with the faults the test asked for."""
        fake = self.fake
        self._head(200, content_type, [("Transfer-Encoding", "chunked")])
        for number, piece in enumerate(pieces):
            if number == fake.stall_after:
                fake.stall()
                return
            if number == fake.drop_after:  # a chunk cut short, then the socket closes
                self.wfile.write(f"{len(piece) + 10:x}\r\n".encode() + piece[:3])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if number and fake.delay_s and fake.release.wait(fake.delay_s):
                return
            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chat_fault(self, error_body: Callable[[str], bytes]) -> bool:
        """Answer with the scripted error or stall before the headers; True when it did."""
        fake = self.fake
        if fake.chat_error is not None:
            status, error = fake.chat_error
            body = error if isinstance(error, bytes) else error_body(error)
            self._send(status, body, "application/json; charset=utf-8")
            return True
        if fake.stall_before_headers:
            fake.stall()
            return True
        return False

    # -- routes -------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        """``GET /api/tags`` and ``/v1/models``."""
        self.fake.requests.append(Received(self.command, self.path, dict(self.headers.items()), None))
        if self.path == "/api/tags":
            self._tags()
        elif self.path == "/v1/models" and self.fake.models_status != 200:
            status = self.fake.models_status
            self._send(status, _json({"detail": HTTPStatus(status).phrase}))
        elif self.path == "/v1/models":
            data = [{"id": m, "object": "model", "owned_by": "me"} for m in self.fake.models]
            self._send(200, _json({"object": "list", "data": data}))
        else:
            self._not_found()

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        """Ollama's ``/api/show``, ``/api/generate``, ``/api/chat``; OpenAI's chat and llama.cpp's token count."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = json.loads(raw) if raw else None
        self.fake.requests.append(Received(self.command, self.path, dict(self.headers.items()), body))
        ollama = {"/api/show": self._show, "/api/generate": self._generate, "/api/chat": self._ollama_chat}
        if self.path in ollama:
            name = str((body or {}).get("model", ""))
            info = self.fake.models.get(name) or self.fake.models.get(f"{name}:latest")
            if info is None:
                self._send(404, _go_json({"error": f"model '{name}' not found"}), "application/json; charset=utf-8")
            else:
                ollama[self.path](body, info)
        elif self.path == "/v1/chat/completions":
            self._openai_chat(body)
        elif self.path == "/extras/tokenize/count" and self.fake.tokenize:
            self._send(200, _json({"count": len(body["input"].split())}))
        else:
            self._not_found()

    # -- Ollama -------------------------------------------------------------------------------

    def _ollama_json(self, value: Any) -> None:
        self._send(200, _go_json(value), "application/json; charset=utf-8")

    def _tags(self) -> None:
        details = {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"]}
        details |= {"parameter_size": "3.2B", "quantization_level": "Q4_K_M"}
        models = [
            {
                "name": name,
                "model": name,
                "modified_at": "2024-09-12T21:10:02.512374-07:00",
                "size": 2019393189,
                "digest": info.get("digest", DIGEST),
                "details": details,
            }
            for name, info in self.fake.models.items()
        ]
        self._ollama_json({"models": models})

    def _show(self, body: dict[str, Any], info: dict[str, Any]) -> None:
        parameters = 'stop                           "<|start_header_id|>"\nstop                           "<|eot_id|>"'
        if info.get("num_ctx"):
            parameters = f"num_ctx                        {info['num_ctx']}\n" + parameters
        model_info: dict[str, Any] = {"general.architecture": "llama", "general.parameter_count": 3212749888}
        if info.get("context_length"):
            model_info["llama.context_length"] = info["context_length"]
        self._ollama_json(
            {
                "license": "LLAMA 3.2 COMMUNITY LICENSE AGREEMENT",
                "modelfile": f'# Modelfile generated by "ollama show"\nFROM {body["model"]}\n',
                "parameters": parameters,
                "template": "<|start_header_id|>user<|end_header_id|>\n\n{{ .Prompt }}<|eot_id|>",
                "details": {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"]},
                "model_info": model_info,
                "modified_at": "2024-09-12T21:10:02.512374-07:00",
            }
        )

    def _generate(self, body: dict[str, Any], info: dict[str, Any]) -> None:
        options = body.get("options") or {}
        count = min(self.fake.count(body.get("prompt", "")), int(options.get("num_ctx") or 2048))
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
        self._ollama_json(answer)

    def _ollama_chat(self, body: dict[str, Any], info: dict[str, Any]) -> None:
        if self._chat_fault(lambda message: _go_json({"error": message})):
            return
        options = body.get("options") or {}
        pieces, reason = self.fake.answer(options.get("num_predict"), options.get("stop") or [])
        prompt = "".join(m["content"] for m in body["messages"])
        final: dict[str, Any] = {
            "model": body["model"],
            "created_at": CREATED_AT,
            "message": {"role": "assistant", "content": ""},
            "done_reason": reason,
            "done": True,
            "total_duration": 4883583458,
            "load_duration": 1334875,
            "prompt_eval_count": self.fake.count(prompt),
            "prompt_eval_duration": 342546000,
            "eval_count": len(pieces),
            "eval_duration": 4535599000,
        }
        if body.get("stream") is False:
            final["message"]["content"] = "".join(pieces)
            self._ollama_json(final)
            return
        lines = self.fake.stream
        if lines is None:
            head = {"model": body["model"], "created_at": CREATED_AT}
            lines = [
                _go_json(head | {"message": {"role": "assistant", "content": p}, "done": False}) + b"\n" for p in pieces
            ]
            lines.append(_go_json(final) + b"\n")
        self._stream("application/x-ndjson", lines)

    # -- OpenAI -------------------------------------------------------------------------------

    def _openai_chat(self, body: dict[str, Any]) -> None:
        if self._chat_fault(lambda message: _json({"error": {"message": message, "type": "server_error"}})):
            return
        stop = body.get("stop") or []
        pieces, reason = self.fake.answer(body.get("max_tokens"), [stop] if isinstance(stop, str) else stop)
        if body.get("stream") is not True:
            choice = {"index": 0, "message": {"role": "assistant", "content": "".join(pieces)}, "finish_reason": reason}
            completion = {"id": "c1", "object": "chat.completion", "model": body.get("model"), "choices": [choice]}
            self._send(200, _json(completion | {"usage": self.fake.usage}))
            return
        events = self.fake.stream
        if events is None:
            deltas = [{"role": "assistant"}] + [{"content": p} for p in pieces] + [{}]
            reasons = [None] * (len(deltas) - 1) + [reason]
            chunks: list[dict[str, Any]] = [
                {"choices": [{"index": 0, "delta": d, "finish_reason": r}]} for d, r in zip(deltas, reasons)
            ]
            if self.fake.usage is not None:
                chunks.append({"choices": [], "usage": self.fake.usage})
            events = [b"data: " + _json({"id": "c1", "object": "chat.completion.chunk"} | c) + b"\n\n" for c in chunks]
            events.append(b"data: [DONE]\n\n")
        self._stream("text/event-stream", events)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up (a test's timeout, a stream it stopped reading) is expected: stay quiet."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve_chat(fake: FakeChatServer | None = None, lifetime_s: float = LIFETIME_S) -> Iterator[FakeChatServer]:
    """Serve ``fake`` (a new :class:`FakeChatServer` by default) on a free loopback port for the block
    (``lifetime_s`` at most: a script that installs packages meanwhile gives it longer)."""
    fake = fake if fake is not None else FakeChatServer()
    server = _Server(("127.0.0.1", 0), type("Handler", (_Handler,), {"fake": fake}))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    watchdog = threading.Timer(lifetime_s, server.shutdown)
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
