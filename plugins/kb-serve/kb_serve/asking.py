"""``POST /ask`` (and the questions of ``/threads``): the question's options from JSON, and the answer whole
or as Server-Sent Events.

Streaming: the generation runs in a worker thread; each piece of text ``kb_core.ask`` hands its
``on_token`` callback crosses to the event loop through a queue and goes out as a ``token``
event (``{"text": ...}``); ``on_token`` hears only text kb has checked (docs/architecture.md, "What a
reader sees"), and while kb holds text back the stream sends a comment line every few seconds; one
final ``answer`` event carries the ``answer.v1`` JSON (for a
question asked in a thread, one ``turn`` event carries ``turn.v1``), or one ``error`` event
carries ``{"error", "hint"}``. A question asked in a thread first sends one ``standalone`` event
(``{"question", "method"}``: what kb searches with, and how it was made, ``as_asked`` included)
as soon as kb knows it, before retrieval and before any ``token``. Every event's data is one line
of JSON.

A client that leaves stops its answer: when the event stream is closed (or, for a whole answer,
when the connection drops) a flag is set; a question still waiting for the model leaves the
queue, and a generation under way stops at its next token (``kb_core.Cancelled``, nothing stored).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar, cast

import anyio
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive

import kb_core
from kb_core import AskOptions, Cancelled, KbError
from kb_core.bounds import SEED, TEMPERATURE, K
from kb_core.commands import dumps, envelope, storage_error
from kb_serve.bodies import checked, field_within
from kb_serve.errors import ApiError, error_body
from kb_serve.service import KbService

_FIELDS = {"question", "k", "mode", "temperature", "seed", "explain", "constrained", "backend"}
_END = object()
#: The event ``tokens`` sends while kb holds text back; the stream says it is alive every KEEP_ALIVE_S with a comment.
WAIT = "wait"
KEEP_ALIVE_S = 5.0
KEEP_ALIVE = b": kb is checking the answer\n\n"
#: Characters of a ``backend`` name (the numbers' ranges are kb_core.bounds': K, TEMPERATURE, SEED).
MAX_NAME_CHARS = 100
#: The status logged for a request whose client left before its answer (nginx's "client closed request").
CLIENT_LEFT = 499
log = logging.getLogger("kb_serve")
T = TypeVar("T")


def _typed(body: dict[str, Any], name: str, kind: type | tuple[type, ...], label: str) -> Any:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) and kind is not bool:
        raise ApiError(400, f"{name} must be {label}")
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)  # 5.0 is an integer to JSON Schema (and to the OpenAPI document)
    if not isinstance(value, kind):
        raise ApiError(400, f"{name} must be {label} (got {type(value).__name__})")
    return value


def ask_options(body: Any) -> tuple[str, AskOptions]:
    """The question and its options from a JSON body, or a 400 saying which field is wrong."""
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object", hint='send {"question": "..."}')
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise ApiError(
            400,
            f"unknown field(s): {', '.join(json.dumps(u)[:40] for u in unknown[:5])}",
            hint=f"known: {', '.join(sorted(_FIELDS))}",
        )
    question = checked(lambda: kb_core.check_text(_typed(body, "question", str, "a string") or "", "question"))
    k = field_within(body, "k", K)
    temperature = field_within(body, "temperature", TEMPERATURE)
    mode = _typed(body, "mode", str, "a string")
    checked(lambda: kb_core.check_mode(mode))
    seed = field_within(body, "seed", SEED)
    backend = _typed(body, "backend", str, "a string")
    if backend is not None and len(backend) > MAX_NAME_CHARS:
        raise ApiError(400, f"backend is longer than {MAX_NAME_CHARS} characters")
    options = AskOptions(
        k=k,
        mode=mode,
        temperature=None if temperature is None else float(temperature),
        seed=seed,
        explain=bool(_typed(body, "explain", bool, "true or false")),
        constrained=_typed(body, "constrained", bool, "true or false"),
        backend=backend,
    )
    return question, options


def sse(event: str, data: Any) -> bytes:
    """One Server-Sent Event whose data is one line of JSON."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


#: Sends one event of the stream, by name with its data (for a whole reply it sends nothing).
Emit = Callable[[str, Any], None]
#: What a question's work is given: where its events go, and the flag set when the client has left.
Work = Callable[[Emit, threading.Event], T]


