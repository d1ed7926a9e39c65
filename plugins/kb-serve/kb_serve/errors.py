"""Errors as the API shows them: one line of JSON ``{"error", "hint"}``, with no absolute local path in it.

Under ``/v1/`` (the OpenAI-compatible routes) every error is OpenAI's shape instead,
``{"error": {"message", "type", "param", "code"}}``: :class:`OpenAIErrors` rewrites the error of any
layer (the Host and Origin guards, the token, a route, a 500) on its way out.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kb_core import KbError, ModelUnavailableError, NotFoundError, WriterBusyError
from kb_core.service import GenerationBusy, ThreadInUse, cut_paths

EXIT_STORAGE = 5
#: Seconds a client is told to wait (``Retry-After``) before asking a busy server again.
RETRY_AFTER_S = 5
#: Characters of an error message or hint kept in a response (a client's input may be echoed in it).
MAX_TEXT_CHARS = 400


class ApiError(KbError):
    """A KbError that names its HTTP status (413 too large, 415 unsupported, 503 busy, ...); ``busy``: a 503 a
    client may retry (it carries ``Retry-After``)."""

    def __init__(self, status: int, message: str, *, hint: str = "", busy: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.busy = busy


def status_of(exc: KbError) -> int:
    """The HTTP status of a kb error: a busy knowledge base (another process writing, SQLite's lock held) is
    503, a full disk or read-only storage 507, a missing thing 404, an unavailable model 503."""
    if isinstance(exc, ApiError):
        return exc.status
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ThreadInUse):
        return 409
    if isinstance(exc, WriterBusyError | ModelUnavailableError | GenerationBusy):
        return 503
    if exc.exit_code == EXIT_STORAGE:
        return 507
    return 400


def headers_of(exc: KbError) -> dict[str, str]:
    """The headers a kb error's response carries: ``Retry-After`` when the server is busy, not broken."""
    busy = isinstance(exc, WriterBusyError | GenerationBusy) or (isinstance(exc, ApiError) and exc.busy)
    return {"Retry-After": str(RETRY_AFTER_S)} if busy else {}


def public_text(text: str) -> str:
    """``text`` as an error may carry it: one line, at most MAX_TEXT_CHARS, with :func:`cut_paths`."""
    line = cut_paths(" ".join(text.split()))
    return line if len(line) <= MAX_TEXT_CHARS else line[: MAX_TEXT_CHARS - 1] + "…"


def error_body(message: str, hint: str = "") -> dict[str, str]:
    """The error object every failure uses (also the data of an ``error`` event)."""
    return {"error": public_text(message) or "error", "hint": public_text(hint)}


def error_response(status: int, message: str, hint: str = "", headers: dict[str, str] | None = None) -> JSONResponse:
    """The error response every failure uses."""
    extra = dict(headers or {})
    if status == 401:
        extra["WWW-Authenticate"] = "Bearer"
    return JSONResponse(error_body(message, hint), status_code=status, headers=extra or None)


# -- OpenAI's error shape, under /v1/ ---------------------------------------------------------------------

#: The ``code`` of an OpenAI-shaped error, by status (a route, or the error's kind, may give a more precise one).
OPENAI_CODES = {
    400: "invalid_request",
    401: "invalid_api_key",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "request_too_large",
    415: "unsupported_media_type",
    421: "misdirected_request",
    422: "unprocessable",
    429: "rate_limit_exceeded",
    500: "internal_error",
    503: "model_busy",
    504: "timeout",
    507: "insufficient_storage",
}
log = logging.getLogger("kb_serve")


class OpenAIError(ApiError):
    """An ApiError of the OpenAI-compatible routes that names the request's ``param`` and an error ``code``."""

    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(status, message)
        self.param = param
        self.code = code


def openai_error_body(
    status: int, message: str, hint: str = "", param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """OpenAI's error object: ``type`` ``invalid_request_error`` for a 4xx, ``server_error`` otherwise, ``code``
    the given one or the status's; the hint joins the message in brackets."""
    said = error_body(message, hint)
    text = f"{said['error']} ({said['hint']})" if said["hint"] else said["error"]
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": text, "type": kind, "param": param, "code": code or OPENAI_CODES.get(status)}}


def openai_code(exc: KbError) -> str | None:
    """The ``code`` of a kb error under ``/v1``: an OpenAIError's own, else by its kind (None: the status's)."""
    if isinstance(exc, OpenAIError) and exc.code:
        return exc.code
    if isinstance(exc, WriterBusyError):
        return "knowledge_base_busy"
    if isinstance(exc, ModelUnavailableError):
        return "model_unavailable"
    return None


def openai_error_of(exc: KbError, param: str | None = None) -> dict[str, Any]:
    """The OpenAI-shaped error object of a kb error (``param``: the request's field it is about, if known)."""
    param = exc.param if isinstance(exc, OpenAIError) and exc.param else param
    return openai_error_body(status_of(exc), exc.message, exc.hint, param, openai_code(exc))


def openai_error_response(exc: KbError) -> JSONResponse:
    """The OpenAI-shaped response of a kb error (with its ``param`` and ``code`` when it is an OpenAIError)."""
    status = status_of(exc)
    headers = {**headers_of(exc), **({"WWW-Authenticate": "Bearer"} if status == 401 else {})}
    return JSONResponse(openai_error_of(exc), status, headers=headers or None)


def is_openai_path(path: str) -> bool:
    """Whether ``path`` is under ``/v1``, where errors are OpenAI-shaped."""
    return path == "/v1" or path.startswith("/v1/")


class OpenAIErrors:
    """Pure ASGI middleware: under ``/v1``, an error ``{"error", "hint"}`` from any layer leaves as OpenAI's shape,
    and an exception no handler took is a logged OpenAI-shaped 500 (elsewhere it changes nothing)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_openai_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        held: Message | None = None  # the start of an error response, sent once its body is rewritten
        body = bytearray()
        started = False

        async def rewriting(message: Message) -> None:
            nonlocal held, started
            if message["type"] == "http.response.start":
                started = True
                media = MutableHeaders(scope=message).get("content-type", "")
                if message["status"] >= 400 and media.startswith("application/json"):
                    held = message
                    return
            elif message["type"] == "http.response.body" and held is not None:
                body.extend(message.get("body", b""))
                if message.get("more_body", False):
                    return
                await _send_rewritten(held, bytes(body), send)
                return
            await send(message)

        try:
            await self.app(scope, receive, rewriting)
        except Exception:
            if started:
                raise
            log.exception("internal error on %s %s", scope.get("method"), scope["path"])
            await openai_error_response(ApiError(500, "internal error", hint=INTERNAL_HINT))(scope, receive, send)


INTERNAL_HINT = "see the server log; rerun with KB_DEBUG=1 and report it"


async def _send_rewritten(start: Message, body: bytes, send: Send) -> None:
    """Send the error response ``start`` + ``body`` with the body in OpenAI's shape (one already so is kept)."""
    try:
        said = json.loads(body)
    except ValueError:
        said = None
    if isinstance(said, dict) and isinstance(said.get("error"), str):
        body = json.dumps(openai_error_body(start["status"], said["error"], str(said.get("hint") or ""))).encode()
    headers = MutableHeaders(scope=start)
    headers["content-length"] = str(len(body))
    await send(start)
    await send({"type": "http.response.body", "body": body, "more_body": False})
