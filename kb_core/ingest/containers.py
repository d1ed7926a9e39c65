"""Ingesting a container file (:class:`~kb_core.extend.containers.ContainerParser`): one document per part.

- The container's own document, at the file's path, is written last and carries the file's hash: an
  unchanged file is skipped after hashing it (streamed), with every document under it, and the parts that
  failed last time are reported again (kept in its metadata, ``container.failed``). An interrupted run
  never records the hash, so the next one reads the file again.
- A changed file is read part by part: a part whose bytes are unchanged is skipped, the others are parsed
  by the registry's parser for their extension and written in batches; parts no longer in the file are
  removed. A part that cannot be read is reported on its own path and a stored earlier version is kept.
- A file the container parser cannot read at all (a :class:`~kb_core.errors.KbError`) is one line; the
  parts read before it are stored and nothing stored under it is removed.
"""

from __future__ import annotations

import bisect
import hashlib
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

import attrs

from kb_core.errors import KbError
from kb_core.extend.containers import ContainerParser, Part
from kb_core.ingest.prepared import Prepared
from kb_core.ingest.source import SourceFile
from kb_core.limits import LIMITS
from kb_core.storage.store import now_iso
from kb_core.types import Document, IngestWarning


class Ingester(Protocol):
    """What reading a container needs of :class:`kb_core.ingest.pipeline.Ingester` (named here, not imported:
    the pipeline imports this module)."""

    kb: Any
    store: Any
    progress: Callable[[str, int, int], None] | None
    parsers: Any
    unchanged: int
    removed: list[str]
    failed: list[IngestWarning]

    def _prepare(
        self,
        file: SourceFile,
        root: str,
        content_hash: str,
        data: bytes,
        stored: bool,
        chosen: tuple[str, Any] | None = None,
    ) -> Prepared | None: ...

    def _write(self, batch: list[Prepared], known: dict[str, str]) -> None: ...


HASH_READ_BYTES = 1 << 20
#: Failed parts a container's document remembers, to report them again when the file is unchanged.
MOST_FAILURES_KEPT = 200
KEPT = "; the stored earlier version is kept"


class StoredPaths:
    """The stored paths of one root with their hashes, for finding the documents under a container fast."""

    def __init__(self, hashes: Mapping[str, str]) -> None:
        self.hashes = dict(hashes)
        self._sorted = sorted(self.hashes)

    def under(self, path: str) -> dict[str, str]:
        """The stored paths below ``path`` (its parts), with their hashes."""
        prefix = path + "/"
        start = bisect.bisect_left(self._sorted, prefix)
        end = bisect.bisect_left(self._sorted, prefix[:-1] + "0")  # '0' follows '/'
        return {p: self.hashes[p] for p in self._sorted[start:end]}


def file_hash(file: Path) -> str:
    """The SHA-256 of a file, read a megabyte at a time."""
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        while block := handle.read(HASH_READ_BYTES):
            digest.update(block)
    return digest.hexdigest()


