"""What a language-model backend that talks to a server over HTTP needs (public: ``kb_core.plugin.remote``).

A backend describes its server once, as a :class:`RemoteServer`, and builds every message about
it from there, so that all such backends say the same thing the same way: one line, with a hint
that names the setting to change. The transport (``http.client``, httpx, ...) stays the
backend's; this module gives it

* the errors: :class:`ServerUnreachable`, :class:`ServerTimeout`, :class:`ApiError`,
  :class:`ConnectionLost` and :class:`MalformedResponse` (subclassed once per backend);
* :func:`unreachable_reason`, the few words that say why a connection could not be opened
  (refused, unknown host, TLS, or the system's own words);
* :class:`Timeouts`, the three limits of ``[models.llm]``, and :data:`MAX_BODY_BYTES`;
* helpers for the server's answers: :func:`error_body_text`, :func:`one_line`, :func:`preview`,
  :func:`count_field`, :func:`chat_messages`, :func:`no_answer`, :func:`first_or_done` (the first
  event of a stream, or the ``Done`` that ends it); and :func:`upper_bound_tokens`, the token count
  to fall back on when the server cannot count.

A backend for an imaginary "Acme" server::

    from kb_core.plugin.remote import RemoteServer, ServerTimeout, ServerUnreachable, Timeouts, unreachable_reason

    ACME = RemoteServer(
        backend="acme",                  # [backends.acme], kb --backend acme
        name="the Acme server",          # cannot reach the Acme server at ...
        speaker="Acme",                  # Acme at http://... sent nothing on /generate ...
        url_env="KB_ACME_URL",
        start="start it with 'acme serve'",
        expected="an Acme server",
    )
    timeouts = Timeouts.of(config.models.llm)
    try:
        conn.connect()
    except TimeoutError:
        raise ServerTimeout(ACME, "connect", timeouts.connect_s, url, "/generate") from None
    except OSError as exc:
        raise ServerUnreachable(ACME, url, unreachable_reason(exc, host)) from None
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs

from kb_core.errors import KbError, ModelUnavailableError
from kb_core.types import Done, GenerateRequest

if TYPE_CHECKING:
    from kb_core.config import LlmConfig

__all__ = [
    "MAX_BODY_BYTES",
    "SERVER_URL_PATTERN",
    "SERVER_URL_SHAPE",
    "ApiError",
    "ConnectionLost",
    "MalformedResponse",
    "RemoteServer",
    "ServerTimeout",
    "ServerUnreachable",
    "Timeouts",
    "chat_messages",
    "count_field",
    "error_body_text",
    "first_or_done",
    "no_answer",
    "one_line",
    "preview",
    "unreachable_reason",
    "upper_bound_tokens",
]

#: The most of one answer body a backend reads (an error body is cut there).
MAX_BODY_BYTES = 64 * 1024 * 1024
_HOST = (
    r"(?:\[[0-9A-Fa-f:.]+\]|\d{1,3}(?:\.\d{1,3}){3}"  # [IPv6], IPv4
    r"|(?=[A-Za-z0-9.-]*[A-Za-z])[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)"  # a name with a letter
)
#: A server's address as a ``url`` option takes it: ``http(s)://`` optional, a host (a name with a letter, an IPv4
#: address or a bracketed IPv6 one), an optional port and path (``5`` is no server: it would be taken as a host).
SERVER_URL_PATTERN = rf"(?:https?://)?{_HOST}(?::\d{{1,5}})?(?:/\S*)?"
#: :data:`SERVER_URL_PATTERN` in words, for the option's message.
SERVER_URL_SHAPE = "a server's address: [http(s)://]host[:port][/path], the host a name, an IPv4 or a [IPv6] address"
#: The ``[models.llm]`` key of each timeout.
TIMEOUT_KEYS = {"connect": "connect_timeout_s", "read": "read_timeout_s", "total": "total_timeout_s"}
_RESOLVE_WORDS = ("name or service", "nodename", "resolve", "getaddrinfo")
_T = TypeVar("_T")


@attrs.frozen
class Timeouts:
    """Seconds allowed to connect, to wait for the next bytes, and for a whole request (0: no limit).

    ``Timeouts.of(config.models.llm)`` takes them from ``[models.llm]``.
    """

    connect_s: float
    read_s: float
    total_s: float

    @classmethod
    def of(cls, llm: LlmConfig) -> Timeouts:
        """The timeouts of ``[models.llm]`` (``connect_timeout_s``, ``read_timeout_s``, ``total_timeout_s``)."""
        return cls(llm.connect_timeout_s, llm.read_timeout_s, llm.total_timeout_s)

    def deadline(self) -> float | None:
        """When (``time.monotonic()``) a request started now must be over, or None without a total limit."""
        return time.monotonic() + self.total_s if self.total_s > 0 else None


@attrs.frozen
class RemoteServer:
    """How one kind of server is named in messages, and how its URL is set.

    Ollama's: ``RemoteServer("ollama", "the Ollama server", "Ollama", "KB_OLLAMA_URL",
    "start it with 'ollama serve'", "an Ollama server")``.
    """

    backend: str  #: the backend's name: ``[backends.<backend>]``, ``kb --backend <backend>``
    name: str  #: the server, as the subject of a sentence: "the Ollama server"
    speaker: str  #: who answers, before " at <url>": "Ollama", "the server"
    url_env: str  #: the environment variable that overrides the URL: "KB_OLLAMA_URL"
    start: str  #: how to start the server: "start it with 'ollama serve'"
    expected: str  #: what the URL should point at: "an Ollama server", "the server's /v1 API"

    def configured_url(self, options: Mapping[str, object], environ: Mapping[str, str], default: str) -> str:
        """The URL to use: the environment variable, else ``url`` in ``[backends.<backend>]``, else ``default``."""
        return environ.get(self.url_env) or str(options.get("url") or default)

    def at(self, url: object) -> str:
        """``Ollama at http://127.0.0.1:11434``: who answered, and where."""
        return f"{self.speaker} at {url}"

    @property
    def url_setting(self) -> str:
        """``[backends.ollama] url (or KB_OLLAMA_URL)``: where the URL is set."""
        return f"[backends.{self.backend}] url (or {self.url_env})"

    def reported(self, error: str) -> str:
        """The closing ``Done`` error when the server reports an error in the middle of a stream."""
        return f"{self.speaker} reported an error mid-stream: {error}"

    def no_grammar(self) -> KbError:
        """The error for a request with a grammar, which such a server cannot follow."""
        return KbError(
            f"the {self.backend} backend cannot constrain output with a grammar",
            hint="set [rag] constrained = false, or use the llamacpp backend",
        )


