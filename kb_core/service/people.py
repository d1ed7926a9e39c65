"""People on a server: who a token names, and what each person may see. Every front end that knows its caller
(``kb serve``, ``kb mcp`` over HTTP) applies this one policy.

While the store of record holds no person, nothing here restricts anything. Once it holds one, a server
resolves each request's token with :func:`access_of_token` and runs the request under
:func:`kb_core.plugin.stores.restricted_to` with that person's :class:`~kb_core.plugin.stores.Access`: every
search made in it (the answer pipeline's, a thread's follow-ups) reads only their folders. What the helpers
below add is what a search does not cover: a document outside the grants is absent (:func:`may_read`,
:func:`readable_documents`), a write needs a write grant (:func:`may_write`), and answers and threads belong to
the person who asked them: the core records a person's answer, and a new thread, as theirs in the transaction
that stores it, and :func:`check_owner`, :func:`owned`, :func:`own_threads`, :func:`own_answers` and
:func:`own_recheck` show each person their own (the listings in the store's query). Outside any
``restricted_to`` (the command line, stdio, a single-user server) every helper lets everything through.
"""

from __future__ import annotations

import hashlib
import secrets
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import attrs

from kb_core.app import KnowledgeBase
from kb_core.extend.access_store import AccessStore
from kb_core.extend.record_store import ThreadSummary
from kb_core.extend.store_rows import now_iso
from kb_core.ingest.pipeline import IngestReport
from kb_core.retrieval.access import Access, current_access
from kb_core.storage.answers import StoredAnswer, list_answers
from kb_core.storage.cited import answer_state
from kb_core.storage.threads import list_threads
from kb_core.types import Document

__all__ = [
    "access_of",
    "access_of_token",
    "check_owner",
    "has_people",
    "hash_token",
    "may_read",
    "may_write",
    "new_token",
    "now_iso",
    "own_answers",
    "own_recheck",
    "own_threads",
    "owned",
    "readable_documents",
    "record_owner",
    "shown_citation",
]


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


def access_of_token(store: object, authorization: str) -> Access | None:
    """The :class:`Access` of the person whose token an ``Authorization`` header value (``Bearer <token>``)
    carries, or None when it names nobody (no bearer token, an unknown one, a store without people)."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip() or not isinstance(store, AccessStore):
        return None
    person = store.person_of_token(hash_token(token.strip()))
    return None if person is None else access_of(store, person)


def may_read(path: str) -> bool:
    """Whether the asker may read the document at ``path`` (anyone may, outside ``restricted_to``)."""
    access = current_access()
    return access is None or access.can_read(path)


def may_write(path: str) -> bool:
    """Whether the asker may write (upload to, delete) ``path`` (anyone may, outside ``restricted_to``)."""
    access = current_access()
    return access is None or access.can_write(path)


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
    """Raise ``missing()`` (the front end's "not found", as for an absent one) when the asker is a person who
    does not own the ``kind`` (``"answer"``, ``"thread"``) ``item_id``."""
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
    """Record the asker (a person) as the owner of the ``kind`` ``item_id`` (nothing outside ``restricted_to``)."""
    access, store = current_access(), _people_store(kb)
    if access is not None and store is not None:
        store.set_owner(kind, item_id, access.person)


def own_threads(kb: KnowledgeBase, limit: int) -> list[ThreadSummary]:
    """The newest ``limit`` threads the asker may see: all of them, or a person's own (in the store's query)."""
    access, store = current_access(), _people_store(kb)
    if access is None:
        return list_threads(kb.store, limit)
    return [] if store is None else kb.store.thread_summaries(limit, owner=access.person)


def own_answers(kb: KnowledgeBase, limit: int, *, stale_only: bool = False) -> tuple[list[StoredAnswer], int]:
    """The newest ``limit`` stored answers the asker may see (all, or a person's own, in the store's query) and how
    many there are (:func:`kb_core.list_answers`'s pair)."""
    access, store = current_access(), _people_store(kb)
    if access is None:
        return list_answers(kb.store, limit, stale_only=stale_only)
    if store is None:
        return [], 0
    return list_answers(kb.store, limit, stale_only=stale_only, owner=access.person)


def shown_citation(citation: Any) -> Any:
    """A re-checked citation (``CitationNow``) as the asker may see it: without its current text when they can no
    longer read its document."""
    return citation if may_read(citation.path) else attrs.evolve(citation, now_text=None)


def own_recheck(kb: KnowledgeBase, report: IngestReport) -> IngestReport:
    """``report`` with its re-check of stored answers (``answers``) as the asker may see it: a person is told of
    their own answers only (the ids, questions and counts of everyone else's answers citing a changed document
    stay theirs)."""
    mine, checked = owned(kb, "answer"), report.answers
    if mine is None or checked is None:
        return report
    changed = sorted({*report.added, *report.updated, *report.removed})
    cited: defaultdict[str, list[str]] = defaultdict(list)  # the asker's answers citing a changed document
    for row in kb.store.citations_citing(changed) if changed and mine else ():  # (one query, as the re-check's)
        if row.answer_id in mine:
            cited[row.answer_id].append(row.state)
    states = [answer_state(found) for found in cited.values()]
    stale = tuple(
        attrs.evolve(a, citations=tuple(shown_citation(c) for c in a.citations))
        for a in checked.stale_answers
        if a.answer_id in mine
    )
    counts = {state: states.count(state) for state in ("valid", "reanchored", "stale", "unverifiable")}
    shown = attrs.evolve(checked, answers_checked=len(states), stale_answers=stale, **counts)
    return attrs.evolve(report, answers=shown)
