"""Ingesting a folder's files through a shared store's queue: any number of workers, each file taken by one.

Every ``kb ingest`` of a folder on a shared store (:class:`~kb_core.extend.record_store.SharedRecordStore`)
walks it, queues its files (those queued or taken already stay as they are) and then takes files from the
queue until none is left, queued or held by a live worker. So two, or ten, ``kb ingest`` of one folder, on
one machine or several, share its files out: the store hands each file to one worker at a time (``FOR
UPDATE SKIP LOCKED`` in PostgreSQL), for a lease its taker renews while it works.

A file is read and parsed outside any transaction; its document is then written, and its job finished, in
one transaction, and only while the job is still the worker's. A worker killed mid-file leaves nothing of
it stored; when its lease runs out another worker takes the file again, alone (a worker that has run out of
files waits for the files other workers hold, so the last one standing finishes them).

A file that cannot be used is that file's failure, reported, its job finished, as with the SQLite store: bytes
that are not text, a parser's error, a chunker's error, a document the store refuses (a
:class:`~kb_core.errors.KbError` of another exit code than ``EXIT_STORAGE``: the batch is then written again one
file per transaction, without it). Any other failure while a batch is being read or written (a lost server, a busy
feed lock, a bug, Ctrl-C) returns the batch to the queue untaken (``return_files``: its takings not counted, its
leases no longer renewed) before the ingest stops with it, so no worker, this process's next ingest included,
waits for those files.

A container (an mbox) is written part by part, each batch of parts in a transaction of its own, by whoever holds
its job; its own document, which records the file's hash, is written last, with the job's finishing, only while
the job is the worker's. A worker killed mid-container leaves the parts it stored (each batch whole) and no hash:
the next taker reads the file again, skips the parts stored already by their hash, and writes the rest. A worker
whose lease ran out (it stalled) may still store parts, the same bytes another worker stores, never the
container's document.

A file that every worker taking it stops in (a parser that kills its process) would kill them all in turn: after
:data:`~kb_core.bounds.FILE_TAKES` takers stopped in it, the next sets it aside, reported as failed with its
reason, by every later ingest too, until its bytes change or ``kb ingest --retry-failed`` releases it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Protocol

from kb_core.bounds import FILE_TAKES
from kb_core.errors import EXIT_STORAGE, KbError, WriterBusyError
from kb_core.extend.containers import ContainerParser
from kb_core.extend.record_store import IngestJob, SharedRecordStore
from kb_core.ingest import containers
from kb_core.ingest.containers import KEPT, StoredPaths, ingest_container
from kb_core.ingest.prepared import Prepared
from kb_core.ingest.source import SourceFile
from kb_core.types import Chunk, IngestWarning


class Ingester(containers.Ingester, Protocol):
    """What a queued ingest needs of :class:`kb_core.ingest.pipeline.Ingester` (named here, not imported: the
    pipeline imports this module)."""

    chunker: Any
    failed: list[IngestWarning]

    def _read(self, file: SourceFile) -> bytes | None: ...

    def note_warnings(self, item: Prepared) -> None: ...

    def wrote(self, path: str, stored_before: bool) -> None: ...

    def count_unchanged(self, path: str) -> None: ...


#: Files a worker takes at once (written in one transaction): fewer round trips, and a fair share at the end.
TAKE = 8
#: How often a worker that has run out of files looks again while other workers hold some.
POLL_S = 0.25


def ingest_queued(
    ingester: Ingester,
    store: SharedRecordStore,
    root_key: str,
    files: list[SourceFile],
    refused: set[str],
    *,
    retry_failed: bool = False,
) -> set[str]:
    """Queue ``files`` of ``root_key`` and ingest files from the queue until it is empty; the stored paths this
    walk accounts for (its files, and the parts stored under its containers). ``retry_failed``: queue the files
    set aside too, changed or not."""
    stored = StoredPaths(store.document_hashes(root_key))
    seen = {f.path for f in files}
    for file in files:
        if isinstance(ingester.parsers.for_path(file.path)[1], ContainerParser):
            seen |= set(stored.under(file.path))  # (the worker that takes the container removes its lost parts)
    by_path = {f.path: f for f in files}
    _release_set_aside(ingester, store, root_key, by_path, retry_failed)
    store.queue_files(root_key, [f.path for f in files if f.path not in refused])
    done, total = 0, len(files)
    while True:
        jobs = store.take_files(root_key, TAKE)
        if not jobs:
            if not store.files_in_progress(root_key):
                return seen
            time.sleep(POLL_S)
            continue
        with _returned_on_failure(store, jobs):
            _ingest_jobs(ingester, store, root_key, jobs, by_path)
        done += len(jobs)
        if ingester.progress:
            ingester.progress("reading", min(done, total), max(done, total))


def _source(job: IngestJob, by_path: dict[str, SourceFile]) -> SourceFile | None:
    """The file of ``job``: as this worker's walk found it, or (queued by another worker) as it is now."""
    if job.path in by_path:
        return by_path[job.path]
    absolute = Path(job.root) / job.path
    try:
        return SourceFile(job.path, absolute, absolute.stat().st_size)
    except OSError:
        return None  # gone since: the walk of the next ingest removes its document


