"""The ASGI application: routes, bearer-token check, request limits, and errors as one JSON line.

Every response body is the JSON `kb ... --json` prints (``kb_core.dumps``); every error is
``{"error": message, "hint": hint}`` with a 4xx/5xx status, never a traceback.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import kb_core
from kb_core import Config, KbError, ModelUnavailableError, NotFoundError, SearchQuery
from kb_serve import openapi
from kb_serve.asking import ask_options, ask_response
from kb_serve.service import KbService
from kb_serve.settings import ApiError, ServeSettings

log = logging.getLogger("kb_serve")
T = TypeVar("T")
#: Files and form fields one upload may carry.
MAX_FILES = 1000
EXIT_STORAGE = 5


def status_of(exc: KbError) -> int:
    """The HTTP status of a kb error."""
    if isinstance(exc, ApiError):
        return exc.status
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ModelUnavailableError):
        return 503
    if exc.exit_code == EXIT_STORAGE:
        return 507
    return 400


def error_response(status: int, message: str, hint: str = "") -> JSONResponse:
    """The error body every failure uses."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": message, "hint": hint}, status_code=status, headers=headers)


def json_response(schema_version: str, payload: Any, status: int = 200) -> Response:
    """A body with exactly the JSON of the CLI's ``--json``."""
    return Response(kb_core.dumps(schema_version, payload), status_code=status, media_type="application/json")


class BearerAuth:
    """Pure ASGI middleware: with a token set, every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.expected is None or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if not hmac.compare_digest(given, self.expected):
            message = "a bearer token is required" if not given else "the bearer token is wrong"
            response = error_response(401, message, hint="send the header 'Authorization: Bearer <token>'")
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _limited(receive: Receive, limit: int) -> Receive:
    """``receive`` that fails with a 413 once the request body exceeds ``limit`` bytes."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise _too_large(limit)
        return message

    return wrapped


def _too_large(limit: int, what: str = "the upload") -> ApiError:
    return ApiError(
        413,
        f"{what} is larger than {limit} bytes",
        hint="send fewer or smaller files, or start kb serve with larger --max-upload-bytes/--max-file-bytes",
    )


def _int_param(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, f"{name} must be a whole number (got {raw[:40]!r})") from None


