"""HTTP transport to an OpenAI-compatible server (httpx), with three timeouts and one message per failure.

* connect: opening the TCP (and TLS) connection;
* read: how long the server may stay silent (before the first byte, or between two stream lines);
* total: one whole request, a complete generation included (checked between stream lines).

The API key travels only in the ``Authorization`` header; every message built from a server's
answer has it scrubbed, in case the server echoes it back.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from kb_core import ModelUnavailableError
from kb_core.plugin.remote import (
    MAX_BODY_BYTES,
    ApiError,
    ConnectionLost,
    ServerTimeout,
    ServerUnreachable,
    no_answer,
    unreachable_reason,
)
from kb_openai.protocol import MalformedResponse, error_message, parse_object
from kb_openai.settings import KEY_ENV, OPENAI, OpenAISettings, Secret


def scrub(text: str, key: Secret) -> str:
    """``text`` with the API key (if any) replaced by ``***``."""
    return text.replace(key.reveal(), "***") if key else text


class Unauthorized(ModelUnavailableError):
    """The server refused the API key (or wants one): HTTP 401 or 403."""

    def __init__(self, url: str, status: int, server_message: str, has_key: bool) -> None:
        what = "refused the API key" if has_key else "wants an API key"
        super().__init__(
            f"{OPENAI.at(url)} {what} (HTTP {status}): {server_message}",
            hint=f"set the key in the environment variable {KEY_ENV} (or the one [backends.openai] api_key_env names)",
        )
        self.status = status


class OpenAIClient:
    """JSON requests and SSE streams to one server; one pooled httpx client."""

    def __init__(self, settings: OpenAISettings, transport: httpx.BaseTransport | None = None) -> None:
        self.settings = settings
        t = settings.timeouts
        headers = {"User-Agent": "kb-openai", "Accept": "application/json, text/event-stream"}
        if settings.api_key:
            headers["Authorization"] = f"Bearer {settings.api_key.reveal()}"
        self.http = httpx.Client(
            timeout=httpx.Timeout(
                connect=t.connect_s or None, read=t.read_s or None, write=t.read_s or None, pool=t.connect_s or None
            ),
            headers=headers,
            trust_env=False,  # only the configured server is ever contacted, never a proxy from the environment
            transport=transport,
        )

    def url(self, endpoint: str, root: bool = False) -> str:
        """The full URL of ``endpoint`` under the base URL (or the server root for llama.cpp's extras)."""
        return f"{self.settings.root_url if root else self.settings.base_url}{endpoint}"

    @contextmanager
    def _translated(self, endpoint: str, started: bool = False) -> Iterator[None]:
        """Turn httpx's exceptions into the plugin's one-line errors."""
        base, t = self.settings.base_url, self.settings.timeouts
        try:
            yield
        except httpx.ConnectTimeout:
            raise ServerTimeout(OPENAI, "connect", t.connect_s, base, endpoint) from None
        except (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout):
            raise ServerTimeout(OPENAI, "read", t.read_s, base, endpoint) from None
        except httpx.ConnectError as exc:
            raise ServerUnreachable(OPENAI, base, unreachable_reason(exc, self.settings.host)) from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            if started:
                raise ConnectionLost(OPENAI, base, endpoint, "the server closed it mid-answer") from None
            raise MalformedResponse(no_answer(endpoint, exc)) from None

    def _check_status(self, response: httpx.Response, endpoint: str) -> None:
        if response.status_code == 200:
            return
        raw = response.read()[:MAX_BODY_BYTES]
        message = scrub(error_message(raw), self.settings.api_key)
        if response.status_code in (401, 403):
            raise Unauthorized(self.settings.base_url, response.status_code, message, bool(self.settings.api_key))
        raise ApiError(OPENAI, self.settings.base_url, endpoint, response.status_code, message)

    def get_json(self, endpoint: str, root: bool = False) -> dict[str, Any]:
        """``GET endpoint`` and parse its JSON object answer."""
        with self._translated(endpoint):
            response = self.http.get(self.url(endpoint, root))
            self._check_status(response, endpoint)
            return parse_object(response.content, endpoint)

    def post_json(self, endpoint: str, body: dict[str, Any], root: bool = False) -> dict[str, Any]:
        """``POST endpoint`` with a JSON body and parse its JSON object answer."""
        with self._translated(endpoint):
            response = self.http.post(self.url(endpoint, root), json=body)
            self._check_status(response, endpoint)
            return parse_object(response.content, endpoint)

    def post_stream(self, endpoint: str, body: dict[str, Any]) -> Generator[str, None, None]:
        """``POST endpoint`` and yield the lines of its event stream as they arrive.

        Errors before the answer starts (refused, timeouts, HTTP errors) raise on the first
        ``next``; a cut connection later raises ConnectionLost; the total timeout is checked
        between lines.
        """
        endpoint_url = self.url(endpoint)
        total, deadline = self.settings.timeouts.total_s, self.settings.timeouts.deadline()
        with self._translated(endpoint), self.http.stream("POST", endpoint_url, json=body) as response:
            self._check_status(response, endpoint)
            with self._translated(endpoint, started=True):
                for line in response.iter_lines():
                    if deadline is not None and time.monotonic() > deadline:
                        raise ServerTimeout(OPENAI, "total", total, self.settings.base_url, endpoint)
                    yield line

    def close(self) -> None:
        """Close pooled connections."""
        self.http.close()