@contextmanager
def _returned_on_failure(store: SharedRecordStore, jobs: list[IngestJob]) -> Iterator[None]:
    """The block; should it fail (anything, Ctrl-C too), ``jobs`` go back to the queue untaken before the failure
    goes on (those finished already stay finished)."""
    try:
        yield
    except BaseException:
        with suppress(Exception):  # (a lost server: the leases, no longer renewed, run out instead)
            store.return_files(jobs)
        raise


def _ingest_jobs(
    ingester: Ingester,
    store: SharedRecordStore,
    root_key: str,
    jobs: list[IngestJob],
    by_path: dict[str, SourceFile],
) -> None:
    """Read and parse the files of ``jobs``, then write their documents and finish the jobs in one transaction."""
    hashes = store.document_hashes_of([job.path for job in jobs])
    prepared: list[tuple[IngestJob, Prepared | None]] = []
    for job in jobs:
        file = _source(job, by_path)
        chosen = ingester.parsers.for_path(job.path) if file is not None else None
        if file is not None and job.taken_before >= FILE_TAKES.high and _set_aside(ingester, store, job, file):
            continue
        if file is None or chosen is None:
            prepared.append((job, None))
        elif isinstance(chosen[1], ContainerParser):
            prepared.append((job, _container(ingester, store, root_key, file, chosen)))
        else:
            prepared.append((job, _prepare(ingester, file, root_key, hashes, chosen)))
    chunked = _chunked(ingester, prepared)
    try:
        kept = _write(store, chunked)
    except KbError as exc:
        if not _refused(exc):
            raise
        kept = _write_each(ingester, store, chunked, hashes)
    for item, _chunks in kept:
        ingester.wrote(item.document.path, item.document.path in hashes)
        ingester.note_warnings(item)


Written = tuple[Prepared, list[Chunk]]


def _chunked(
    ingester: Ingester, prepared: list[tuple[IngestJob, Prepared | None]]
) -> list[tuple[IngestJob, Written | None]]:
    """Each job with its document's chunks (tokenized together); a document the chunker fails on is that file's
    failure, reported (its job is finished, nothing written)."""
    items = [item for _, item in prepared if item is not None]
    try:
        lists = ingester.chunker.chunk_many([(item.document.path, item.blocks) for item in items])
        chunks_of = {id(item): chunks for item, chunks in zip(items, lists)}
    except Exception:  # (a chunker bug: find the documents it fails on, one by one)
        chunks_of = {}
        for item in items:
            try:
                chunks_of[id(item)] = ingester.chunker.chunk_many([(item.document.path, item.blocks)])[0]
            except Exception as exc:
                reason = f"cannot be cut into passages (chunker failed: {type(exc).__name__}: {exc}); skipped"
                ingester.failed.append(IngestWarning(item.document.path, reason))
    return [
        (job, (item, chunks_of[id(item)]) if item is not None and id(item) in chunks_of else None)
        for job, item in prepared
    ]


