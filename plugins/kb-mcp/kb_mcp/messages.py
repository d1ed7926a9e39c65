"""Every JSON-RPC message is checked before the SDK reads it, on stdio and over HTTP: each one the SDK would
drop (on stdio it answers nothing, and a client waits for ever) gets an error reply instead.

* a line or body that is not UTF-8, or not JSON: ``-32700`` (parse error);
* a string in it that is not valid Unicode (a ``\\ud800`` escape without its pair, which no UTF-8 text can
  hold): ``-32602`` (invalid params) with the message's id and :func:`kb_core.commands.check_unicode`'s line;
* JSON that is no JSON-RPC message (``[1]``, ``{"id": 1}``): ``-32600`` (invalid request).

The id is echoed when the message has a usable one (a whole number or a string), else it is ``null``. A
notification (no id) whose params are refused gets no reply (JSON-RPC's rule); the SDK then drops it.

A message the SDK's own parser takes (which refuses a lone surrogate too) passes after that one parse; only
a refused one is parsed again, with :mod:`json`, to say why.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import kb_core
from kb_core.bounds import digits_value
from kb_core.commands import check_unicode

log = logging.getLogger("kb_mcp")
MAX_ID_CHARS = 200


def refusal(raw: bytes) -> JSONRPCError | None:
    """The error answering ``raw`` (a line of stdio or an HTTP body, one message) when the SDK cannot take it;
    None when it can, or when it is a notification whose only fault is text that is not valid Unicode."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = f"byte {exc.start + 1} is 0x{raw[exc.start]:02x}"
        return _error(_id_in(raw), PARSE_ERROR, f"Parse error: the message is not valid UTF-8 ({where})")
    try:
        jsonrpc_message_adapter.validate_json(text, by_name=False)
        return None  # what the SDK reads (its parser refuses a lone surrogate: the message holds none)
    except ValidationError as exc:
        json_ok = not any(error["type"] == "json_invalid" for error in exc.errors())
    # Refused: parsed again, only now, to say why.
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):  # (not JSON, too many digits, too deep)
        return _error(None, PARSE_ERROR, "Parse error: the message is not JSON")
    wanted = isinstance(message, dict) and "id" in message  # a request (or a response), not a notification
    try:
        check_unicode(message, "message")
    except kb_core.KbError as exc:
        return _error(_usable_id(message), INVALID_PARAMS, f"Invalid params: {exc}") if wanted else None
    if not json_ok:  # JSON to Python, not to the SDK (nested too deep for it)
        return _error(_usable_id(message), PARSE_ERROR, "Parse error: the message is not strict JSON")
    return _error(_usable_id(message), INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message")


def _error(request_id: int | str | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def _usable_id(message: Any) -> int | str | None:
    """The message's id when JSON-RPC allows it and it can be sent back, else None."""
    found = message.get("id") if isinstance(message, dict) else None
    if isinstance(found, bool) or not isinstance(found, int | str):
        return None
    if isinstance(found, str):
        try:
            check_unicode(found)
        except kb_core.KbError:
            return None
        return found if len(found) <= MAX_ID_CHARS else None
    return found


def _id_in(raw: bytes) -> int | str | None:
    """The id of a message that is not UTF-8, read with its bad bytes replaced (None when it cannot be)."""
    try:
        return _usable_id(json.loads(raw.decode("utf-8", "replace")))
    except (ValueError, RecursionError):
        return None


async def answered(lines: AsyncIterable[bytes], write: Any) -> AsyncIterator[str]:
    """The lines of ``lines`` the SDK can read, decoded; each other one is answered on ``write`` (the transport's
    write stream), not passed on. Blank lines are skipped."""
    async for raw in lines:
        if not raw.strip():
            continue
        error = refusal(raw.strip())
        if error is None:
            yield raw.decode("utf-8")
            continue
        log.info("refused a message: %s", error.error.message)
        try:
            await write.send(SessionMessage(error))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return


class CheckedBodies:
    """ASGI middleware for the streamable HTTP transport: a message POSTed to ``path`` that :func:`refusal`
    refuses is answered with its JSON-RPC error (HTTP 400), as the SDK answers a body it cannot parse, and one
    past ``max_bytes`` (the SDK's limit) with ``-32600`` (HTTP 413; the SDK's own 413 is plain text); others
    pass on unchanged."""

    def __init__(self, app: ASGIApp, path: str, max_bytes: int) -> None:
        self.app = app
        self.path = path
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check a POST's body, then answer it or hand it on with the body replayed."""
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        too_large = _error(None, INVALID_REQUEST, f"Invalid request: the message is larger than {self.max_bytes} bytes")
        length = Headers(scope=scope).get("content-length", "")
        if length.isascii() and length.isdigit() and (digits_value(length) or self.max_bytes + 1) > self.max_bytes:
            await _answer(too_large, 413, scope, receive, send)
            return
        received: list[Message] = []
        size, complete = 0, False
        while not complete:
            message = await receive()
            received.append(message)
            if message["type"] != "http.request":  # the client left: the app hears it
                break
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await _answer(too_large, 413, scope, receive, send)
                return
            complete = not message.get("more_body", False)
        error = refusal(b"".join(m.get("body", b"") for m in received)) if complete else None
        if error is not None:
            await _answer(error, 400, scope, receive, send)
            return

        async def replay() -> Message:
            return received.pop(0) if received else await receive()

        await self.app(scope, replay, send)


async def _answer(error: JSONRPCError, status: int, scope: Scope, receive: Receive, send: Send) -> None:
    log.info("refused a message: %s", error.error.message)
    body = error.model_dump_json(by_alias=True, exclude_unset=True)
    await Response(body, status_code=status, media_type="application/json")(scope, receive, send)
