"""Requests and responses of the API's routes: bounded bodies, JSON in and out, parameters, reads off the loop."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive

from kb_core import LIMITS
from kb_core.commands import check_unicode, dumps
from kb_serve.errors import ApiError
from kb_serve.guards import is_json_media_type

T = TypeVar("T")
UPLOAD_HINT = "send fewer or smaller files, or start kb serve with larger --max-upload-bytes/--max-file-bytes"
JSON_HINT = f"send at most {LIMITS.json_body_bytes} bytes of JSON"
UNICODE_HINT = "send the body as UTF-8 JSON"
_WHOLE_NUMBER = re.compile(r"-?[0-9]+")
MAX_DIGITS = 30


def json_response(schema_version: str, payload: Any, status: int = 200) -> Response:
    """A body with exactly the JSON of the CLI's ``--json``."""
    return Response(dumps(schema_version, payload), status_code=status, media_type="application/json")


def too_large(limit: int, what: str = "the upload", hint: str = UPLOAD_HINT) -> ApiError:
    """The 413 of a body past its limit."""
    return ApiError(413, f"{what} is larger than {limit} bytes", hint=hint)


def _limited(receive: Receive, limit: int, what: str = "the upload", hint: str = UPLOAD_HINT) -> Receive:
    """``receive`` that fails with a 413 once the request body exceeds ``limit`` bytes."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise too_large(limit, what, hint)
        return message

    return wrapped


def bounded(request: Request, limit: int, what: str, hint: str) -> Request:
    """``request`` whose body may hold at most ``limit`` bytes: 413 at once on a larger Content-Length,
    or as soon as a chunked body grows past it."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise too_large(limit, what, hint)
    return Request(request.scope, _limited(request.receive, limit, what, hint))


def int_param(request: Request, name: str) -> int | None:
    """The query parameter ``name`` as a whole number (None when absent), or a 400."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if not _WHOLE_NUMBER.fullmatch(raw):
        raise ApiError(400, f"{name} must be a whole number (got {raw[:40]!r})")
    if len(raw) > MAX_DIGITS:
        raise ApiError(400, f"{name} is out of range (got {raw[:24]}...)")
    return int(raw)


def path_param(value: str, what: str) -> str:
    """``value`` (a path, a prefix, an id), or a 400 past ``LIMITS.path_chars`` or when not valid Unicode."""
    if len(value) > LIMITS.path_chars:
        raise ApiError(400, f"{what} is longer than {LIMITS.path_chars} characters", hint="shorten it")
    return check_unicode(value, what.removeprefix("the "))


async def read_json(request: Request) -> Any:
    """The request's JSON body: 415 unless ``application/json``, 413 past ``LIMITS.json_body_bytes``, 400 when it is
    not JSON or a string in it is not valid Unicode (:func:`kb_core.commands.check_unicode`)."""
    if not is_json_media_type(request.headers.get("content-type")):
        raise ApiError(
            415,
            "the body must be sent as Content-Type: application/json",
            hint="""curl -H 'Content-Type: application/json' -d '{"question": "..."}' ...""",
        )
    body = await bounded(request, LIMITS.json_body_bytes, "the JSON body", JSON_HINT).body()
    try:
        parsed = json.loads(body)
    except UnicodeDecodeError as exc:
        raise ApiError(
            400, f"the body is not valid UTF-8 (byte {exc.start + 1} is 0x{body[exc.start]:02x})", hint=UNICODE_HINT
        ) from None
    except (ValueError, RecursionError):  # (JSONDecodeError, too many digits, too deep)
        raise ApiError(400, "the body must be JSON", hint='send {"question": "..."}') from None
    return check_unicode(parsed, "body")  # a 400 naming the field of a lone surrogate (\ud800 unpaired)


async def off_loop(work: Callable[[], T], timeout_s: float) -> T:
    """Run a read in a worker thread; a 504 when it outlives ``timeout_s`` (``--search-timeout``)."""
    try:
        with anyio.fail_after(timeout_s):
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except TimeoutError:
        raise ApiError(
            504,
            f"the request took longer than {timeout_s:g} s",
            hint="narrow the query, or start kb serve with a larger --search-timeout",
        ) from None
