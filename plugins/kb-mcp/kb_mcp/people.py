"""``kb mcp`` over HTTP on a knowledge base with people: who each request is, and the 401 of nobody.

While the store of record holds no person, nothing here changes anything (HTTP on loopback, no token).
Once ``kb access users add`` has made one, every HTTP request must carry a person's token
(``Authorization: Bearer <token>``), or is answered 401, as ``kb serve`` answers it; each tool call then
runs under :func:`kb_core.plugin.stores.restricted_to` with that person's grants (resolved again from the
call's own request, so a token revoked mid-session stops working at once), and the tools apply
:mod:`kb_core.service.people`, the policy ``kb serve`` applies. Over stdio the caller is whoever started the
process, as on the command line: nothing is restricted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anyio
from mcp.types import INVALID_REQUEST, ErrorData, JSONRPCError
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from kb_core import KbError, KnowledgeBase
from kb_core.commands import error_line
from kb_core.plugin.stores import Access
from kb_core.service import people

#: What to do without a person's token.
TOKEN_HINT = "send the header 'Authorization: Bearer <token>' with the token 'kb access users add' printed"

#: ``work(kb)`` on the knowledge base (``AnswerService.read``).
Read = Callable[[Callable[[KnowledgeBase], Any]], Any]


class Unauthorized(Exception):
    """A request on a knowledge base with people that names no person (its one line says why)."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def caller(read: Read, authorization: str) -> Access | None:
    """The :class:`Access` of the person ``authorization`` (an ``Authorization`` header's value) names, or None
    while the knowledge base has no people (nothing restricted); :class:`Unauthorized` when it has and the header
    names nobody."""

    def look(kb: KnowledgeBase) -> tuple[bool, Access | None]:
        if not people.has_people(kb.store):
            return True, None
        access = people.access_of_token(kb.store, authorization)
        return access is not None, access

    allowed, access = read(look)
    if not allowed:
        said = "the bearer token is wrong" if authorization else "a bearer token is required"
        raise Unauthorized(error_line(KbError(said, hint=TOKEN_HINT)))
    return access


def authorization_of(headers: Mapping[str, str] | None) -> str | None:
    """The ``Authorization`` header among a tool call's request ``headers`` ("" when absent); None for a call
    that came by no HTTP request (stdio)."""
    if headers is None:
        return None
    return next((value for name, value in headers.items() if name.lower() == "authorization"), "")


class PeopleAuth:
    """ASGI middleware: on a knowledge base with people, a request without a person's token is a 401 (a
    JSON-RPC error, ``WWW-Authenticate: Bearer``) before the SDK reads it."""

    def __init__(self, app: ASGIApp, read: Read) -> None:
        self.app = app
        self.read = read

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request's token, then hand it on unchanged."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = Headers(scope=scope).get("authorization", "")
        try:
            await anyio.to_thread.run_sync(lambda: caller(self.read, given))
        except Unauthorized as refused:
            body = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=refused.line))
            headers = {"WWW-Authenticate": 'Bearer realm="kb"'}
            response = Response(
                body.model_dump_json(by_alias=True, exclude_unset=True),
                status_code=401,
                media_type="application/json",
                headers=headers,
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