def tokens(emit: Emit) -> Callable[[str], None]:
    """An ``on_token`` callback that sends each piece of checked text as a ``token`` event (and, while kb holds
    text back to check it, a ``wait``, which the stream sends as a comment line now and then)."""
    return lambda text: emit("token", {"text": text}) if text else emit(WAIT, None)


async def ask_response(
    service: KbService, question: str, options: AskOptions, stream: bool, receive: Receive
) -> Response:
    """The answer as ``answer.v1`` JSON, or as an event stream ending in an ``answer`` event (see :func:`respond`)."""
    return await respond(
        service,
        lambda emit, gone: service.ask(question, options, on_token=tokens(emit), gone=gone),
        "answer.v1",
        stream,
        receive,
        label=question,
    )


def kb_error_data(exc: KbError) -> dict[str, str]:
    """The data of a stream's ``error`` event for ``exc``: the error body every failure uses."""
    return error_body(exc.message, exc.hint)


async def respond(
    service: KbService,
    work: Work[Any],
    schema: str,
    stream: bool,
    receive: Receive,
    label: str,
    error_data: Callable[[KbError], Any] = kb_error_data,
) -> Response:
    """What ``work`` makes (it asks the model) as ``schema`` JSON, or as an event stream; 503 at once when the
    queue is full.

    ``work`` sends the events before the final one (``token``, ``standalone``) through the ``Emit`` it is given;
    the stream's final event is named by the schema (``answer`` for ``answer.v1``, ``turn`` for ``turn.v1``).
    ``receive``: the request's, whose body has been read (it then reports only the client leaving);
    ``label``: the question, for the log; ``error_data``: the data of the ``error`` event a failure in the
    stream sends (``/v1``'s is OpenAI's error object).
    """
    service.gate.admit()  # from here on, work must run: the service gives the place in the queue back
    gone = threading.Event()
    if not stream:
        return await _whole(work, schema, receive, gone)
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue[object] = asyncio.Queue()
    final = schema.split(".")[0]

    def put(item: object) -> None:
        with contextlib.suppress(RuntimeError):  # the server shut down while the model was still writing
            loop.call_soon_threadsafe(pieces.put_nowait, item)

    def run() -> None:
        try:
            made = work(lambda event, data: put((event, data)), gone)
            put((final, envelope(schema, made)))
        except Cancelled:
            log.info("the client left; its answer was stopped")
        except KbError as exc:
            put(("error", error_data(exc)))
        except Exception as exc:
            storage = storage_error(exc)  # SQLite's lock held, a full disk: said as such, not as a bug
            if storage is None:
                log.exception("internal error while answering %r", label[:80])
            put(("error", error_data(storage or ApiError(500, "internal error", hint="see the server log"))))
        finally:
            put(_END)

    context = contextvars.copy_context()  # the asker's grants (kb_core.plugin.stores.restricted_to) go along
    threading.Thread(
        target=context.run, args=(run,), name="kb-serve-ask", daemon=True
    ).start()  # now: a client that leaves frees its place
    return StreamingResponse(
        _events(pieces, gone),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _whole(work: Work[Any], schema: str, receive: Receive, gone: threading.Event) -> Response:
    """What ``work`` makes as one JSON body; ``gone`` is set if the client disconnects before it is ready."""

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()

    made: Any = None
    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        try:
            made = await anyio.to_thread.run_sync(lambda: work(lambda _event, _data: None, gone))
        except Exception as exc:  # raised below: inside the task group it would come out wrapped in a group
            failure = exc
        group.cancel_scope.cancel()
    if isinstance(failure, Cancelled):
        log.info("the client left; its answer was stopped")
        return Response(status_code=CLIENT_LEFT)
    if failure is not None:
        raise failure
    return Response(dumps(schema, made), media_type="application/json")


async def _events(pieces: asyncio.Queue[object], gone: threading.Event) -> AsyncIterator[bytes]:
    try:
        yield b": kb answer stream\n\n"  # sent at once: the client sees the stream open while it waits its turn
        alive = time.monotonic()
        while True:
            item = await pieces.get()
            if item is _END:
                return
            event, data = cast(tuple[str, Any], item)
            if event != WAIT:
                yield sse(event, data)
                alive = time.monotonic()
            elif time.monotonic() - alive >= KEEP_ALIVE_S:  # (a client or proxy that times out a silent stream)
                yield KEEP_ALIVE
                alive = time.monotonic()
    finally:  # the stream ended, or the client left (Starlette cancels the stream): stop the generation
        gone.set()