def name_problem(name: str) -> str:
    """Why ``name`` cannot be a part's name under a container ('' when it can)."""
    if name == "":
        return ""
    parts = name.split("/")
    if name != unicodedata.normalize("NFC", name) or any(p in ("", ".", "..") for p in parts):
        return "is not a relative NFC name without '.' or '..' parts"
    if len(name) > LIMITS.path_chars or any(len(p) > LIMITS.path_part_chars for p in parts):
        return "is too long"
    if any(c == "#" or c == "\\" or unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn") for c in name):
        return "holds a character no stored path may hold"
    return ""


@attrs.define
class _Run:
    """One container being read: what it held, what failed, what is waiting to be written."""

    file: SourceFile
    stored: dict[str, str]
    names: set[str] = attrs.field(factory=set)
    failed: list[tuple[str, str]] = attrs.field(factory=list)
    batch: list[Prepared] = attrs.field(factory=list)
    own: Prepared | None = None
    shown: tuple[str, int] | None = None  # the progress stage and its total, once shown

    def fail(self, ingester: Ingester, path: str, reason: str) -> None:
        line = reason + (KEPT if path in self.stored and not reason.endswith(KEPT) else "")
        ingester.failed.append(IngestWarning(path, line))
        self.failed.append((path, line))


def ingest_container(
    ingester: Ingester,
    file: SourceFile,
    root_key: str,
    chosen: tuple[str, Any],
    stored: StoredPaths,
    *,
    own: Callable[[Prepared], None] | None = None,
) -> set[str]:
    """Bring the documents of container ``file`` in step with it; the stored paths it accounts for (seen).

    ``own``: handed the container's own document to write, last, instead of writing it (a shared store's queue
    writes it with the file's job finished, :mod:`kb_core.ingest.queued`)."""
    parser_name, parser = chosen
    assert isinstance(parser, ContainerParser)
    under = stored.under(file.path)
    run = _Run(file, {file.path: stored.hashes[file.path], **under} if file.path in stored.hashes else under)
    keep_all = {file.path, *under}
    try:
        content_hash = file_hash(file.absolute)
    except OSError as exc:
        ingester.failed.append(IngestWarning(file.path, f"cannot read: {exc.strerror or exc}"))
        return keep_all
    if run.stored.get(file.path) == content_hash:
        ingester.unchanged += 1 + len(under)
        document = ingester.store.get_document(file.path)
        for path, reason in document.metadata.get("container", {}).get("failed", []) if document else []:
            ingester.failed.append(IngestWarning(str(path), str(reason)))
        return keep_all
    try:
        for part in parser.parts(file.absolute, file.path):
            _take(ingester, run, part, root_key, chosen)
    except KbError as exc:
        ingester.failed.append(IngestWarning(file.path, str(exc) + (KEPT if run.stored else "")))
        _flush(ingester, run, everything=True)
        return keep_all | run.names
    except Exception as exc:  # a parser bug must not stop the ingest
        ingester.failed.append(IngestWarning(file.path, f"parser {parser_name} failed: {type(exc).__name__}: {exc}"))
        _flush(ingester, run, everything=True)
        return keep_all | run.names
    if run.shown is not None and ingester.progress:
        ingester.progress(run.shown[0], run.shown[1], run.shown[1])
    _flush(ingester, run, everything=True)
    gone = sorted(set(under) - run.names)
    if gone:
        with ingester.store.transaction():
            ingester.store.delete_documents(gone)
        ingester.removed.extend(gone)
    _write_own(ingester, run, root_key, parser_name, content_hash, own)
    return run.names | {file.path, *gone}  # (those gone are removed already)


def _take(ingester: Ingester, run: _Run, part: Part, root_key: str, chosen: tuple[str, Any]) -> None:
    """Prepare one part (or skip it, or report it), writing a batch when it is full."""
    file = run.file
    if part.total and ingester.progress:
        run.shown = (f"reading {file.path}", part.total)
        ingester.progress(run.shown[0], min(part.done, part.total), part.total)
    problem = name_problem(part.name)
    if problem:
        run.fail(ingester, file.path, f"a part's name {part.name[:80]!r} {problem}; skipped")
        return
    path = f"{file.path}/{part.name}" if part.name else file.path
    if path in run.names:
        run.fail(ingester, path, "the file holds two parts of this name; the second is skipped")
        return
    run.names.add(path)
    if part.problem:
        run.fail(ingester, path, part.problem)
        return
    extension = (part.extension or PurePosixPath(part.name).suffix).lower()
    reader = ingester.parsers.by_extension.get(extension)
    if reader is None:  # a container yields only what kb reads; a part no parser reads is passed over
        run.names.discard(path)
        return
    limit = ingester.kb.config.ingest.max_file_bytes
    if reader[1] is not chosen[1] and len(part.data) > limit:
        run.fail(
            ingester, path, f"{len(part.data)} bytes, over the limit of {limit} ([ingest] max_file_bytes); skipped"
        )
        return
    part_hash = hashlib.sha256(part.data).hexdigest()
    if part.name and run.stored.get(path) == part_hash:
        ingester.unchanged += 1
        return
    before = len(ingester.failed)
    source = SourceFile(path, file.absolute, len(part.data))
    prepared = ingester._prepare(source, root_key, part_hash, part.data, stored=path in run.stored, chosen=reader)
    run.failed.extend((w.path, w.reason) for w in ingester.failed[before:])
    if prepared is None:
        return
    if not part.name:
        run.own = prepared
        return
    run.batch.append(prepared)
    _flush(ingester, run, everything=False)


def _flush(ingester: Ingester, run: _Run, *, everything: bool) -> None:
    if run.batch and (everything or len(run.batch) >= ingester.kb.config.ingest.batch_documents):
        ingester._write(run.batch, run.stored)
        run.batch = []


def _write_own(
    ingester: Ingester,
    run: _Run,
    root_key: str,
    parser_name: str,
    content_hash: str,
    write: Callable[[Prepared], None] | None,
) -> None:
    """The container's own document, last: its text when it has one, what it holds, and the file's hash."""
    file = run.file
    failed = [list(item) for item in run.failed[:MOST_FAILURES_KEPT]]
    held = {"parts": len(run.names - {file.path}), "failed": failed}
    if run.own is None and file.path in run.names:  # its own text could not be read: keep what is stored
        return
    if run.own is not None:
        document = run.own.document
        metadata = {**document.metadata, "container": held}
        own = attrs.evolve(run.own, document=attrs.evolve(document, content_hash=content_hash, metadata=metadata))
    else:
        document = Document(
            path=file.path,
            content_hash=content_hash,
            size=file.size,
            title=PurePosixPath(file.path).name,
            parser=parser_name,
            source_root=root_key,
            metadata={"container": held},
            ingested_at=now_iso(),
        )
        own = Prepared(document, (), [])
    if write is None:
        ingester._write([own], run.stored)
    else:
        write(own)