class ServerUnreachable(ModelUnavailableError):
    """No server answers at the configured URL.

    ``ServerUnreachable(OLLAMA, url, "connection refused")``: "cannot reach the Ollama server at
    http://127.0.0.1:11434: connection refused (start it with 'ollama serve', or set ...)".
    """

    def __init__(self, server: RemoteServer, url: object, reason: str) -> None:
        super().__init__(
            f"cannot reach {server.name} at {url}: {reason}",
            hint=f"{server.start}, or set {server.url_env} or [backends.{server.backend}] url to where it runs",
        )


class ServerTimeout(KbError):
    """A connect, read or total timeout fired: a slow server is reported, never hidden.

    ``which`` is ``"connect"``, ``"read"`` or ``"total"``; the message names the limit, its value
    and the ``[models.llm]`` key (and environment variable) that raises it.
    """

    def __init__(self, server: RemoteServer, which: str, seconds: float, url: object, endpoint: str) -> None:
        key = TIMEOUT_KEYS[which]
        at = server.at(url)
        doing = {
            "connect": f"connecting to {at}",
            "read": f"{at} sent nothing on {endpoint}",
            "total": f"{at} did not finish {endpoint}",
        }[which]
        advice = "check that the server runs at that URL, or" if which == "connect" else "if the model is just slow,"
        super().__init__(
            f"{which} timeout: {doing} within {seconds:g} s",
            hint=f"{advice} raise [models.llm] {key} (env KB_MODELS__LLM__{key.upper()})",
        )
        self.which = which


class ApiError(KbError):
    """The server answered a request with an HTTP error status; ``server_message`` is its one-line reason."""

    def __init__(self, server: RemoteServer, url: object, endpoint: str, status: int, server_message: str) -> None:
        super().__init__(f"{server.at(url)} refused {endpoint} (HTTP {status}): {server_message}")
        self.status = status
        self.endpoint = endpoint
        self.server_message = server_message


class ConnectionLost(KbError):
    """The connection broke after the server had started answering."""

    def __init__(self, server: RemoteServer, url: object, endpoint: str, detail: str) -> None:
        super().__init__(
            f"the connection to {server.at(url)} broke during {endpoint}: {detail}",
            hint=f"check {server.name}'s log (the model may have crashed or run out of memory)",
        )


