"""Ingestion: source -> read -> parse -> chunk -> store of record -> indexes, incremental.

- Unchanged files (same content hash) are skipped; a changed file is replaced atomically (its
  document row, chunks and outbox entry in one transaction); files that disappeared from a root
  are removed from the store and, through the outbox, from every index.
- Bad input never stops an ingest and never loses stored data: a file that cannot be used is
  reported with its reason, and an earlier stored version of it is kept.
- Killing the process at any point is safe: SQLite transactions are atomic and index work is
  replayed from the outbox by the next run (see :mod:`kb_core.ingest.index_sync`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import time
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import attrs

from kb_core.app import KnowledgeBase
from kb_core.errors import EXIT_STORAGE, KbError, WriterBusyError
from kb_core.extend.containers import ContainerParser
from kb_core.extend.contracts import BytesParser, ParserContext, TokenStartsEmbedder
from kb_core.extend.record_store import SharedRecordStore
from kb_core.ingest.chunker import Chunker, ChunkLimits
from kb_core.ingest.containers import StoredPaths, ingest_container
from kb_core.ingest.follow import folder_lock, shared_store
from kb_core.ingest.index_sync import SyncResult, sync_all
from kb_core.ingest.prepared import Prepared as _Prepared
from kb_core.ingest.prepared import without_nul
from kb_core.ingest.queued import ingest_queued
from kb_core.ingest.roots import Root, absorb_inner_roots, is_protected, protected, resolve_root
from kb_core.ingest.source import (
    IGNORE_FILE,
    IgnoreProblem,
    PassedOver,
    SourceFile,
    SourceProblem,
    normalise,
    single_file,
    walk,
)
from kb_core.storage.cited import FreshnessReport, recheck_documents
from kb_core.storage.sqlite_files import make_private_dir
from kb_core.storage.store import now_iso
from kb_core.types import Chunk, Document, IngestWarning, Progress

KEPT = "; the stored earlier version is kept"


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
    answers: FreshnessReport | None = None  # the stored answers citing a changed document, re-checked


@contextmanager
def writer_lock(kb: KnowledgeBase) -> Iterator[None]:
    """Hold the knowledge base's writer lock (one ingest, rm or reindex at a time)."""
    try:
        make_private_dir(kb.directory)
        handle = os.fdopen(os.open(kb.directory / "writer.lock", os.O_RDWR | os.O_CREAT, 0o600), "a+")
    except OSError as exc:
        raise KbError(
            f"cannot write to the knowledge base at {kb.directory}: {exc.strerror}",
            hint="search and list work on a read-only knowledge base; copy it somewhere writable to change it",
            exit_code=EXIT_STORAGE,
        ) from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WriterBusyError(
                f"another kb process is writing to {kb.directory}", hint="wait for it to finish, then run again"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _writing(kb: KnowledgeBase) -> AbstractContextManager[None]:
    """What an ingest or a removal holds while it writes: the writer lock, unless the store is shared (its
    transactions keep writes whole, and any number of workers write it at once)."""
    return nullcontext() if shared_store(kb) is not None else writer_lock(kb)


@contextmanager
def _updating_indexes(kb: KnowledgeBase) -> Iterator[None]:
    """With a shared store, the folder's lock while its indexes are brought up to date (waiting for a process of
    this folder doing the same); with SQLite, :func:`_writing` holds it already."""
    if shared_store(kb) is None:
        yield
        return
    with folder_lock(kb, wait=True):
        yield


def make_chunker(kb: KnowledgeBase) -> Chunker:
    """A chunker that counts with the configured embedder's tokenizer, within its real limit."""
    cfg = kb.config.ingest
    embedder = kb.embedder()
    hard_max = min(cfg.chunk_max_tokens, embedder.max_tokens)
    target = min(cfg.chunk_target_tokens, hard_max)
    overlap = min(cfg.chunk_overlap_tokens, target - 1)
    limits = ChunkLimits(target=target, hard_max=hard_max, overlap=overlap)
    return Chunker(
        embedder.count_tokens, limits, embedder.token_starts if isinstance(embedder, TokenStartsEmbedder) else None
    )


class _Parsers:
    """Parsers by file extension, made once per ingest (with the OCR engine, and the ingest's progress)."""

    def __init__(self, kb: KnowledgeBase, progress: Progress | None) -> None:
        self.by_extension: dict[str, tuple[str, Any]] = {}
        ocr, ocr_missing = kb.ocr()
        for name, registration in kb.registry.items["parsers"].items():
            context = ParserContext(kb.config, progress=progress, ocr=ocr, ocr_missing=ocr_missing)
            parser = registration.factory(context)
            for extension in registration.info.get("extensions", ()):
                self.by_extension[extension.lower()] = (name, parser)

    def for_path(self, path: str) -> tuple[str, Any]:
        return self.by_extension[Path(path).suffix.lower()]


def _decode(data: bytes) -> tuple[str | None, str]:
    """Text and a warning ('' if none); None when the bytes are not text (a NUL byte anywhere)."""
    if b"\x00" in data:
        return None, "binary file (NUL bytes); skipped"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        return data.decode("utf-8", errors="replace"), f"invalid UTF-8 at byte {exc.start}; undecodable bytes replaced"


class Ingester:
    """One ingest run over some roots."""

    def __init__(
        self,
        kb: KnowledgeBase,
        progress: Progress | None = None,
        *,
        follow_symlinks: bool | None = None,
        repoint: bool = False,
        retry_failed: bool = False,
    ) -> None:
        self.kb = kb
        self.retry_failed = retry_failed
        self.store = kb.store
        self.progress = progress
        self.parsers = _Parsers(kb, progress)
        self.chunker = make_chunker(kb)
        self.follow_symlinks = kb.config.ingest.follow_symlinks if follow_symlinks is None else follow_symlinks
        self.repoint = repoint
        self.added: list[str] = []
        self.updated: list[str] = []
        self.unchanged = 0
        self.removed: list[str] = []
        self.failed: list[IngestWarning] = []
        self.warnings: list[IngestWarning] = []
        self._ignore_lines: set[tuple[str, str, str]] = set()  # (folder, file, reason): each reported once
        self._written: set[str] = set()  # the paths this run wrote (added or updated)

    def wrote(self, path: str, stored_before: bool) -> None:
        """Report ``path`` written: updated when it was stored before, else added."""
        (self.updated if stored_before else self.added).append(path)
        self._written.add(path)

    def count_unchanged(self, path: str) -> None:
        """Count ``path`` unchanged, unless this run wrote it: several targets of one ingest on a shared store, the
        first of which finished the files a killed process had left queued, each found stored by the next."""
        if path not in self._written:
            self.unchanged += 1

    def _prepare(
        self,
        file: SourceFile,
        root: str,
        content_hash: str,
        data: bytes,
        stored: bool,
        chosen: tuple[str, Any] | None = None,
    ) -> _Prepared | None:
        """The document and blocks of ``file``'s bytes, parsed by ``chosen`` (default: by its extension)."""
        parser_name, parser = chosen or self.parsers.for_path(file.path)
        kept = KEPT if stored else ""
        text, warning = None, ""
        if not isinstance(parser, BytesParser):  # text is decoded; a BytesParser (PDF, DOCX) reads the bytes
            text, warning = _decode(data)
            if text is None:
                self.failed.append(IngestWarning(file.path, warning + kept))
                return None
            if warning and stored:  # never replace a good stored version with replacement characters
                self.failed.append(IngestWarning(file.path, warning.split(";")[0] + KEPT))
                return None
        if not (data.strip() if text is None else text.strip()):
            self.failed.append(IngestWarning(file.path, "empty file; skipped" + kept))
            return None
        try:
            parsed = parser.parse_bytes(data, file.path) if text is None else parser.parse(text, file.path)
        except KbError as exc:  # the parser's one-line reason: encrypted, damaged, no text layer, too large
            self.failed.append(IngestWarning(file.path, str(exc) + kept))
            return None
        except Exception as exc:  # a parser bug must not stop the ingest
            self.failed.append(IngestWarning(file.path, f"parser {parser_name} failed: {type(exc).__name__}: {exc}"))
            return None
        parsed, nul = without_nul(parsed)
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
        notes += [f"{nul} NUL character(s) (U+0000) removed from the parsed text"] if nul else []
        return _Prepared(document, parsed.blocks, notes + list(parsed.warnings))

    def _read(self, file: SourceFile) -> bytes | None:
        limit = self.kb.config.ingest.max_file_bytes
        if file.size > limit:
            self.failed.append(
                IngestWarning(
                    file.path,
                    f"file is {file.size} bytes, over the limit of {limit} ([ingest] max_file_bytes); skipped",
                )
            )
            return None
        try:
            return file.absolute.read_bytes()
        except OSError as exc:
            self.failed.append(IngestWarning(file.path, f"cannot read: {exc.strerror or exc}"))
            return None

    def _write(self, batch: list[_Prepared], known: dict[str, str]) -> None:
        chunked = self._chunked(batch)
        with self.store.transaction():
            for item, chunks in chunked:
                self.store.replace_document(item.document, chunks)
        for item, _ in chunked:
            self.wrote(item.document.path, item.document.path in known)
            self.note_warnings(item)

    def _chunked(self, batch: list[_Prepared]) -> list[tuple[_Prepared, list[Chunk]]]:
        """Each document of ``batch`` with its chunks; one whose blocks the chunker fails on is that file's failure
        (a third party's parser may give blocks no test foresaw), never the ingest's."""
        try:
            return list(zip(batch, self.chunker.chunk_many([(i.document.path, i.blocks) for i in batch]), strict=True))
        except Exception:  # find the document(s) it fails on, alone
            kept: list[tuple[_Prepared, list[Chunk]]] = []
            for item in batch:
                try:
                    kept.append((item, self.chunker.chunk_many([(item.document.path, item.blocks)])[0]))
                except Exception as exc:
                    failure = f"the chunker failed: {type(exc).__name__}: {exc}"[:300]
                    self.failed.append(IngestWarning(item.document.path, failure))
            return kept

    def note_warnings(self, item: _Prepared) -> None:
        """Report the warnings of a document written."""
        self.warnings.extend(IngestWarning(item.document.path, w) for w in item.warnings)

    def _claim(self, root: Root, files: list[SourceFile]) -> set[str]:
        """Paths stored from another folder: re-point that folder here (``repoint``), else refuse them."""
        here = str(root.base)
        owners = self.store.document_owners()
        foreign = {f.path: owners[f.path] for f in files if owners.get(f.path, here) != here}
        if not foreign:
            return set()
        if self.repoint:
            with self.store.transaction():
                for old in sorted(set(foreign.values())):
                    moved = self.store.repoint_root(old, here)
                    self.warnings.append(IngestWarning(old, f"re-pointed {moved} document(s) from {old} to {here}"))
            return set()
        for path, owner in sorted(foreign.items()):
            self.failed.append(
                IngestWarning(
                    path,
                    f"a document with this path came from another folder ({owner});"
                    f" skipped (to make this folder its source, keeping every document and"
                    f" answer: kb ingest --repoint {shlex.quote(str(root.given))})",
                )
            )
        return set(foreign)

    def ingest_root(self, given: Path) -> None:
        """Bring the documents of one root in step with the folder (or single file)."""
        root = resolve_root(Path(given), self.store.source_roots())
        root_key = str(root.base)
        self.warnings.extend(IngestWarning(old, note) for old, note in absorb_inner_roots(self.store, root))
        files, problems = self._files(root)
        refused = self._claim(root, files)
        hashes = self.store.document_hashes(root_key)
        known = {p: h for p, h in hashes.items() if root.covers(p)}
        shared = self.store if isinstance(self.store, SharedRecordStore) else None
        if shared is not None:  # several workers share the files out through the store's queue
            seen = ingest_queued(self, shared, root_key, files, refused, retry_failed=self.retry_failed)
        else:
            seen = self._ingest_in_order(files, refused, root_key, known, StoredPaths(hashes))
        if not root.single:
            keep = protected(problems)
            gone = sorted(p for p in set(known) - seen if not is_protected(p, keep))
            with self.store.transaction():
                self.store.delete_documents(gone)
            self.removed.extend(gone)

    def _ingest_in_order(
        self, files: list[SourceFile], refused: set[str], root_key: str, known: dict[str, str], stored: StoredPaths
    ) -> set[str]:
        """Ingest ``files`` one after another, written in batches (the one writer of a store); the paths seen."""
        seen: set[str] = set()
        batch: list[_Prepared] = []
        size = self.kb.config.ingest.batch_documents
        for position, file in enumerate(files, start=1):
            seen.add(file.path)
            if self.progress:
                self.progress("reading", position, len(files))
            if file.path in refused:
                continue
            chosen = self.parsers.for_path(file.path)
            if isinstance(chosen[1], ContainerParser):  # an mbox: a document per message, streamed
                seen |= ingest_container(self, file, root_key, chosen, stored)
                continue
            data = self._read(file)
            if data is None:
                continue
            content_hash = hashlib.sha256(data).hexdigest()
            if known.get(file.path) == content_hash:
                self.count_unchanged(file.path)
                continue
            prepared = self._prepare(file, root_key, content_hash, data, stored=file.path in known)
            if prepared is not None:
                batch.append(prepared)
            if len(batch) >= size:
                self._write(batch, known)
                batch = []
        if batch:
            self._write(batch, known)
        return seen

    def _files(self, root: Root) -> tuple[list[SourceFile], list[SourceProblem]]:
        """The files of a root (one spelling per NFC name), and the problems met finding them."""
        extensions = list(self.parsers.by_extension)
        if root.single:
            if root.given.suffix.lower() not in extensions:
                raise KbError(f"no parser for {root.given.name}", hint=f"supported: {', '.join(sorted(extensions))}")
            items: list[SourceFile | SourceProblem | IgnoreProblem | PassedOver] = list(
                single_file(root.base, root.start, root.given, follow_symlinks=self.follow_symlinks)
            )
        else:
            items = list(
                walk(
                    root.base,
                    extensions,
                    self.kb.config.ingest.ignore,
                    skip_dirs=[self.kb.directory],
                    follow_symlinks=self.follow_symlinks,
                    start=root.start,
                )
            )
        for bad in (i for i in items if isinstance(i, IgnoreProblem)):  # skipped; the walk went on without it
            folder = str(root.base) if bad.origin == IGNORE_FILE else ""
            if (folder, bad.path, bad.reason) not in self._ignore_lines:
                self._ignore_lines.add((folder, bad.path, bad.reason))
                self.warnings.append(IngestWarning(bad.path, bad.reason))
        passed = Counter(i.extension for i in items if isinstance(i, PassedOver))
        if passed:
            kinds = ", ".join(f"{ext} {n}" for ext, n in sorted(passed.items(), key=lambda kv: (-kv[1], kv[0]))[:8])
            self.warnings.append(
                IngestWarning(
                    root.start or ".",
                    f"passed over {sum(passed.values())} file(s) no parser reads ({kinds}); "
                    "install a plugin that reads them, or add them to .kbignore",
                )
            )
        problems = [i for i in items if isinstance(i, SourceProblem)]
        self.failed.extend(IngestWarning(p.path or ".", p.reason) for p in problems)
        chosen: dict[str, SourceFile] = {}
        for item in sorted((i for i in items if isinstance(i, SourceFile)), key=_spelling_order):
            if item.path in chosen:
                self.warnings.append(
                    IngestWarning(
                        item.path,
                        f"{str(item.absolute)!r} spells the same name in"
                        " another Unicode form (NFC/NFD); only"
                        f" {str(chosen[item.path].absolute)!r} is stored",
                    )
                )
            else:
                chosen[item.path] = item
        return sorted(chosen.values(), key=lambda f: f.path), problems


def _spelling_order(file: SourceFile) -> tuple[str, bool, str]:
    """NFC spellings first, then by raw name: the same file wins every run."""
    raw = str(file.absolute)
    return file.path, unicodedata.normalize("NFC", raw) != raw, raw


def ingest_paths(
    kb: KnowledgeBase,
    paths: Sequence[Path],
    progress: Progress | None = None,
    *,
    follow_symlinks: bool | None = None,
    repoint: bool = False,
    retry_failed: bool = False,
) -> IngestReport:
    """Ingest files and folders, then bring every enabled index up to date.

    ``follow_symlinks`` (default: ``[ingest] follow_symlinks``) follows links that leave a root;
    ``repoint`` makes each root the source of stored documents that came from another folder
    (a moved or copied notes folder); ``retry_failed`` takes again the files a shared store's queue set aside
    (:mod:`kb_core.ingest.queued`; any other failed file is tried again by every ingest).
    """
    started = time.perf_counter()
    with _writing(kb):
        ingester = Ingester(kb, progress, follow_symlinks=follow_symlinks, repoint=repoint, retry_failed=retry_failed)
        for path in paths:
            ingester.ingest_root(Path(path))
        with _updating_indexes(kb):
            indexes = sync_all(kb, progress)
        changed = ingester.added + ingester.updated + ingester.removed
        answers = recheck_documents(kb.store, changed) if changed else None
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
        answers=answers,
    )


def remove_documents(kb: KnowledgeBase, paths: Sequence[str]) -> list[str]:
    """Remove documents by path (or every document under a folder prefix ending in '/')."""
    with _writing(kb):
        targets: list[str] = []
        for path in paths:
            clean = normalise(path.strip())
            if clean.endswith("/"):
                targets.extend(d.path for d in kb.store.list_documents(prefix=clean))
            elif document := kb.store.get_document(clean):
                targets.append(clean)
                if "container" in document.metadata:  # a container's parts go with it
                    targets.extend(d.path for d in kb.store.list_documents(prefix=clean + "/"))
            else:
                raise KbError(f"no document at {clean!r}", hint="see 'kb list' for the stored paths")
        with kb.store.transaction():
            kb.store.delete_documents(targets)
        with _updating_indexes(kb):
            sync_all(kb)
        recheck_documents(kb.store, targets)  # the answers citing them are stale now
    return targets
