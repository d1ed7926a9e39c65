"""Ingestion: source -> read -> parse -> chunk -> store of record -> indexes, incremental.

- Unchanged files (same content hash) are skipped; a changed file is replaced atomically (its
  document row, chunks and outbox entry in one transaction); files that disappeared from a root
  are removed from the store and, through the outbox, from every index.
- Bad input never stops an ingest and never loses stored data: a file that cannot be used is
  reported with its reason, and an earlier stored version of it is kept.
- Killing the process at any point is safe: SQLite transactions are atomic and index work is
  replayed from the outbox by the next run (see :mod:`kb_core.indexing`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from kb_core.app import KnowledgeBase
from kb_core.chunker import Chunker, ChunkLimits
from kb_core.errors import KbError
from kb_core.indexing import SyncResult, sync_all
from kb_core.source import SourceFile, SourceProblem, normalise, walk
from kb_core.store import now_iso
from kb_core.types import Block, Document, IngestWarning, Progress
BINARY_SNIFF_BYTES = 8192


@attrs.frozen
class IngestReport:
    """What an ingest did (``ingest_report.v1``)."""

    roots: list[str]
    added: list[str]
    updated: list[str]
    unchanged: int
    removed: list[str]
    failed: list[IngestWarning]
    warnings: list[IngestWarning]
    documents: int
    chunks: int
    indexes: list[SyncResult]
    took_ms: float


@attrs.frozen
class _Prepared:
    document: Document
    blocks: tuple[Block, ...]
    warnings: list[str]


@contextmanager
def writer_lock(kb: KnowledgeBase) -> Iterator[None]:
    """Hold the knowledge base's writer lock (one ingest, rm or reindex at a time)."""
    kb.directory.mkdir(parents=True, exist_ok=True)
    with open(kb.directory / "writer.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise KbError(
                f"another kb process is writing to {kb.directory}", hint="wait for it to finish, then run again"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def make_chunker(kb: KnowledgeBase) -> Chunker:
    """A chunker that counts with the configured embedder's tokenizer, within its real limit."""
    cfg = kb.config.ingest
    embedder = kb.embedder()
    hard_max = min(cfg.chunk_max_tokens, embedder.max_tokens)
    target = min(cfg.chunk_target_tokens, hard_max)
    overlap = min(cfg.chunk_overlap_tokens, target - 1)
    limits = ChunkLimits(target=target, hard_max=hard_max, overlap=overlap)
    return Chunker(embedder.count_tokens, limits, getattr(embedder, "token_starts", None))


class _Parsers:
    """Parsers by file extension, made once per ingest."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.by_extension: dict[str, tuple[str, Any]] = {}
        for name, registration in kb.registry.items["parsers"].items():
            parser = registration.factory(kb.config)
            for extension in registration.info.get("extensions", ()):
                self.by_extension[extension.lower()] = (name, parser)

    def for_path(self, path: str) -> tuple[str, Any]:
        return self.by_extension[Path(path).suffix.lower()]


def _decode(data: bytes) -> tuple[str | None, str]:
    """Text and a warning ('' if none); None when the bytes are not text."""
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return None, "binary file (NUL bytes); skipped"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        return data.decode("utf-8", errors="replace"), f"invalid UTF-8 at byte {exc.start}; undecodable bytes replaced"


class Ingester:
    """One ingest run over some roots."""

    def __init__(self, kb: KnowledgeBase, progress: Progress | None = None) -> None:
        self.kb = kb
        self.store = kb.store
        self.progress = progress
        self.parsers = _Parsers(kb)
        self.chunker = make_chunker(kb)
        self.added: list[str] = []
        self.updated: list[str] = []
        self.unchanged = 0
        self.removed: list[str] = []
        self.failed: list[IngestWarning] = []
        self.warnings: list[IngestWarning] = []

    def _prepare(self, file: SourceFile, root: str, content_hash: str, data: bytes) -> _Prepared | None:
        text, warning = _decode(data)
        if text is None:
            self.failed.append(IngestWarning(file.path, warning))
            return None
        if not text.strip():
            self.failed.append(IngestWarning(file.path, "empty file; skipped"))
            return None
        parser_name, parser = self.parsers.for_path(file.path)
        try:
            parsed = parser.parse(text, file.path)
        except Exception as exc:  # a parser bug must not stop the ingest
            self.failed.append(IngestWarning(file.path, f"parser {parser_name} failed: {type(exc).__name__}: {exc}"))
            return None
        document = Document(
            path=file.path,
            content_hash=content_hash,
            size=file.size,
            title=parsed.title,
            parser=parser_name,
            source_root=root,
            metadata=parsed.metadata,
            ingested_at=now_iso(),
        )
        notes = [warning] if warning else []
        return _Prepared(document, parsed.blocks, notes + list(parsed.warnings))

    def _read(self, file: SourceFile) -> bytes | None:
        limit = self.kb.config.ingest.max_file_bytes
        if file.size > limit:
            self.failed.append(IngestWarning(file.path, f"file is {file.size} bytes, over the limit of {limit}"
                                             " ([ingest] max_file_bytes); skipped"))
            return None
        try:
            return file.absolute.read_bytes()
        except OSError as exc:
            self.failed.append(IngestWarning(file.path, f"cannot read: {exc.strerror or exc}"))
            return None

    def _write(self, batch: list[_Prepared], known: dict[str, str]) -> None:
        chunk_lists = self.chunker.chunk_many([(item.document.path, item.blocks) for item in batch])
        with self.store.transaction():
            for item, chunks in zip(batch, chunk_lists):
                self.store.replace_document(item.document, chunks)
        for item in batch:
            (self.updated if item.document.path in known else self.added).append(item.document.path)
            self.warnings.extend(IngestWarning(item.document.path, w) for w in item.warnings)

    def ingest_root(self, root: Path) -> None:
        """Bring the documents of one root in step with the folder (or single file)."""
        root = root.expanduser()
        if not root.exists():
            raise KbError(f"no such file or folder: {root}", hint="check the path")
        single = root.is_file()
        base = root.parent if single else root
        root_key = str(base.resolve())
        known = self.store.document_hashes(root_key)
        other_roots = self.store.document_hashes()
        files = self._files(root, base, single)
        seen: set[str] = set()
        batch: list[_Prepared] = []
        size = self.kb.config.ingest.batch_documents
        for position, file in enumerate(files, start=1):
            seen.add(file.path)
            if self.progress:
                self.progress("reading", position, len(files))
            if file.path in other_roots and file.path not in known:
                self.failed.append(IngestWarning(file.path, "a document with this path came from another folder;"
                                                 f" skipped (run 'kb rm {file.path}' first to replace it)"))
                continue
            data = self._read(file)
            if data is None:
                continue
            content_hash = hashlib.sha256(data).hexdigest()
            if known.get(file.path) == content_hash:
                self.unchanged += 1
                continue
            prepared = self._prepare(file, root_key, content_hash, data)
            if prepared is not None:
                batch.append(prepared)
            if len(batch) >= size:
                self._write(batch, known)
                batch = []
        if batch:
            self._write(batch, known)
        if not single:
            gone = sorted(set(known) - seen)
            with self.store.transaction():
                self.store.delete_documents(gone)
            self.removed.extend(gone)

    def _files(self, root: Path, base: Path, single: bool) -> list[SourceFile]:
        extensions = list(self.parsers.by_extension)
        if single:
            if root.suffix.lower() not in extensions:
                raise KbError(f"no parser for {root.name}", hint=f"supported: {', '.join(sorted(extensions))}")
            return [SourceFile(normalise(root.name), root, root.stat().st_size)]
        files: list[SourceFile] = []
        for item in walk(base, extensions, self.kb.config.ingest.ignore, skip_dirs=[self.kb.directory]):
            if isinstance(item, SourceProblem):
                self.failed.append(IngestWarning(item.path, item.reason))
            else:
                files.append(item)
        return files


def ingest_paths(kb: KnowledgeBase, paths: Sequence[Path], progress: Progress | None = None) -> IngestReport:
    """Ingest files and folders, then bring every enabled index up to date."""
    started = time.perf_counter()
    with writer_lock(kb):
        ingester = Ingester(kb, progress)
        for path in paths:
            ingester.ingest_root(Path(path))
        indexes = sync_all(kb, progress)
    return IngestReport(
        roots=[str(Path(p).expanduser().resolve()) for p in paths],
        added=ingester.added,
        updated=ingester.updated,
        unchanged=ingester.unchanged,
        removed=ingester.removed,
        failed=ingester.failed,
        warnings=ingester.warnings,
        documents=kb.store.count_documents(),
        chunks=kb.store.count_chunks(),
        indexes=indexes,
        took_ms=round((time.perf_counter() - started) * 1000, 1),
    )


def remove_documents(kb: KnowledgeBase, paths: Sequence[str]) -> list[str]:
    """Remove documents by path (or every document under a folder prefix ending in '/')."""
    with writer_lock(kb):
        targets: list[str] = []
        for path in paths:
            clean = path.strip().replace(os.sep, "/")
            if clean.endswith("/"):
                targets.extend(d.path for d in kb.store.list_documents(prefix=clean))
            elif kb.store.get_document(clean):
                targets.append(clean)
            else:
                raise KbError(f"no document at {clean!r}", hint="see 'kb list' for the stored paths")
        with kb.store.transaction():
            kb.store.delete_documents(targets)
        sync_all(kb)
    return targets
