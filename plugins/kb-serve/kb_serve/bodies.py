"""Requests and responses of the API's routes: bounded bodies, JSON in and out, parameters, reads off the loop."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from typing import Any, TypeVar

import anyio
from python_multipart.multipart import parse_options_header
from starlette.datastructures import FormData
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive

from kb_core import LIMITS, KbError
from kb_core.bounds import Bound, digits_value
from kb_core.commands import check_path, check_unicode, dumps
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
    if length.isascii() and length.isdigit() and (digits_value(length) or limit + 1) > limit:
        raise too_large(limit, what, hint)
    return Request(request.scope, _limited(request.receive, limit, what, hint))


def int_param(request: Request, name: str, bound: Bound) -> int | None:
    """The query parameter ``name`` as a whole number within ``bound`` (None when absent), or a 400 naming the
    value and what is allowed."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if not _WHOLE_NUMBER.fullmatch(raw) or len(raw) > MAX_DIGITS:
        shown = raw if len(raw) <= MAX_DIGITS else raw[: MAX_DIGITS - 1] + "…"
        raise ApiError(400, f"{name} = {shown!r} is not {bound.allowed}")
    return int(checked(lambda: bound.check(int(raw), name)))


def field_within(body: dict[str, Any], name: str, bound: Bound) -> Any:
    """The JSON body's field ``name`` within ``bound`` (None: absent or null; 5.0 is the whole number 5), or a
    400 naming the value and what is allowed (a string, a bool, NaN, a huge number never are)."""
    value = body.get(name)
    if value is None:
        return None
    if bound.kind == "whole" and isinstance(value, float) and value.is_integer():
        value = int(value)  # (JSON Schema's integer: the OpenAPI document says "integer")
    return checked(lambda: bound.check(value, name))


def checked(check: Callable[[], T]) -> T:
    """``check()``, a KbError it raises (a bound, a limit of kb_core's) as a 400 with its line."""
    try:
        return check()
    except KbError as exc:
        raise ApiError(400, exc.message, hint=exc.hint) from None


class NameNotUtf8(MultiPartException):
    """A multipart file or field name that is not UTF-8."""


#: What to do about a file name that is not UTF-8.
RENAME_HINT = "rename the file so that its name is UTF-8 text (or send the name as UTF-8), then upload it again"


class StrictNames(MultiPartParser):
    """Starlette's multipart parser, but a file or field name that is not UTF-8 is refused (Starlette would read
    its bytes as Latin-1, and the file would be stored under that mojibake)."""

    def on_headers_finished(self) -> None:
        """Check the part's names as sent, then parse its headers as Starlette does."""
        _, options = parse_options_header(self._current_part.content_disposition)
        for key, what in ((b"filename", "file name"), (b"name", "form field name")):
            raw = options.get(key, b"")
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                shown = raw.decode("utf-8", "backslashreplace")[:80]
                raise NameNotUtf8(f"the {what} {shown!r} is not UTF-8 text") from None
        super().on_headers_finished()


@asynccontextmanager
async def strict_form(request: Request, max_files: int) -> AsyncIterator[FormData]:
    """The multipart form of ``request`` (its files closed after the block); a malformed body, or a name that
    is not UTF-8 (:class:`StrictNames`), is a 400."""
    try:
        async with aclosing(request.stream()) as stream:
            form = await StrictNames(request.headers, stream, max_files=max_files, max_fields=max_files).parse()
    except NameNotUtf8 as exc:
        raise ApiError(400, exc.message, hint=RENAME_HINT) from None
    except MultiPartException as exc:
        raise ApiError(400, exc.message, hint="send files as form parts: -F file=@notes.md") from None
    try:
        yield form
    finally:
        await form.close()


def path_param(value: str, what: str) -> str:
    """``value`` (a path, a prefix, an id), or a 400 past ``LIMITS.path_chars``, when not valid Unicode or when it
    holds a NUL (:func:`kb_core.commands.check_path`: what no store query is sent)."""
    return checked(lambda: check_path(value, what.removeprefix("the ")))


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