def _write(store: SharedRecordStore, chunked: list[tuple[IngestJob, Written | None]]) -> list[Written]:
    """Write the documents and finish the jobs in one transaction (a job no longer this worker's: nothing of it)."""
    kept: list[Written] = []
    with store.transaction():
        for job, written in chunked:
            if store.finish_file(job) and written is not None:
                store.replace_document(written[0].document, written[1])
                kept.append(written)
    return kept


def _write_each(
    ingester: Ingester,
    store: SharedRecordStore,
    chunked: list[tuple[IngestJob, Written | None]],
    hashes: dict[str, str],
) -> list[Written]:
    """:func:`_write`, one job per transaction: a document the store refuses is that file's failure, reported, its
    job finished (a stored earlier version is kept)."""
    kept: list[Written] = []
    for job, written in chunked:
        try:
            kept.extend(_write(store, [(job, written)]))
        except KbError as exc:
            if not _refused(exc):
                raise
            ingester.failed.append(IngestWarning(job.path, str(exc) + (KEPT if job.path in hashes else "")))
            with store.transaction():
                store.finish_file(job)
    return kept


def _refused(exc: KbError) -> bool:
    """Whether a store's error refuses the document being written (else it is the store's own trouble: a lost
    server, a busy lock, a full disk, which ``EXIT_STORAGE`` marks)."""
    return not isinstance(exc, WriterBusyError) and exc.exit_code != EXIT_STORAGE


def _prepare(
    ingester: Ingester, file: SourceFile, root_key: str, hashes: dict[str, str], chosen: tuple[str, Any]
) -> Prepared | None:
    """The parsed document of ``file``; None when it is unchanged or cannot be used (reported)."""
    data = ingester._read(file)
    if data is None:
        return None
    content_hash = hashlib.sha256(data).hexdigest()
    if hashes.get(file.path) == content_hash:
        ingester.count_unchanged(file.path)
        return None
    return ingester._prepare(file, root_key, content_hash, data, stored=file.path in hashes, chosen=chosen)


def _container(
    ingester: Ingester, store: SharedRecordStore, root_key: str, file: SourceFile, chosen: tuple[str, Any]
) -> Prepared | None:
    """A container (an mbox): its parts written as the core writes them; its own document (None: nothing to write),
    which the caller writes with the job's finishing."""
    own: list[Prepared] = []
    ingest_container(ingester, file, root_key, chosen, StoredPaths(store.document_hashes(root_key)), own=own.append)
    return own[0] if own else None


def _digest(file: SourceFile) -> str | None:
    """The SHA-256 of ``file``'s bytes (None: it cannot be read now)."""
    try:
        with file.absolute.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def _set_aside(ingester: Ingester, store: SharedRecordStore, job: IngestJob, file: SourceFile) -> bool:
    """Set aside the file of ``job``, which every earlier taker stopped in, and report it; False when it cannot
    be read now (it is then ingested as any file, and its reading fails with its reason)."""
    digest = _digest(file)
    if digest is None:
        return False
    reason = (
        f"each of the {job.taken_before} ingest workers that took it stopped before finishing it (a parser that"
        " crashes its process?); set aside until the file changes or 'kb ingest --retry-failed'"
    )
    if store.set_aside(job, digest, reason):
        ingester.failed.append(IngestWarning(job.path, reason))
    return True


def _release_set_aside(
    ingester: Ingester, store: SharedRecordStore, root_key: str, by_path: dict[str, SourceFile], everything: bool
) -> None:
    """Release the files of ``root_key`` set aside that changed or are gone since (every one, with ``everything``),
    so they are queued again; report the others of this walk as failed, with their reason."""
    if everything:
        store.release_files(root_key)
        return
    aside = store.files_set_aside(root_key)
    release: list[str] = []
    for item in aside:
        file = by_path.get(item.path)
        if file is None:  # not in this walk: gone, or outside the part of the folder walked
            if not (Path(root_key) / item.path).exists():
                release.append(item.path)
        elif _digest(file) != item.content_hash:
            release.append(item.path)
        else:
            ingester.failed.append(IngestWarning(item.path, item.reason))
    if release:
        store.release_files(root_key, release)
