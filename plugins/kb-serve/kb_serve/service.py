"""The knowledge base behind the server: reads in parallel, writes one at a time, one generation at a time.

* **Reads** (search, list, health) borrow one of ``readers`` KnowledgeBase handles, each with its
  own SQLite connections; SQLite's WAL mode and Tantivy's lock-free readers let them run while
  an ingest writes.
* **Writes** (upload, delete, a thread deleted) go through one writer handle under a lock, so
  uploads queue instead of failing on kb's writer lock.
* **Asks** (questions, and questions in threads) use one handle of their own, so the language
  model is loaded once; a lock lets one generation run at a time, ``ask_queue`` more may wait,
  and one more is refused with a 503.

All handles share one embedder (loaded once, at start-up).
"""

from __future__ import annotations

import queue
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import attrs

import kb_core
from kb_core import (
    Answer,
    AskOptions,
    Cancelled,
    Config,
    Document,
    IngestReport,
    IngestWarning,
    KbError,
    KnowledgeBase,
    SearchQuery,
    SearchResponse,
    Turn,
)
from kb_core.plugin import Preloadable
from kb_serve import uploads
from kb_serve.errors import ApiError, cut_paths, public_text
from kb_serve.settings import ServeSettings

T = TypeVar("T")
#: Seconds between two looks, while a question waits for the model, at whether its client is still there.
POLL_S = 0.1


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