class MalformedResponse(KbError):
    """The server answered with something that is not its protocol.

    Subclass it once per backend, naming the server::

        class MalformedResponse(remote.MalformedResponse):
            server = OLLAMA


        raise MalformedResponse("stream line 2 is not JSON: '<html>'")
    """

    server: ClassVar[RemoteServer]

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{self.server.name} sent a malformed response: {what}",
            hint=f"check that {self.server.url_setting} points at {self.server.expected}",
        )


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then what it wraps (cause, context, exceptions among its arguments), breadth first."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        linked = [current.__cause__, current.__context__, *current.args]
        todo += [e for e in linked if isinstance(e, BaseException)]


def unreachable_reason(exc: BaseException, host: str) -> str:
    """Why a connection to ``host`` could not be opened, in a few words (a timeout is the caller's to report).

    Looks through wrappers (httpx's ``ConnectError`` holds the ``OSError``) for the cause:
    ``"connection refused"``, ``"cannot resolve host 'nowhere.invalid'"``, else the system's or
    the TLS library's own words (``"[SSL: WRONG_VERSION_NUMBER] wrong version number ..."``).
    """
    error = next((e for e in _causes(exc) if isinstance(e, OSError)), None)
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return f"cannot resolve host {host!r}"
    if error is not None:
        return error.strerror or str(error) or type(error).__name__
    text = str(exc).lower()  # a wrapper that kept no cause: judge by its words
    if "refused" in text:
        return "connection refused"
    if any(word in text for word in _RESOLVE_WORDS):
        return f"cannot resolve host {host!r}"
    return str(exc) or type(exc).__name__


def no_answer(endpoint: str, exc: BaseException) -> str:
    """What to say (in a MalformedResponse) when a request got no HTTP answer at all."""
    return f"{endpoint} got no HTTP answer ({type(exc).__name__})"


def first_or_done(take: Callable[[], _T]) -> _T | Done:
    """The first event of a stream (what ``take()`` returns), or the Done that ends the stream at once.

    Nothing has been generated when the server cannot be used (ModelUnavailableError) or refused
    the request (ApiError): those raise. Any other KbError (a timeout, a malformed answer) means
    the generation started and failed: it becomes ``Done(finish_reason="error", error=...)``::

        first = first_or_done(lambda: next(lines, None))
        if isinstance(first, Done):
            yield first
            return
    """
    try:
        return take()
    except (ModelUnavailableError, ApiError):
        raise
    except KbError as exc:
        return Done(finish_reason="error", error=str(exc))


def one_line(text: str, limit: int = 300) -> str:
    """``text`` with every run of whitespace (newlines included) made one space, and cut at ``limit``.

    >>> one_line("out of\\n memory")
    'out of memory'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def preview(text: str, limit: int = 80) -> str:
    """The start of a malformed answer, quoted, for its error message: ``'<html>...'``."""
    text = text.strip()
    return repr(text[:limit] + ("..." if len(text) > limit else ""))


def error_body_text(raw: bytes, pick: Callable[[Any], str | None]) -> str:
    """One line from an HTTP error body: what ``pick`` finds in its JSON, else the body's own text.

    ``pick`` gets the decoded JSON (None when the body is not JSON) and returns the message, or
    None when the body has another form::

        error_body_text(b'{"error": "model not found"}', lambda v: v.get("error") if isinstance(v, dict) else None)
    """
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        value = None
    found = pick(value)
    if found is not None:
        return found
    return one_line(raw.decode("utf-8", errors="replace"), 200) or "(empty body)"


def count_field(data: Mapping[str, Any], key: str, where: str, malformed: Callable[[str], Exception]) -> int | None:
    """The count ``data[key]`` (None when absent); ``malformed(what)`` is raised when it is not a count.

    ``count_field(line, "eval_count", "stream line 3", MalformedResponse)``.
    """
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise malformed(f"{where} has {key}={value!r}, not a count")
    return value


def chat_messages(request: GenerateRequest) -> list[dict[str, str]]:
    """The chat messages of a request: the system message, the worked examples as turns, then the question."""
    messages = [{"role": "system", "content": request.system}] if request.system else []
    for asked, answered in request.examples:
        messages += [{"role": "user", "content": asked}, {"role": "assistant", "content": answered}]
    messages.append({"role": "user", "content": request.user})
    return messages


def upper_bound_tokens(text: str) -> int:
    """A token count never below the real one: UTF-8 bytes plus two.

    The byte-level BPE and SentencePiece (byte fallback) tokenizers of the models such servers
    run cover at least one byte of the text per token, apart from a BOS token and a leading
    word-boundary marker. It overcounts English about fourfold, so it is only a fallback for
    when the server cannot count. ``upper_bound_tokens("héllo") == 8``.
    """
    return len(text.encode("utf-8")) + 2
