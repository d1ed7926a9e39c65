"""The ASGI application: routes, bearer-token check, request limits, and errors as one JSON line.

Every response body is the JSON `kb ... --json` prints (``kb_core.commands.dumps``); every error is
``{"error": message, "hint": hint}`` with a 4xx/5xx status, never a traceback. Under ``/v1`` (OpenAI's
chat API, :mod:`kb_serve.openai_api`) bodies and errors are OpenAI's shapes instead.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import kb_core
from kb_core import Config, KbError, SearchQuery
from kb_core.bounds import LIST_LIMIT, K
from kb_core.commands import check_path, storage_error
from kb_serve import openapi, reading
from kb_serve.access import PeopleAuth
from kb_serve.asking import CLIENT_LEFT, ask_options, ask_response
from kb_serve.bodies import (
    UPLOAD_HINT,
    bounded,
    int_param,
    json_response,
    off_loop,
    path_param,
    read_json,
    strict_form,
    too_large,
)
from kb_serve.errors import ApiError, OpenAIErrors, error_response, headers_of, status_of
from kb_serve.guards import HostPolicy, RequestGuard
from kb_serve.openai_api import OpenAIApi
from kb_serve.page_images import PageImages
from kb_serve.recordings import Recordings
from kb_serve.service import KbService
from kb_serve.settings import ServeSettings
from kb_serve.threads import ThreadApi
from kb_serve.webpage import PageFiles, SecurityHeaders

__all__ = ["create_app", "error_response", "status_of"]

log = logging.getLogger("kb_serve")
T = TypeVar("T")
#: Files and form fields one upload may carry.
MAX_FILES = 1000


class Api:
    """The route handlers over one :class:`KbService`."""

    def __init__(self, service: KbService) -> None:
        self.service = service
        self.settings = service.settings

    async def _read(self, work: Callable[[], T]) -> T:
        """Run a read in a worker thread; a 504 when it outlives ``search_timeout_s``."""
        return await off_loop(work, self.settings.search_timeout_s)

    async def health(self, request: Request) -> Response:
        """``GET /health``."""
        return json_response("health.v1", await self._read(self.service.health))

    async def openapi(self, request: Request) -> Response:
        """``GET /openapi.json``."""
        return JSONResponse(openapi.document())

    async def documents(self, request: Request) -> Response:
        """``/documents``: GET lists, POST uploads (one route, so a 405 names both in ``Allow``)."""
        return await (self.upload(request) if request.method == "POST" else self.list_documents(request))

    async def list_documents(self, request: Request) -> Response:
        """``GET /documents?prefix=``."""
        prefix = path_param(request.query_params.get("prefix", ""), "the prefix")
        documents = await self._read(lambda: self.service.list_documents(prefix))
        return json_response("document_list.v1", {"documents": documents})

    async def search(self, request: Request) -> Response:
        """``GET /search?q=&mode=&k=&path=``."""
        params = request.query_params
        text = kb_core.check_text(params.get("q", ""), "query")  # 400 when empty or too long
        cfg = self.service.config.search
        k = int_param(request, "k", K)  # 400 outside K (a huge k once made the index allocate k x 16 bytes)
        mode = params.get("mode") or cfg.mode
        kb_core.check_mode(mode)
        glob = path_param(params.get("path") or "", "the path glob") or None
        kb_core.check_path_glob(glob)  # 400 with the one line every interface gives
        query = SearchQuery(text=text, k=cfg.default_k if k is None else k, mode=mode, path_glob=glob)
        return json_response("search_response.v1", await self._read(lambda: self.service.search(query)))

    async def upload(self, request: Request) -> Response:
        """``POST /documents`` (multipart/form-data; every file part is one document)."""
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            raise ApiError(
                415,
                "an upload must be multipart/form-data",
                hint="curl -F file=@notes.md http://127.0.0.1:8765/documents",
            )
        limited = bounded(request, self.settings.max_upload_bytes, "the upload", UPLOAD_HINT)
        files: list[tuple[str, bytes]] = []
        async with strict_form(limited, MAX_FILES) as form:  # (a file name that is not UTF-8: a 400)
            for _field, value in form.multi_items():
                if not isinstance(value, UploadFile):
                    continue
                if value.size is not None and value.size > self.settings.max_file_bytes:
                    raise too_large(self.settings.max_file_bytes, f"{value.filename!r}")
                files.append((value.filename or "", await value.read()))
        if not files:
            raise ApiError(400, "the upload holds no file", hint="send files as form parts: -F file=@notes.md")
        report = await anyio.to_thread.run_sync(lambda: self.service.upload(files))
        return json_response("ingest_report.v1", report)

    async def document(self, request: Request) -> Response:
        """``/documents/{path}``: GET reads the text, DELETE removes (one route, so a 405 names both)."""
        return await (self.delete(request) if request.method == "DELETE" else self.document_text(request))

    async def document_text(self, request: Request) -> Response:
        """``GET /documents/{path}``: the stored text, line by line (``document_text.v1``)."""
        path = path_param(request.path_params["path"], "the path")
        text = await self._read(lambda: self.service.read(lambda kb: reading.document_text(kb, path)))
        return json_response("document_text.v1", text)

    async def answers(self, request: Request) -> Response:
        """``GET /answers?limit=``: the stored questions, newest first (as ``kb answers list --json``)."""
        limit = int_param(request, "limit", LIST_LIMIT)
        chosen = reading.DEFAULT_ANSWERS if limit is None else limit
        history = await self._read(lambda: self.service.read(lambda kb: reading.answer_history(kb, chosen)))
        return json_response("answer_history.v1", history)

    async def stored_answer(self, request: Request) -> Response:
        """``GET /answers/{answer_id}``: one stored answer with its citations (``stored_answer.v1``)."""
        answer_id = path_param(request.path_params["answer_id"], "the answer id")
        answer = await self._read(lambda: self.service.read(lambda kb: reading.owned_answer(kb, answer_id)))
        return json_response("stored_answer.v1", answer)

    async def delete(self, request: Request) -> Response:
        """``DELETE /documents/{path}`` (a path ending in '/' removes a folder)."""
        path = path_param(request.path_params["path"], "the path")
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
        question, options = ask_options(await read_json(request))
        return await ask_response(self.service, question, options, stream, request.receive)


async def _kb_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, KbError)
    return error_response(status_of(exc), exc.message, exc.hint, headers_of(exc))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:  # a path no route's pattern takes (a NUL with a line break): bad input, not "no route"
        try:
            check_path(request.url.path, "the request's path")
        except KbError as bad:
            return await _kb_error(request, bad)
    headers = dict(exc.headers or {})  # a 405's Allow
    return error_response(exc.status_code, str(exc.detail), "see /openapi.json for the endpoints", headers)


async def _client_left(request: Request, exc: Exception) -> Response:
    """A client that disconnects before sending its whole request: one info line, no traceback."""
    log.info("the client left before sending its whole request (%s %s)", request.method, request.url.path)
    return Response(status_code=CLIENT_LEFT)  # nobody reads it


async def _internal_error(request: Request, exc: Exception) -> Response:
    storage = storage_error(exc)  # SQLite's lock held (503), a full disk or read-only storage (507), met in a read
    if storage is not None:
        return await _kb_error(request, storage)
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

    page = PageFiles()
    threads = ThreadApi(service)
    routes = [
        Route("/", page.serve, methods=["GET"]),
        Route("/page/{name:path}", page.serve, methods=["GET"]),
        Route("/health", api.health, methods=["GET"]),
        Route("/openapi.json", api.openapi, methods=["GET"]),
        Route("/documents", api.documents, methods=["GET", "POST"]),
        *PageImages(service).routes(),  # before /documents/{path}, which would take its path
        Route("/documents/{path:path}", api.document, methods=["GET", "DELETE"]),
        *Recordings(service).routes(),  # a recording's bytes, for the page to play a citation's moment
        Route("/answers", api.answers, methods=["GET"]),
        Route("/answers/{answer_id}", api.stored_answer, methods=["GET"]),
        Route("/search", api.search, methods=["GET"]),
        Route("/ask", api.ask, methods=["POST"]),
        Route("/ask/stream", api.ask_stream, methods=["POST"]),
        *threads.routes(),
        *OpenAIApi(service).routes(),  # /v1: OpenAI's chat API (errors in its shape)
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            KbError: _kb_error,
            HTTPException: _http_error,
            ClientDisconnect: _client_left,
            Exception: _internal_error,
        },
    )
    app.state.service = service
    app.add_middleware(PeopleAuth, token=settings.token, read=service.read)  # (BearerAuth's, and people's)
    # before the token and the routes: a request to a host the server does not answer to, or a cross-site write
    app.add_middleware(RequestGuard, policy=HostPolicy.build(settings.host, settings.allow_hosts), port=settings.port)
    app.add_middleware(OpenAIErrors)  # around the guards: under /v1, every error leaves in OpenAI's shape
    app.add_middleware(SecurityHeaders)  # outermost: on every response, refusals included
    return app
