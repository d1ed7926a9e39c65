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

from kb_core import KbError, ModelUnavailableError
from kb_openai.protocol import MalformedResponse, error_message, parse_object
from kb_openai.settings import KEY_ENV, URL_ENV, OpenAISettings, Secret

MAX_BODY_BYTES = 64 * 1024 * 1024
_CONFIG_KEYS = {"connect": "connect_timeout_s", "read": "read_timeout_s", "total": "total_timeout_s"}


def scrub(text: str, key: Secret) -> str:
    """``text`` with the API key (if any) replaced by ``***``."""
    return text.replace(key.reveal(), "***") if key else text


class ServerUnreachable(ModelUnavailableError):
    """No server answers at the configured URL."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(
            f"cannot reach the OpenAI-compatible server at {url}: {reason}",
            hint=f"start the server, or set {URL_ENV} or [backends.openai] url to where it runs",
        )


class ServerTimeout(KbError):
    """A connect, read or total timeout fired: a slow server is reported, never hidden."""

    def __init__(self, which: str, seconds: float, url: str, endpoint: str) -> None:
        key = _CONFIG_KEYS[which]
        doing = {
            "connect": f"connecting to {url}",
            "read": f"the server at {url} sent nothing on {endpoint}",
            "total": f"the server at {url} did not finish {endpoint}",
        }[which]
        advice = "check that the server runs at that URL, or" if which == "connect" else "if the model is just slow,"
        super().__init__(
            f"{which} timeout: {doing} within {seconds:g} s",
            hint=f"{advice} raise [models.llm] {key} (env KB_MODELS__LLM__{key.upper()})",
        )
        self.which = which


class Unauthorized(ModelUnavailableError):
    """The server refused the API key (or wants one): HTTP 401 or 403."""

    def __init__(self, url: str, status: int, server_message: str, has_key: bool) -> None:
        what = "refused the API key" if has_key else "wants an API key"
        super().__init__(
            f"the server at {url} {what} (HTTP {status}): {server_message}",
            hint=f"set the key in the environment variable {KEY_ENV} (or the one [backends.openai] api_key_env names)",
        )
        self.status = status


class ApiError(KbError):
    """The server answered with another HTTP error status."""

    def __init__(self, url: str, endpoint: str, status: int, server_message: str) -> None:
        super().__init__(f"the server at {url} refused {endpoint} (HTTP {status}): {server_message}")
        self.status = status
        self.endpoint = endpoint
        self.server_message = server_message


class ConnectionLost(KbError):
    """The connection broke after the server had started answering."""

    def __init__(self, url: str, endpoint: str, detail: str) -> None:
        super().__init__(
            f"the connection to {url} broke during {endpoint}: {detail}",
            hint="check the server's log (the model may have crashed or run out of memory)",
        )


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
            raise ServerTimeout("connect", t.connect_s, base, endpoint) from None
        except (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout):
            raise ServerTimeout("read", t.read_s, base, endpoint) from None
        except httpx.ConnectError as exc:
            raise ServerUnreachable(base, _reason(exc)) from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            if started:
                raise ConnectionLost(base, endpoint, "the server closed it mid-answer") from None
            raise MalformedResponse(f"{endpoint} got no HTTP answer ({type(exc).__name__})") from None

    def _check_status(self, response: httpx.Response, endpoint: str) -> None:
        if response.status_code == 200:
            return
        raw = response.read()[:MAX_BODY_BYTES]
        message = scrub(error_message(raw), self.settings.api_key)
        if response.status_code in (401, 403):
            raise Unauthorized(self.settings.base_url, response.status_code, message, bool(self.settings.api_key))
        raise ApiError(self.settings.base_url, endpoint, response.status_code, message)

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
        total = self.settings.timeouts.total_s
        deadline = time.monotonic() + total if total > 0 else None
        with self._translated(endpoint), self.http.stream("POST", endpoint_url, json=body) as response:
            self._check_status(response, endpoint)
            with self._translated(endpoint, started=True):
                for line in response.iter_lines():
                    if deadline is not None and time.monotonic() > deadline:
                        raise ServerTimeout("total", total, self.settings.base_url, endpoint)
                    yield line

    def close(self) -> None:
        """Close pooled connections."""
        self.http.close()


def _reason(exc: httpx.ConnectError) -> str:
    text = str(exc).lower()
    if "refused" in text:
        return "connection refused"
    if "name or service" in text or "nodename" in text or "resolve" in text or "getaddrinfo" in text:
        return "cannot resolve the host name"
    return str(exc) or type(exc).__name__
