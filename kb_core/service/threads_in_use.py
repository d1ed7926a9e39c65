"""The threads a question is waiting or being answered in, and those being deleted: never both at once.

A thread is not deleted while a question is under way in it (the turn would land in a thread
deleted under it), and no question starts in a thread being deleted.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from kb_core.errors import KbError

THREADS_HINT = "list the threads to see which there are"


class ThreadInUse(KbError):
    """A thread cannot be deleted (a question is under way in it) or asked in (it is being deleted) now."""


class ThreadsInUse:
    """Marks threads in use by questions and by deletions (see the module's docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asking: Counter[str] = Counter()
        self._deleting: set[str] = set()

    def enter(self, thread_id: str | None) -> None:
        """Mark ``thread_id`` in use by a question (None: a new thread, which nobody can delete yet)."""
        if thread_id is None:
            return
        with self._lock:
            if thread_id in self._deleting:
                raise ThreadInUse("this thread is being deleted", hint=THREADS_HINT)
            self._asking[thread_id] += 1

    def leave(self, thread_id: str | None) -> None:
        """The question :meth:`enter` marked is done."""
        if thread_id is None:
            return
        with self._lock:
            self._asking[thread_id] -= 1
            if self._asking[thread_id] <= 0:
                del self._asking[thread_id]

    @contextmanager
    def asking(self, thread_id: str | None) -> Iterator[None]:
        """Mark ``thread_id`` in use for the block (:meth:`enter`, then :meth:`leave`)."""
        self.enter(thread_id)
        try:
            yield
        finally:
            self.leave(thread_id)

    @contextmanager
    def deleting(self, thread_id: str) -> Iterator[None]:
        """Mark ``thread_id`` as being deleted for the block; :class:`ThreadInUse` while a question is under way."""
        with self._lock:
            if self._asking[thread_id] or thread_id in self._deleting:
                raise ThreadInUse(
                    "a question is being answered in this thread (or it is being deleted)",
                    hint="delete it once the answer is done (or stopped)",
                )
            self._deleting.add(thread_id)
        try:
            yield
        finally:
            with self._lock:
                self._deleting.discard(thread_id)
