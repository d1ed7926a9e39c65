"""HTTP transport to an Ollama server (standard library only), with three timeouts.

* connect: how long opening the TCP connection may take;
* read: how long the server may stay silent (waiting for the first byte, or between lines);
* total: how long one whole request, a complete generation included, may take.

Each is armed on the socket before every read, so a timeout always names the limit that
fired, its value and the config key that raises it. A value of 0 disables a limit.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.parse
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from kb_core import ConfigError
from kb_core.plugin.remote import (
    MAX_BODY_BYTES,
    ApiError,
    ConnectionLost,
    ServerTimeout,
    ServerUnreachable,
    Timeouts,
    no_answer,
    unreachable_reason,
)
from kb_ollama.protocol import MAX_LINE_BYTES, OLLAMA, MalformedResponse, error_message, parse_object

DEFAULT_PORT = 11434
#: Two errors of kb_core.plugin.remote by the names this plugin first gave them.
OllamaApiError = ApiError
OllamaTimeout = ServerTimeout


@attrs.frozen
class BaseUrl:
    """Where the Ollama server listens: ``http://host:port`` with an optional path prefix."""

    scheme: str
    host: str
    port: int
    prefix: str = ""

    @classmethod
    def parse(cls, url: str) -> BaseUrl:
        """Parse ``http://127.0.0.1:11434`` (or ``host:port``, taken as http); ConfigError if invalid."""
        text = url.strip()
        if "://" not in text:
            text = f"http://{text}"
            default_port = DEFAULT_PORT
        else:
            default_port = 443 if text.lower().startswith("https://") else 80
        try:
            parts = urllib.parse.urlsplit(text)
            port = parts.port or default_port
        except ValueError:
            parts, port = None, 0
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"invalid Ollama URL {url!r}",
                hint=f"set {OLLAMA.url_setting} like http://127.0.0.1:11434",
            )
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.prefix}"


class _Exchange:
    """One request on its own connection; arms the read or total timeout before every read."""

    def __init__(self, url: BaseUrl, timeouts: Timeouts, endpoint: str) -> None:
        self.url = url
        self.timeouts = timeouts
        self.endpoint = endpoint
        self.deadline = timeouts.deadline()
        self.limit = "read"
        self.conn: http.client.HTTPConnection | None = None
        self.sock: socket.socket | None = None

    def connect(self) -> None:
        cls = http.client.HTTPSConnection if self.url.scheme == "https" else http.client.HTTPConnection
        self.conn = cls(self.url.host, self.url.port, timeout=self.timeouts.connect_s or None)
        try:
            self.conn.connect()
        except TimeoutError:
            raise ServerTimeout(OLLAMA, "connect", self.timeouts.connect_s, self.url, self.endpoint) from None
        except OSError as exc:
            raise ServerUnreachable(OLLAMA, self.url, unreachable_reason(exc, self.url.host)) from None
        self.sock = self.conn.sock

    def arm(self) -> None:
        """Set the socket timeout to the read timeout, or to what is left of the total if less."""
        read = self.timeouts.read_s if self.timeouts.read_s > 0 else None
        timeout, self.limit = read, "read"
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise self.timed_out("total")
            if read is None or left < read:
                timeout, self.limit = left, "total"
        assert self.sock is not None
        self.sock.settimeout(timeout)

    def timed_out(self, which: str | None = None) -> ServerTimeout:
        which = which or self.limit
        seconds = self.timeouts.total_s if which == "total" else self.timeouts.read_s
        return ServerTimeout(OLLAMA, which, seconds, self.url, self.endpoint)

    def send(self, method: str, body: dict[str, Any] | None) -> http.client.HTTPResponse:
        assert self.conn is not None
        payload = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Accept": "application/json, application/x-ndjson", "User-Agent": "kb-ollama"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        path = f"{self.url.prefix}{self.endpoint}"
        try:
            self.arm()
            self.conn.request(method, path, body=payload, headers=headers)
            response = self.conn.getresponse()
        except TimeoutError:
            raise self.timed_out() from None
        except (http.client.HTTPException, ConnectionError) as exc:
            raise MalformedResponse(no_answer(self.endpoint, exc)) from None
        if response.status != 200:
            message = error_message(self.read_all(response))
            raise ApiError(OLLAMA, self.url, self.endpoint, response.status, message)
        return response

    def read_all(self, response: http.client.HTTPResponse) -> bytes:
        """The whole body, re-arming the timeouts between reads."""
        parts: list[bytes] = []
        size = 0
        while True:
            chunk = self._read(lambda: response.read1(65536))
            if not chunk:
                return b"".join(parts)
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise MalformedResponse(f"the answer of {self.endpoint} is larger than {MAX_BODY_BYTES} bytes")
            parts.append(chunk)

    def read_line(self, response: http.client.HTTPResponse) -> bytes:
        """The next line of the body (b"" at its end)."""
        line = self._read(lambda: response.readline(MAX_LINE_BYTES + 1))
        if len(line) > MAX_LINE_BYTES:
            raise MalformedResponse(f"a line of {self.endpoint} is longer than {MAX_LINE_BYTES} bytes")
        return line

    def _read(self, read: Any) -> bytes:
        self.arm()
        try:
            return bytes(read())
        except TimeoutError:
            raise self.timed_out() from None
        except http.client.IncompleteRead:
            raise ConnectionLost(OLLAMA, self.url, self.endpoint, "the server closed it mid-answer") from None
        except (http.client.HTTPException, ConnectionError) as exc:
            detail = f"{type(exc).__name__} {exc}".strip()
            raise ConnectionLost(OLLAMA, self.url, self.endpoint, detail) from None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


class OllamaClient:
    """JSON and NDJSON requests to one Ollama server."""

    def __init__(self, url: BaseUrl, timeouts: Timeouts) -> None:
        self.url = url
        self.timeouts = timeouts

    @contextmanager
    def _exchange(self, method: str, endpoint: str, body: dict[str, Any] | None) -> Iterator[tuple[_Exchange, Any]]:
        exchange = _Exchange(self.url, self.timeouts, endpoint)
        try:
            exchange.connect()
            yield exchange, exchange.send(method, body)
        finally:
            exchange.close()

    def get_json(self, endpoint: str) -> dict[str, Any]:
        """``GET endpoint`` and parse its JSON object answer."""
        with self._exchange("GET", endpoint, None) as (exchange, response):
            return parse_object(exchange.read_all(response), endpoint)

    def post_json(self, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST endpoint`` with a JSON body and parse its JSON object answer."""
        with self._exchange("POST", endpoint, body) as (exchange, response):
            return parse_object(exchange.read_all(response), endpoint)

    def post_lines(self, endpoint: str, body: dict[str, Any]) -> Generator[bytes, None, None]:
        """``POST endpoint`` and yield the non-blank lines of its NDJSON stream as they arrive."""
        with self._exchange("POST", endpoint, body) as (exchange, response):
            while line := exchange.read_line(response):
                if line.strip():
                    yield line
