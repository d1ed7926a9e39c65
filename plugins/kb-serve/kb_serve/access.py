"""People on a server: who a request's bearer token names, and what each route lets them see.

**The switch.** While the store of record holds no person, nothing here changes anything: the single
token (``--token`` / ``KB_SERVE_TOKEN``), or none on loopback, opens everything, as before. Once
``kb access users add`` has made a person, every request except the page and its assets must carry a
person's token (``Authorization: Bearer <token>``) or the operator's ``--token`` (which still opens
everything: it is the server's, not a person's); anything else is a 401, on loopback too.

**Enforcement.** A person's request runs under :func:`kb_core.plugin.stores.restricted_to` with their
:class:`~kb_core.plugin.stores.Access` (their groups' grants), so every search made for it, the answer
pipeline's included, carries their read prefixes into every index's query. The routes then apply
the helpers below: a document, page image or citation outside the grants is a 404 (as if absent),
an upload or deletion outside the write grants a 403, and answers and threads are shown only to
the person who asked them (recorded with ``set_owner``).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from kb_core import KnowledgeBase
from kb_core.plugin.stores import Access, current_access, restricted_to
from kb_core.service import people
from kb_serve.errors import ApiError, error_response
from kb_serve.webpage import is_public

__all__ = [
    "PeopleAuth",
    "access_of",
    "check_owner",
    "check_readable",
    "check_writable",
    "hash_token",
    "new_token",
    "own_recheck",
    "own_threads",
    "owned",
    "readable_documents",
]

T = TypeVar("T")
TOKEN_HINT = "send the header 'Authorization: Bearer <token>' with the token 'kb access users add' printed"
GRANT_HINT = "ask for a write grant: kb access grant GROUP PREFIX --write"

# The policy is kb_core's (kb_core.service.people, which kb mcp applies too); these are its names here.
access_of = people.access_of
check_owner = people.check_owner
has_people = people.has_people
hash_token = people.hash_token
new_token = people.new_token
own_recheck = people.own_recheck
own_threads = people.own_threads
owned = people.owned
readable_documents = people.readable_documents


class PeopleAuth:
    """Pure ASGI middleware: the bearer token of today, and a person's token once people exist (module docstring).

    ``read(work)`` runs ``work(kb)`` on a reader handle (the service's)."""

    def __init__(self, app: ASGIApp, token: str | None, read: Callable[[Callable[[KnowledgeBase], Any]], Any]) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None
        self.read = read

    def resolve(self, given: bytes) -> tuple[bool, Access | None]:
        """(allowed, the person's Access or None for unrestricted) for the Authorization header ``given``."""

        def look(kb: KnowledgeBase) -> tuple[bool, Access | None]:
            store = kb.store
            if not has_people(store):
                return self.expected is None or hmac.compare_digest(given, self.expected), None
            if self.expected is not None and hmac.compare_digest(given, self.expected):
                return True, None  # the operator's token
            access = people.access_of_token(store, given.decode("latin-1"))
            return access is not None, access

        found: tuple[bool, Access | None] = self.read(look)
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_public(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        allowed, access = await anyio.to_thread.run_sync(lambda: self.resolve(given))
        if not allowed:
            message = "a bearer token is required" if not given else "the bearer token is wrong"
            await error_response(401, message, hint=TOKEN_HINT)(scope, receive, send)
            return
        with restricted_to(access):  # copied into every task and worker thread the request starts
            await self.app(scope, receive, send)


def check_writable(path: str) -> None:
    """A 403 when the asker may not write ``path`` (upload to it, delete it)."""
    access = current_access()
    if access is not None and not access.can_write(path):
        raise ApiError(403, f"{access.person!r} may not write {path[:200]!r}", hint=GRANT_HINT)


def check_readable(path: str, missing: Callable[[], Exception]) -> None:
    """Raise ``missing()`` (the route's own 404) when the asker may not read ``path``: absent, as far as they know."""
    if not people.may_read(path):
        raise missing()
