"""A folder's indexes following a shared store's change feed (:class:`~kb_core.extend.record_store.SharedRecordStore`).

With a shared store (PostgreSQL), documents are written by any kb process, on any machine; each knowledge
base folder keeps its own indexes and brings them up to date from the feed on its own:

- :func:`catch_up` before every search (``kb search``, ``kb ask``, a server's request): when an index is
  behind the feed, it applies what is pending, unless another process of this folder is doing it now;
- :func:`follow_feed` in a server: a thread that waits for the feed to move (the store's LISTEN/NOTIFY)
  and applies each change as it comes, so a document ingested on another server is found at once.

``writer.lock`` (:func:`folder_lock`) keeps one process at a time updating a folder's indexes. With the
SQLite store nothing here runs: its one writer brings the indexes up to date itself.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from kb_core.app import KnowledgeBase
from kb_core.bounds import FOLLOW_BACKOFF_S
from kb_core.errors import KbError
from kb_core.extend.record_store import SharedRecordStore
from kb_core.ingest.index_sync import sync_all
from kb_core.storage.sqlite_files import make_private_dir

LOCK_NAME = "writer.lock"
#: How long a follower waits for the feed to move before it checks again (and renews its folder's lease).
FOLLOW_WAIT_S = 10.0


def shared_store(kb: KnowledgeBase) -> SharedRecordStore | None:
    """``kb``'s store when several processes write it (it follows the feed on its own), else None."""
    store = kb.store
    return store if isinstance(store, SharedRecordStore) else None


@contextmanager
def folder_lock(kb: KnowledgeBase, *, wait: bool) -> Iterator[bool]:
    """Hold the folder's ``writer.lock`` for the block (wait for it, or not); yields whether it is held.

    Not held: another process (or handle) holds it, or the folder cannot be written."""
    try:
        make_private_dir(kb.directory)
        descriptor = os.open(kb.directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    except (OSError, KbError):
        yield False
        return
    with os.fdopen(descriptor, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def behind(kb: KnowledgeBase, store: SharedRecordStore) -> bool:
    """Whether an enabled index of this folder has not applied the whole feed (or was never built)."""
    latest = store.last_seq()
    for name in kb.enabled_index_names():
        applied, recorded = store.index_state(name)
        if applied < latest or (latest and not recorded):
            return True
    return False


def catch_up(kb: KnowledgeBase, *, wait: bool = False) -> bool:
    """Apply the feed's pending changes to this folder's indexes when the store is shared and they are behind.

    Without ``wait``, a search does not queue behind another process updating the same folder (it searches
    what is there; that process is applying the same changes). True when it synced."""
    store = shared_store(kb)
    if store is None or not behind(kb, store):
        return False
    with folder_lock(kb, wait=wait) as held:
        if held:
            sync_all(kb)
    return held


class FeedFollower:
    """A thread keeping one folder's indexes in step with a shared store's feed (see :func:`follow_feed`).

    Whatever fails in a round (a lost server, an index's error, a bug) is handed to ``on_error`` and the thread goes
    on; after a failure, or a round that applied nothing while the indexes stay behind (the feed's wait would then
    return at once), it waits :data:`~kb_core.bounds.FOLLOW_BACKOFF_S` (doubled each time) before the next round."""

    def __init__(self, make_kb: Callable[[], KnowledgeBase], on_error: Callable[[BaseException], None]) -> None:
        self._make_kb = make_kb
        self._on_error = on_error
        self._stop = threading.Event()
        self.synced = 0  # how many times it applied changes (for tests and benches)
        self.failures = 0  # how many rounds failed or stood still (for tests and benches)
        self._thread = threading.Thread(target=self._run, name="kb-feed-follower", daemon=True)

    def start(self) -> FeedFollower:
        """Start following."""
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            kb = self._make_kb()
        except BaseException as exc:  # (reported; a server keeps answering from what its indexes hold)
            self._on_error(exc)
            return
        with kb:
            store = shared_store(kb)
            applied, backoff, stalled = -1, FOLLOW_BACKOFF_S.low, False
            while store is not None and not self._stop.is_set():
                try:
                    moved, applied = self._round(kb, store, applied)
                except Exception as exc:  # a lost server, an index's error, a bug: say so, wait, try again
                    self._report(exc)
                    moved = False
                else:
                    if not moved and not stalled:  # (said once until it moves again)
                        self._report(
                            KbError(
                                f"the indexes of {kb.directory} stay behind the store's changes (at change {applied})",
                                hint="check that the folder can be written; 'kb reindex' rebuilds them from the store",
                            )
                        )
                    stalled = not moved
                if moved:
                    backoff = FOLLOW_BACKOFF_S.low
                    continue
                self.failures += 1
                self._stop.wait(backoff)
                backoff = min(backoff * 2, FOLLOW_BACKOFF_S.high)

    def _round(self, kb: KnowledgeBase, store: SharedRecordStore, before: int) -> tuple[bool, int]:
        """Apply what is pending, then wait for the feed to move past what the indexes hold: (False when the indexes
        stay behind and this round applied nothing, the position they hold)."""
        if catch_up(kb, wait=True):
            self.synced += 1
        applied = min((store.index_state(n)[0] for n in kb.enabled_index_names()), default=0)
        if applied != before or store.last_seq() <= applied:  # moved, or nothing pending: wait for the feed
            store.wait_for_change(applied, FOLLOW_WAIT_S)
            return True, applied
        return False, applied  # (the feed's wait would return at once)

    def _report(self, exc: BaseException) -> None:
        with suppress(Exception):  # (a reporter that fails must not end the thread)
            self._on_error(exc)

    def stop(self) -> None:
        """Stop following (the wait in progress ends at its timeout at the latest; the thread is a daemon)."""
        self._stop.set()
        with suppress(RuntimeError):
            self._thread.join(0.1)


def follow_feed(kb: KnowledgeBase, on_error: Callable[[BaseException], None]) -> FeedFollower | None:
    """A started :class:`FeedFollower` of ``kb``'s folder when its store is shared (None otherwise), on a handle of
    its own (``kb``'s configuration and plugins). ``on_error`` hears of what holds it up (a lost server)."""
    if kb.config.store.backend == "sqlite" or shared_store(kb) is None:  # (the core's store: not opened for this)
        return None
    return FeedFollower(lambda: KnowledgeBase(kb.config, kb.registry), on_error).start()