class Api:
    """The route handlers over one :class:`KbService`."""

    def __init__(self, service: KbService) -> None:
        self.service = service
        self.settings = service.settings

    async def _read(self, work: Callable[[], T]) -> T:
        """Run a read in a worker thread; a 504 when it outlives ``search_timeout_s``."""
        try:
            with anyio.fail_after(self.settings.search_timeout_s):
                return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except TimeoutError:
            raise ApiError(
                504,
                f"the request took longer than {self.settings.search_timeout_s:g} s",
                hint="narrow the query, or start kb serve with a larger --search-timeout",
            ) from None

    async def health(self, request: Request) -> Response:
        """``GET /health``."""
        return json_response("health.v1", await self._read(self.service.health))

    async def openapi(self, request: Request) -> Response:
        """``GET /openapi.json``."""
        return JSONResponse(openapi.document())

    async def list_documents(self, request: Request) -> Response:
        """``GET /documents?prefix=``."""
        prefix = request.query_params.get("prefix", "")
        documents = await self._read(lambda: self.service.list_documents(prefix))
        return json_response("document_list.v1", {"documents": documents})

    async def search(self, request: Request) -> Response:
        """``GET /search?q=&mode=&k=&path=``."""
        params = request.query_params
        text = params.get("q", "")
        if not text.strip():
            raise ApiError(400, "the query is empty", hint="pass some words to search for: /search?q=backups")
        cfg = self.service.config.search
        k = _int_param(request, "k")
        glob = params.get("path") or None
        if glob is not None and (problem := kb_core.glob_problem(glob)):
            raise ApiError(
                400,
                f"invalid path glob {glob[:80]!r}: {problem}",
                hint=kb_core.GLOB_HELP,
            )
        query = SearchQuery(
            text=text, k=cfg.default_k if k is None else k, mode=params.get("mode") or cfg.mode, path_glob=glob
        )
        return json_response("search_response.v1", await self._read(lambda: self.service.search(query)))

    async def upload(self, request: Request) -> Response:
        """``POST /documents`` (multipart/form-data; every file part is one document)."""
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            raise ApiError(
                415,
                "an upload must be multipart/form-data",
                hint="curl -F file=@notes.md http://127.0.0.1:8765/documents",
            )
        limit = self.settings.max_upload_bytes
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            raise _too_large(limit)
        limited = Request(request.scope, _limited(request.receive, limit))
        files: list[tuple[str, bytes]] = []
        async with limited.form(max_files=MAX_FILES, max_fields=MAX_FILES) as form:
            for _field, value in form.multi_items():
                if not isinstance(value, UploadFile):
                    continue
                if value.size is not None and value.size > self.settings.max_file_bytes:
                    raise _too_large(self.settings.max_file_bytes, f"{value.filename!r}")
                files.append((value.filename or "", await value.read()))
        if not files:
            raise ApiError(400, "the upload holds no file", hint="send files as form parts: -F file=@notes.md")
        report = await anyio.to_thread.run_sync(lambda: self.service.upload(files))
        return json_response("ingest_report.v1", report)

    async def delete(self, request: Request) -> Response:
        """``DELETE /documents/{path}`` (a path ending in '/' removes a folder)."""
        path = request.path_params["path"]
        removed = await anyio.to_thread.run_sync(lambda: self.service.delete(path))
        return json_response("removed.v1", {"removed": removed})

    async def ask(self, request: Request) -> Response:
        """``POST /ask`` (``?stream=1``: Server-Sent Events)."""
        stream = request.query_params.get("stream", "") in ("1", "true", "yes")
        return await self._ask(request, stream)

    async def ask_stream(self, request: Request) -> Response:
        """``POST /ask/stream``: Server-Sent Events."""
        return await self._ask(request, True)

    async def _ask(self, request: Request, stream: bool) -> Response:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ApiError(400, "the body must be JSON", hint='send {"question": "..."}') from None
        question, options = ask_options(body)
        return await ask_response(self.service, question, options, stream)


async def _kb_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, KbError)
    return error_response(status_of(exc), exc.message, exc.hint)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return error_response(exc.status_code, str(exc.detail), hint="see /openapi.json for the endpoints")


async def _internal_error(request: Request, exc: Exception) -> Response:
    log.exception("internal error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal error", hint="see the server log; rerun with KB_DEBUG=1 and report it")


def create_app(
    config: Config,
    settings: ServeSettings,
    registry: Any = None,
    on_ready: Callable[[KbService], Awaitable[None]] | None = None,
) -> Starlette:
    """The kb HTTP API over the knowledge base ``config`` names (``registry``: the plugins; default: installed)."""
    settings.check()
    service = KbService(config, settings, registry)
    api = Api(service)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(service.warm)
        if on_ready is not None:
            await on_ready(service)
        try:
            yield
        finally:
            service.close()

    routes = [
        Route("/health", api.health, methods=["GET"]),
        Route("/openapi.json", api.openapi, methods=["GET"]),
        Route("/documents", api.list_documents, methods=["GET"]),
        Route("/documents", api.upload, methods=["POST"]),
        Route("/documents/{path:path}", api.delete, methods=["DELETE"]),
        Route("/search", api.search, methods=["GET"]),
        Route("/ask", api.ask, methods=["POST"]),
        Route("/ask/stream", api.ask_stream, methods=["POST"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={KbError: _kb_error, HTTPException: _http_error, Exception: _internal_error},
    )
    app.state.service = service
    app.add_middleware(BearerAuth, token=settings.token)
    return app
