"""The knowledge base behind the server: kb_core's answer service, and what only the HTTP API does.

Reads, writes and questions go through :class:`kb_core.service.AnswerService` (readers in
parallel, one writer, one generation at a time with ``ask_queue`` more waiting, the rest a 503),
which shows answers without local paths. This module adds the uploads folder, deletion, the
health counts and the ingest report as responses show it.
"""

from __future__ import annotations

import logging
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

import attrs

import kb_core
from kb_core import (
    Answer,
    AskOptions,
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
from kb_core.plugin.stores import current_access, follow_feed
from kb_core.service import AnswerService
from kb_serve import uploads
from kb_serve.access import (
    check_owner,
    check_readable,
    check_writable,
    own_recheck,
    readable_documents,
)
from kb_serve.errors import ApiError, public_text
from kb_serve.settings import ServeSettings

T = TypeVar("T")
log = logging.getLogger("kb_serve")


def _feed_trouble(exc: BaseException) -> None:
    """What keeps this server's indexes from following the store's feed (they catch up at the next search)."""
    log.warning("following the store's changes: %s", exc)


class KbService:
    """The operations of the HTTP API over one knowledge base directory."""

    def __init__(self, config: Config, settings: ServeSettings, registry: Any = None) -> None:
        self.config = config
        self.settings = settings
        self.answers = AnswerService.serving(
            config,
            registry,
            readers=settings.readers,
            ask_queue=settings.ask_queue,
            ask_wait_s=settings.ask_wait_s,
            query_cache=settings.query_cache,
            hide_paths=True,
        )
        self.registry = self.answers.registry
        self.gate = self.answers.gate
        self.uploads = uploads.uploads_folder(config.kb_path)
        self.started = time.time()
        self._warm = False
        # a store other kb processes write too (PostgreSQL): this folder's indexes follow its change feed
        self.follower = self.answers.read(lambda kb: follow_feed(kb, _feed_trouble))

    def warm(self) -> None:
        """Load the embedder, open every reader's indexes and start loading the language model (in the
        background), so the first request is as fast as the next."""
        if self._warm:
            return
        self.answers.warm()
        with suppress(KbError), self.answers.asker() as kb:  # (search works without a language model)
            llm = kb.language_model()
            if isinstance(llm, Preloadable):
                llm.preload()
        self._warm = True

    def close(self) -> None:
        """Close every handle."""
        if self.follower is not None:
            self.follower.stop()
        self.answers.close()

    # -- reads ---------------------------------------------------------------------------------

    def list_documents(self, prefix: str = "") -> list[Document]:
        """Stored documents whose path starts with ``prefix`` (source folders as :meth:`public_path` shows them)."""
        documents = self.read(lambda kb: readable_documents(kb, prefix))  # (a person's: their folders only)
        shown = {root: self.public_path(root) for root in {d.source_root for d in documents}}
        return [attrs.evolve(d, source_root=shown[d.source_root]) for d in documents]

    def public_path(self, path: str) -> str:
        """A local path as responses show it: relative to the knowledge base folder, or "" when outside it."""
        return self.answers.showing.path(path)

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

    def read(self, work: Callable[[KnowledgeBase], T]) -> T:
        """``work(kb)`` on a borrowed reader handle (a read of the store: a document's text, stored answers)."""
        return self.answers.read(work)

    def search(self, query: SearchQuery) -> SearchResponse:
        """Search the knowledge base (as `kb search`)."""
        return self.read(lambda kb: kb_core.search(kb, query))

    def health(self) -> dict[str, Any]:
        """Counts and state for ``health.v1``: a person's counts are of the documents they may read."""

        def counts(kb: KnowledgeBase) -> tuple[int, int]:
            if current_access() is None:
                return kb.store.count_documents(), kb.store.count_chunks()
            readable = readable_documents(kb, "")
            return len(readable), sum(d.chunk_count for d in readable)

        documents, chunks = self.read(counts)
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
        with self.answers.handles.writing() as kb:
            yield kb

    def upload(self, files: Sequence[tuple[str, bytes]]) -> IngestReport:
        """Write the files into the uploads folder and ingest them; a file that fails keeps what was there."""
        extensions = self.extensions()
        names = [uploads.safe_name(name, extensions) for name, _ in files]
        for name in names:
            check_writable(name)  # (a person's: a 403 outside their write grants, before anything is written)
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
            return self.public_report(own_recheck(kb, report))  # (a person's: their own answers only)

    def write(self, work: Callable[[KnowledgeBase], T]) -> T:
        """``work(kb)`` on the writer handle, one write at a time (a change to the store: a thread deleted)."""
        return self.answers.write(work)

    def delete(self, path: str) -> list[str]:
        """Remove a document (or, for a path ending in '/', a folder); uploaded files are deleted too."""
        with self._writing() as kb:
            root = str(self.uploads.resolve())
            owners = kb.store.document_owners()
            clean = unicodedata.normalize("NFC", path.strip())
            check_readable(clean, lambda: ApiError(404, f"no document at {clean!r}", hint="GET /documents lists them"))
            check_writable(clean)
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
        """Answer a question (after the gate's ``admit``), as the service does: ``gone`` stops it (nothing stored).
        A person's answer is theirs (the core records it in the transaction that stores the answer)."""
        return self.answers.ask(question, options, on_token, gone, admitted=True)

    def check_thread(self, thread_id: str) -> None:
        """A 404 (kb_core's NotFoundError, as for a thread that does not exist) when the asker may not see it."""

        def missing() -> Exception:
            return kb_core.NotFoundError(f"no thread {thread_id[:40]!r}", hint="GET /threads lists the threads")

        self.read(lambda kb: check_owner(kb, "thread", thread_id, missing))

    def ask_in_thread(
        self,
        question: str,
        thread_id: str | None,
        options: AskOptions,
        on_token: Callable[[str], None] | None = None,
        gone: threading.Event | None = None,
        on_standalone: Callable[[Any], None] | None = None,
    ) -> Turn:
        """Ask ``question`` in the thread ``thread_id`` (None: a new one) and keep the turn, as :meth:`ask` does.
        A person asks only in their own threads; a new one, and the answer, are theirs (recorded by the core with
        the turn)."""
        if thread_id is not None:
            self.check_thread(thread_id)
        return self.answers.ask_in_thread(question, thread_id, options, on_token, gone, on_standalone, admitted=True)