class GenerationGate:
    """One generation at a time; at most ``waiting`` callers wait for it, each for at most ``wait_s``."""

    def __init__(self, waiting: int, wait_s: float) -> None:
        self.limit = waiting
        self.wait_s = wait_s
        self._lock = threading.Lock()
        self._count = threading.Lock()
        self.waiting = 0
        self.busy = False

    def admit(self) -> None:
        """Take a place in the queue, or raise a 503 when it is full."""
        with self._count:
            if self.waiting + self.busy > self.limit:  # one generating plus ``limit`` waiting
                raise ApiError(
                    503,
                    f"the language model is busy and {self.waiting} question(s) are waiting",
                    hint="retry in a moment (the server answers one question at a time)",
                    busy=True,
                )
            self.waiting += 1

    @contextmanager
    def turn(self, gone: threading.Event | None = None) -> Iterator[None]:
        """Wait (after :meth:`admit`) for the model; 503 after ``wait_s``; Cancelled once ``gone`` is set.
        The place in the queue is given back in every case."""
        deadline = time.monotonic() + self.wait_s
        acquired = False
        while not acquired and not (gone is not None and gone.is_set()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            acquired = self._lock.acquire(timeout=left if gone is None else min(left, POLL_S))
        with self._count:
            self.waiting -= 1
            if acquired:
                self.busy = True
        if not acquired:
            if gone is not None and gone.is_set():
                raise Cancelled("the client left while waiting for the language model")
            raise ApiError(503, f"waited {self.wait_s:g} s for the language model", hint="retry later", busy=True)
        try:
            yield
        finally:
            with self._count:
                self.busy = False
            self._lock.release()


class KbService:
    """The operations of the HTTP API over one knowledge base directory."""

    def __init__(self, config: Config, settings: ServeSettings, registry: Any = None) -> None:
        self.config = config
        self.settings = settings
        base = registry if registry is not None else KnowledgeBase(config).registry
        self.registry = share_embedder(base, config.models.embedding.name, settings.query_cache)
        KnowledgeBase(config, self.registry, create=True).close()  # make the store if it is new
        self.uploads = uploads.uploads_folder(config.kb_path)
        self.readers = HandlePool(self._handle, settings.readers)
        self._writer = self._handle()
        self._write_lock = threading.Lock()
        self._asker = self._handle()
        self.gate = GenerationGate(settings.ask_queue, settings.ask_wait_s)
        self._kb_dir = config.kb_path.resolve()
        self.started = time.time()
        self._warm = False

    def _handle(self) -> KnowledgeBase:
        return KnowledgeBase(self.config, self.registry, create=False)

    def warm(self) -> None:
        """Load the embedder, open every reader's indexes and start loading the language model (in the
        background), so the first request is as fast as the next."""
        if self._warm:
            return
        for handle in self.readers.handles:
            for name in handle.enabled_index_names():
                handle.index(name)
            handle.store.count_documents()
        self.readers.handles[0].embedder().embed_query("warm up")
        with suppress(KbError):  # (search works without a language model; asking says why)
            llm = self._asker.language_model()
            if isinstance(llm, Preloadable):
                llm.preload()
        self._warm = True

    def close(self) -> None:
        """Close every handle."""
        self.readers.close()
        self._writer.close()
        self._asker.close()

    # -- reads ---------------------------------------------------------------------------------

    def list_documents(self, prefix: str = "") -> list[Document]:
        """Stored documents whose path starts with ``prefix`` (source folders as :meth:`public_path` shows them)."""
        with self.readers.borrow() as kb:
            documents = kb.store.list_documents(prefix=prefix)
        shown = {root: self.public_path(root) for root in {d.source_root for d in documents}}
        return [attrs.evolve(d, source_root=shown[d.source_root]) for d in documents]

    def public_path(self, path: str) -> str:
        """A local path as responses show it: relative to the knowledge base folder, or "" when outside it
        (a document ingested from the user's own folder does not reveal where that folder is)."""
        if not path or not Path(path).is_absolute():
            return path
        try:
            return Path(path).resolve().relative_to(self._kb_dir).as_posix()
        except (ValueError, OSError):
            return ""

    def public_report(self, report: IngestReport) -> IngestReport:
        """``report`` without absolute local paths: roots relative to the knowledge base folder."""

        def warning(item: IngestWarning) -> IngestWarning:
            path = self.public_path(item.path) or public_text(item.path)
            return IngestWarning(path, public_text(item.reason))

        return attrs.evolve(
            report,
            roots=[self.public_path(root) for root in report.roots],
            failed=[warning(w) for w in report.failed],
            warnings=[warning(w) for w in report.warnings],
            indexes=[attrs.evolve(s, skipped_reason=public_text(s.skipped_reason)) for s in report.indexes],
        )

    @staticmethod
    def public_answer(answer: Answer) -> Answer:
        """``answer`` without the local files of its models (``model.path``, ``embedding.path``: null)."""
        return attrs.evolve(
            answer,
            model=answer.model and attrs.evolve(answer.model, path=None),
            embedding=answer.embedding and attrs.evolve(answer.embedding, path=None),
            note=cut_paths(answer.note),
        )

    def read(self, work: Callable[[KnowledgeBase], T]) -> T:
        """``work(kb)`` on a borrowed reader handle (a read of the store: a document's text, stored answers)."""
        with self.readers.borrow() as kb:
            return work(kb)

    def search(self, query: SearchQuery) -> SearchResponse:
        """Search the knowledge base (as `kb search`)."""
        with self.readers.borrow() as kb:
            return kb_core.search(kb, query)

    def health(self) -> dict[str, Any]:
        """Counts and state for ``health.v1``."""
        with self.readers.borrow() as kb:
            documents, chunks = kb.store.count_documents(), kb.store.count_chunks()
        return {
            "status": "ok",
            "version": kb_core.__version__,
            "documents": documents,
            "chunks": chunks,
            "indexes": list(self.config.indexes.enabled),
            "backend": self.config.models.llm.backend,
            "auth": bool(self.settings.token),
            "generation": {"busy": self.gate.busy, "waiting": self.gate.waiting, "queue": self.gate.limit},
            "uptime_s": round(time.time() - self.started, 1),
        }

    # -- writes --------------------------------------------------------------------------------

    def extensions(self) -> list[str]:
        """The file extensions the installed parsers read."""
        found: set[str] = set()
        for registration in self.registry.items["parsers"].values():
            found.update(e.lower() for e in registration.info.get("extensions", ()))
        return sorted(found)

    @contextmanager
    def _writing(self) -> Iterator[KnowledgeBase]:
        """The writer handle, one write at a time; another process writing (kb's writer lock, or SQLite's lock held
        past its timeout) is a :class:`kb_core.WriterBusyError`, which the API answers with 503 and ``Retry-After``."""
        with self._write_lock:
            yield self._writer

    def upload(self, files: Sequence[tuple[str, bytes]]) -> IngestReport:
        """Write the files into the uploads folder and ingest them; a file that fails keeps what was there."""
        extensions = self.extensions()
        names = [uploads.safe_name(name, extensions) for name, _ in files]
        if len(set(names)) != len(names):
            raise ApiError(400, "the same file name appears twice in one upload", hint="send each file once")
        with self._writing() as kb:
            # under the writer: what the uploads folder holds cannot change before the files are written
            names = uploads.check_names(self.uploads, names, extensions, self.config.ingest.ignore)
            owners = kb.store.document_owners()
            root = str(self.uploads.resolve()) if self.uploads.exists() else None
            for name in names:
                if name in owners and owners[name] != root:
                    raise ApiError(  # (not naming the folder: responses carry no local paths)
                        409,
                        f"a document {name!r} already exists, ingested from a folder other than the uploads",
                        hint="upload it under another name, or delete the stored one first",
                    )
            written = uploads.write_files(self.uploads, list(zip(names, (data for _, data in files), strict=True)))
            try:
                rooted = str(self.uploads.resolve()) in kb.store.source_roots()
                targets = [w.path for w in written] if rooted else [self.uploads]
                report = kb_core.ingest_paths(kb, targets)
            except BaseException:
                uploads.undo(written)
                raise
            failed = {w.path for w in report.failed}
            uploads.undo(w for w in written if w.name in failed)
            return self.public_report(report)

    def write(self, work: Callable[[KnowledgeBase], T]) -> T:
        """``work(kb)`` on the writer handle, one write at a time (a change to the store: a thread deleted)."""
        with self._writing() as kb:
            return work(kb)

    def delete(self, path: str) -> list[str]:
        """Remove a document (or, for a path ending in '/', a folder); uploaded files are deleted too."""
        with self._writing() as kb:
            root = str(self.uploads.resolve())
            owners = kb.store.document_owners()
            clean = unicodedata.normalize("NFC", path.strip())
            if not (clean.endswith("/") and kb.store.list_documents(prefix=clean)) and clean not in owners:
                raise ApiError(404, f"no document at {clean!r}", hint="GET /documents lists the stored paths")
            removed = kb_core.remove_documents(kb, [path])
            uploads.remove_files(self.uploads, [p for p in removed if owners.get(p) == root])
            return removed

    # -- asks ----------------------------------------------------------------------------------

    def ask(
        self,
        question: str,
        options: AskOptions,
        on_token: Callable[[str], None] | None = None,
        gone: threading.Event | None = None,
    ) -> Answer:
        """Answer a question (after :meth:`GenerationGate.admit`): waits for its turn at the model. ``gone``: set
        when the client has left; the question then leaves the queue, or its generation stops at the next token,
        with :class:`kb_core.Cancelled` (nothing is stored)."""
        answer = self._generate(lambda kb, token: kb_core.ask(kb, question, options, on_token=token), on_token, gone)
        return self.public_answer(answer)

    def ask_in_thread(
        self,
        question: str,
        thread_id: str | None,
        options: AskOptions,
        on_token: Callable[[str], None] | None = None,
        gone: threading.Event | None = None,
        on_standalone: Callable[[Any], None] | None = None,
    ) -> Turn:
        """Ask ``question`` in the thread ``thread_id`` (None: a new one) and keep the turn, as :meth:`ask` does;
        ``on_standalone`` hears what kb searches with (kb_core's ``Standalone``) before retrieval and any token."""

        def work(kb: KnowledgeBase, token: Callable[[str], None]) -> Turn:
            return kb_core.ask_in_thread(kb, question, thread_id, options, on_token=token, on_standalone=on_standalone)

        turn = self._generate(work, on_token, gone)
        return attrs.evolve(turn, answer=self.public_answer(turn.answer))

    def _generate(
        self,
        work: Callable[[KnowledgeBase, Callable[[str], None]], T],
        on_token: Callable[[str], None] | None,
        gone: threading.Event | None,
    ) -> T:
        """``work(kb, token)`` on the asking handle once it is this question's turn at the model."""

        def token(text: str) -> None:
            if gone is not None and gone.is_set():
                raise Cancelled("the client left; the answer was stopped")
            if on_token is not None:
                on_token(text)

        with self.gate.turn(gone):
            if gone is not None and gone.is_set():
                raise Cancelled("the client left before its turn")
            return work(self._asker, token)
