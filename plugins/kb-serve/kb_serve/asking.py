"""``POST /ask``: the question's options from JSON, and the answer whole or as Server-Sent Events.

Streaming: the generation runs in a worker thread; each piece of text ``kb_core.ask`` hands its
``on_token`` callback crosses to the event loop through a queue and goes out as a ``token``
event (``{"text": ...}``); one final ``answer`` event carries the ``answer.v1`` JSON (or one
``error`` event carries ``{"error", "hint"}``). Every event's data is one line of JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import threading
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
from starlette.responses import Response, StreamingResponse

import kb_core
from kb_core import AskOptions, KbError
from kb_serve.service import KbService
from kb_serve.settings import ApiError

_FIELDS = {"question", "k", "mode", "temperature", "seed", "explain", "constrained", "backend"}
_END = object()
log = logging.getLogger("kb_serve")


def _typed(body: dict[str, Any], name: str, kind: type | tuple[type, ...], label: str) -> Any:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) and kind is not bool:
        raise ApiError(400, f"{name} must be {label}")
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
    question = _typed(body, "question", str, "a string")
    if question is None or not question.strip():
        raise ApiError(400, "the question is empty", hint='send {"question": "what does X do?"}')
    k = _typed(body, "k", int, "a whole number")
    if k is not None and k < 1:
        raise ApiError(400, f"k must be at least 1 (got {k})")
    temperature = _typed(body, "temperature", (int, float), "a number")
    if temperature is not None and (not math.isfinite(temperature) or temperature < 0):
        raise ApiError(400, "temperature must be a number >= 0")
    options = AskOptions(
        k=k,
        mode=_typed(body, "mode", str, "a string"),
        temperature=None if temperature is None else float(temperature),
        seed=_typed(body, "seed", int, "a whole number"),
        explain=bool(_typed(body, "explain", bool, "true or false")),
        constrained=_typed(body, "constrained", bool, "true or false"),
        backend=_typed(body, "backend", str, "a string"),
    )
    return question, options


def sse(event: str, data: Any) -> bytes:
    """One Server-Sent Event whose data is one line of JSON."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


async def ask_response(service: KbService, question: str, options: AskOptions, stream: bool) -> Response:
    """The answer as ``answer.v1`` JSON, or as an event stream; 503 at once when the queue is full."""
    service.gate.admit()  # from here on, service.ask must run: it gives the place in the queue back
    if not stream:
        answer = await anyio.to_thread.run_sync(lambda: service.ask(question, options))
        return Response(kb_core.dumps("answer.v1", answer), media_type="application/json")
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue[object] = asyncio.Queue()

    def put(item: object) -> None:
        with contextlib.suppress(RuntimeError):  # the server shut down while the model was still writing
            loop.call_soon_threadsafe(pieces.put_nowait, item)

    def work() -> None:
        try:
            answer = service.ask(question, options, on_token=lambda text: put(("token", {"text": text})))
            put(("answer", kb_core.envelope("answer.v1", answer)))
        except KbError as exc:
            put(("error", {"error": exc.message, "hint": exc.hint}))
        except Exception:
            log.exception("internal error while answering %r", question[:80])
            put(("error", {"error": "internal error", "hint": "see the server log"}))
        finally:
            put(_END)

    threading.Thread(target=work, name="kb-serve-ask", daemon=True).start()  # now: a client that leaves frees its place
    return StreamingResponse(
        _events(pieces),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _events(pieces: asyncio.Queue[object]) -> AsyncIterator[bytes]:
    yield b": kb answer stream\n\n"  # sent at once: the client sees the stream open while it waits its turn
    while True:
        item = await pieces.get()
        if item is _END:
            return
        event, data = cast(tuple[str, Any], item)
        yield sse(event, data)
