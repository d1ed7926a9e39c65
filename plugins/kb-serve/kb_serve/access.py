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

import hashlib
import hmac
import secrets
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import attrs
from starlette.types import ASGIApp, Receive, Scope, Send

from kb_core import Document, IngestReport, KbError, KnowledgeBase, list_threads, stored_answer
from kb_core.plugin.stores import Access, AccessStore, ThreadSummary, current_access, restricted_to
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
    "record_owner",
]

T = TypeVar("T")
TOKEN_HINT = "send the header 'Authorization: Bearer <token>' with the token 'kb access users add' printed"
GRANT_HINT = "ask for a write grant: kb access grant GROUP PREFIX --write"


def hash_token(token: str) -> str:
    """How a person's token is kept: its SHA-256, hex (a token is 256 random bits: no salt or stretching needed)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A new person's token: 32 random bytes, URL-safe base64 (shown once, kept only as :func:`hash_token`)."""
    return "kbp_" + secrets.token_urlsafe(32)


def has_people(store: object) -> bool:
    """Whether ``store`` keeps people and holds at least one (a store that keeps none: never)."""
    return isinstance(store, AccessStore) and store.has_people()


def access_of(store: AccessStore, person: str) -> Access:
    """``person``'s :class:`Access`: the prefixes their groups may read, and those they may also write."""
    grants = store.grants_of(person)
    read = tuple(sorted({g.prefix for g in grants}))
    return Access(person, read, tuple(sorted({g.prefix for g in grants if g.write})))


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
            scheme, _, token = given.decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                return False, None
            assert isinstance(store, AccessStore)
            person = store.person_of_token(hash_token(token.strip()))
            return (False, None) if person is None else (True, access_of(store, person))

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


def check_readable(path: str, missing: Callable[[], Exception]) -> None:
    """Raise ``missing()`` (the route's own 404) when the asker may not read ``path``: absent, as far as they know."""
    access = current_access()
    if access is not None and not access.can_read(path):
        raise missing()


def check_writable(path: str) -> None:
    """A 403 when the asker may not write ``path`` (upload to it, delete it)."""
    access = current_access()
    if access is not None and not access.can_write(path):
        raise ApiError(403, f"{access.person!r} may not write {path[:200]!r}", hint=GRANT_HINT)


def readable_documents(kb: KnowledgeBase, prefix: str) -> list[Document]:
    """The stored documents under ``prefix`` the asker may read: one store query per readable prefix."""
    access = current_access()
    if access is None:
        return kb.store.list_documents(prefix=prefix)
    found: dict[str, Document] = {}
    for allowed in access.readable:
        narrowest = allowed if allowed.startswith(prefix) else prefix if prefix.startswith(allowed) else None
        if narrowest is not None:
            found.update((d.path, d) for d in kb.store.list_documents(prefix=narrowest))
    return [found[path] for path in sorted(found)]


def _people_store(kb: KnowledgeBase) -> AccessStore | None:
    return kb.store if isinstance(kb.store, AccessStore) else None


def check_owner(kb: KnowledgeBase, kind: str, item_id: str, missing: Callable[[], Exception]) -> None:
    """Raise ``missing()`` when the asker is a person who does not own the ``kind`` ``item_id``."""
    access, store = current_access(), _people_store(kb)
    if access is not None and (store is None or store.owner_of(kind, item_id) != access.person):
        raise missing()


def owned(kb: KnowledgeBase, kind: str) -> set[str] | None:
    """The ids of ``kind`` the asker owns, or None when the asker is not a person (every one)."""
    access, store = current_access(), _people_store(kb)
    if access is None:
        return None
    return set() if store is None else set(store.owned_by(kind, access.person))


def record_owner(kb: KnowledgeBase, kind: str, item_id: str) -> None:
    """Record the asker (a person) as the owner of the ``kind`` ``item_id``."""
    access, store = current_access(), _people_store(kb)
    if access is not None and store is not None:
        store.set_owner(kind, item_id, access.person)


def own_threads(kb: KnowledgeBase, limit: int) -> list[ThreadSummary]:
    """The newest ``limit`` threads the asker may see: all of them, or a person's own."""
    mine = owned(kb, "thread")
    if mine is None:
        return list_threads(kb.store, limit)
    return [t for t in list_threads(kb.store, None) if t.thread_id in mine][:limit]


def own_recheck(kb: KnowledgeBase, report: IngestReport) -> IngestReport:
    """``report`` with its re-check of stored answers (``answers``) as the asker may see it: a person is told of
    their own answers only (the ids, questions and counts of everyone else's answers citing a changed document
    stay theirs)."""
    mine, checked = owned(kb, "answer"), report.answers
    if mine is None or checked is None:
        return report
    changed = {*report.added, *report.updated, *report.removed}
    states: Counter[str] = Counter()
    for answer_id in sorted(mine):
        try:
            now = stored_answer(kb.store, answer_id)
        except KbError:  # (deleted since: not checked)
            continue
        if any(c.path in changed for c in now.citations):
            states[now.state or "valid"] += 1
    access = current_access()
    assert access is not None
    stale = tuple(
        attrs.evolve(a, citations=tuple(_current_if_readable(access, c) for c in a.citations))
        for a in checked.stale_answers
        if a.answer_id in mine
    )
    counts = {state: states[state] for state in ("valid", "reanchored", "stale", "unverifiable")}
    shown = attrs.evolve(checked, answers_checked=sum(states.values()), stale_answers=stale, **counts)
    return attrs.evolve(report, answers=shown)


def _current_if_readable(access: Access, citation: Any) -> Any:
    """A re-checked citation (``CitationNow``) without its current text when the asker can no longer read it."""
    return citation if access.can_read(citation.path) else attrs.evolve(citation, now_text=None)
