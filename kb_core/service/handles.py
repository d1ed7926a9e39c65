"""The knowledge-base handles behind a front end: readers in parallel, one writer, one asker.

A server opens several :class:`~kb_core.app.KnowledgeBase` handles (:meth:`Handles.pooled`): reads
borrow one of ``readers`` handles, each with its own SQLite connections (WAL mode and the indexes'
lock-free readers let them run while a write goes on); writes take the one writer handle, one at
a time; questions use one asking handle, so the language model is loaded once. All share one
embedder, whose query vectors are cached. A process that holds one open knowledge base (``kb
mcp``, ``kb ask``) lends that one handle to everything, one call at a time (:meth:`Handles.single`).
"""

from __future__ import annotations

import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from kb_core.app import KnowledgeBase


class CachingEmbedder:
    """An embedder that remembers the vectors of the last ``size`` queries (everything else is delegated).

    A server sees the same questions again (a FAQ, a retry, a UI that searches as one types); the
    query embedding is most of a search's time. Vectors of one model for one text never change.
    """

    def __init__(self, inner: Any, size: int = 2048) -> None:
        self.inner = inner
        self.size = size
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_query(self, text: str) -> list[float]:
        """The query's vector (a copy), computed once per distinct text while it stays among the recent ones."""
        with self._lock:
            vector = self._cache.get(text)
            if vector is not None:
                self._cache.move_to_end(text)
                self.hits += 1
                return list(vector)
        vector = list(self.inner.embed_query(text))
        with self._lock:
            self.misses += 1
            self._cache[text] = vector
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return list(vector)


def share_embedder(registry: Any, name: str, cache_size: int = 2048) -> Any:
    """A copy of ``registry`` whose embedder ``name`` is made once, shared by every KnowledgeBase, and
    caches query vectors (``cache_size`` 0: no cache)."""
    registration = registry.get("embedders", name)
    made: list[Any] = []
    lock = threading.Lock()

    def factory(context: Any) -> Any:
        with lock:
            if not made:
                inner = registration.factory(context)
                made.append(CachingEmbedder(inner, cache_size) if cache_size > 0 else inner)
            return made[0]

    items = {kind: dict(entries) for kind, entries in registry.items.items()}
    items["embedders"][name] = attrs.evolve(registration, factory=factory)
    return attrs.evolve(registry, items=items)


class HandlePool:
    """``size`` KnowledgeBase handles, each lent to one thread at a time."""

    def __init__(self, make: Callable[[], KnowledgeBase], size: int) -> None:
        self._free: queue.LifoQueue[KnowledgeBase] = queue.LifoQueue()
        self.handles = [make() for _ in range(size)]
        for handle in self.handles:
            self._free.put(handle)

    @contextmanager
    def borrow(self) -> Iterator[KnowledgeBase]:
        """A handle for the duration of the block."""
        handle = self._free.get()
        try:
            yield handle
        finally:
            self._free.put(handle)

    def close(self) -> None:
        """Close every handle."""
        for handle in self.handles:
            handle.close()


class Handles:
    """Where reads, writes and questions get their KnowledgeBase (see the module's docstring)."""

    def __init__(self, readers: HandlePool, writer: KnowledgeBase, asker: KnowledgeBase, one: bool) -> None:
        self.readers = readers
        self.writer = writer
        self.asker = asker
        self._one = one  # one handle for everything: every call holds the writer lock
        self._write_lock = threading.Lock()

    @classmethod
    def pooled(cls, make: Callable[[], KnowledgeBase], readers: int) -> Handles:
        """``readers`` reading handles, a writer and an asker, each made by ``make``."""
        return cls(HandlePool(make, readers), make(), make(), one=False)

    @classmethod
    def single(cls, kb: KnowledgeBase) -> Handles:
        """``kb`` (opened and closed by the caller) for everything, one call at a time."""
        return cls(HandlePool(lambda: kb, 1), kb, kb, one=True)

    @contextmanager
    def reading(self) -> Iterator[KnowledgeBase]:
        """A handle to read with for the block."""
        if self._one:
            with self._write_lock:
                yield self.writer
            return
        with self.readers.borrow() as kb:
            yield kb

    @contextmanager
    def writing(self) -> Iterator[KnowledgeBase]:
        """The writer handle, one write at a time."""
        with self._write_lock:
            yield self.writer

    @contextmanager
    def asking(self) -> Iterator[KnowledgeBase]:
        """The asking handle (the caller holds the generation gate's turn)."""
        if self._one:
            with self._write_lock:
                yield self.asker
            return
        yield self.asker

    def close_if_idle(self) -> bool:
        """Close every handle unless a call is using one (then False); a later call waits for ever (at exit)."""
        if not self._write_lock.acquire(blocking=False):
            return False
        self.close()  # the lock stays held: a call arriving now waits until the process ends
        return True

    def close(self) -> None:
        """Close every handle (once each)."""
        for handle in {id(h): h for h in (*self.readers.handles, self.writer, self.asker)}.values():
            handle.close()
