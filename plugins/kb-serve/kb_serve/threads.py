"""``/threads``: follow-up questions in threads (as ``kb chat``, ``kb ask --thread`` and ``kb threads``).

* ``POST /threads`` asks the first question of a new thread, ``POST /threads/{id}/ask`` a follow-up in
  one. The body is ``/ask``'s. A follow-up is made standalone before kb searches ("Which port does it
  listen on?" -> "Which port does it listen on? (the Heliograph daemon)"), the turns before it go into
  the prompt, and its answer is checked like any other. The reply is ``turn.v1`` (the question as
  asked, the ``standalone`` one kb searched with, how it was made, the answer): one JSON body, or,
  with ``?stream=1`` or ``Accept: text/event-stream``, Server-Sent Events as ``/ask`` sends them, but
  first one ``standalone`` event (``{"question", "method"}``, as soon as kb knows what it searches
  with; for every question, ``as_asked`` included), then ``token`` events, then one ``turn`` event
  (or one ``error`` event).
* ``GET /threads?limit=`` lists them (``thread_list.v1``), ``GET /threads/{id}`` shows one with its
  turns (``thread.v1``), ``DELETE /threads/{id}`` deletes it with its turns and their stored answers
  (``thread_deleted.v1``).

An unknown thread is a 404 before anything is asked. A thread a question is waiting or being answered
in is not deleted (409), so a turn never lands in a thread deleted under it. Stored turns are shown
as answers are (no local model paths).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import kb_core
from kb_core import NotFoundError
from kb_core.bounds import LIST_LIMIT
from kb_serve.access import own_threads
from kb_serve.asking import Emit, ask_options, respond, tokens
from kb_serve.bodies import int_param, json_response, off_loop, path_param, read_json
from kb_serve.errors import ApiError
from kb_serve.service import KbService

#: Threads one ``GET /threads`` lists by default (at most: ``kb_core.bounds.LIST_LIMIT``, as ``kb threads list``).
DEFAULT_THREADS = 50
THREADS_HINT = "GET /threads lists the threads"
T = TypeVar("T")


def wants_stream(request: Request) -> bool:
    """Whether the client asked for Server-Sent Events (``?stream=1``, or ``Accept: text/event-stream``)."""
    if request.query_params.get("stream", "") in ("1", "true", "yes"):
        return True
    return "text/event-stream" in request.headers.get("accept", "").lower()


def _thread_id(request: Request) -> str:
    return path_param(request.path_params["thread_id"], "the thread id")


def _known(work: Callable[[], T]) -> T:
    """``work()``, its "no such thread" a 404 whose hint names the route that lists them."""
    try:
        return work()
    except NotFoundError as exc:
        raise ApiError(404, exc.message, hint=THREADS_HINT) from None


class ThreadApi:
    """The route handlers of ``/threads`` over one :class:`KbService`."""

    def __init__(self, service: KbService) -> None:
        self.service = service

    def routes(self) -> list[Route]:
        """The routes (one per path, so a 405 names every method of it in ``Allow``)."""
        return [
            Route("/threads", self.threads, methods=["GET", "POST"]),
            Route("/threads/{thread_id}", self.thread, methods=["GET", "DELETE"]),
            Route("/threads/{thread_id}/ask", self.follow_up, methods=["POST"]),
        ]

    async def _read(self, work: Callable[[], T]) -> T:
        return await off_loop(work, self.service.settings.search_timeout_s)

    async def threads(self, request: Request) -> Response:
        """``/threads``: GET lists, POST asks a new thread's first question."""
        return await (self._ask(request, None) if request.method == "POST" else self.list_threads(request))

    async def thread(self, request: Request) -> Response:
        """``/threads/{id}``: GET shows the thread, DELETE deletes it."""
        return await (self.delete(request) if request.method == "DELETE" else self.show(request))

    async def list_threads(self, request: Request) -> Response:
        """``GET /threads?limit=``: threads, the most recently continued first (as ``kb threads list --json``)."""
        limit = int_param(request, "limit", LIST_LIMIT)
        chosen = DEFAULT_THREADS if limit is None else limit
        found = await self._read(lambda: self.service.read(lambda kb: own_threads(kb, chosen)))
        return json_response("thread_list.v1", {"threads": found})

    async def show(self, request: Request) -> Response:
        """``GET /threads/{id}``: the thread's turns in order (``thread.v1``)."""
        thread_id = _thread_id(request)
        await self._read(lambda: _known(lambda: self.service.check_thread(thread_id)))  # (a person's own only)
        thread = await self._read(lambda: _known(lambda: self.service.answers.thread(thread_id)))
        return json_response("thread.v1", thread)

    async def delete(self, request: Request) -> Response:
        """``DELETE /threads/{id}``: the thread, its turns and their stored answers (``thread_deleted.v1``)."""
        thread_id = _thread_id(request)

        await self._read(lambda: _known(lambda: self.service.check_thread(thread_id)))
        turns = await anyio.to_thread.run_sync(lambda: _known(lambda: self.service.answers.delete_thread(thread_id)))
        return json_response("thread_deleted.v1", {"thread_id": thread_id, "turns": turns})

    async def follow_up(self, request: Request) -> Response:
        """``POST /threads/{id}/ask``: a follow-up in the thread."""
        thread_id = _thread_id(request)
        return await self._ask(request, thread_id)

    async def _ask(self, request: Request, thread_id: str | None) -> Response:
        question, options = ask_options(await read_json(request))
        if thread_id is not None:  # a 404 now, before a stream starts
            await self._read(lambda: _known(lambda: self.service.check_thread(thread_id)))
            await self._read(
                lambda: self.service.read(lambda kb: _known(lambda: kb_core.stored_thread(kb.store, thread_id)))
            )

        def work(emit: Emit, gone: threading.Event) -> kb_core.Turn:
            def searched(standalone: Any) -> None:  # kb_core's Standalone: what kb searches with, before it does
                emit("standalone", {"question": standalone.question, "method": standalone.method})

            return self.service.ask_in_thread(
                question, thread_id, options, on_token=tokens(emit), gone=gone, on_standalone=searched
            )

        return await respond(self.service, work, "turn.v1", wants_stream(request), request.receive, label=question)
