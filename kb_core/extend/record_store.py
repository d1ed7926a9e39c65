"""The store of record as a role a plugin can fill: the :class:`RecordStore` contract and the records it exchanges.

The store of record owns identity and content: documents and their chunks, the change feed that
derived indexes follow (the outbox and each index's position in it), the answer ledger with what
its citations rest on, and threads. Not to be confused with an *index* (DESIGN.md's "Store" role,
registered by ``register_indexes``): an index is derived from the store of record and rebuilt from
it. kb ships one store of record, SQLite (``kb_core.storage.store.StoreOfRecord``); another is
registered through ``register_stores`` and chosen by ``[store] backend``.

Everything kb stores goes through these methods; the logic around them (what a citation's
re-check concludes, what an answer's state is, when a thread is new) stays in the core, so a store
holds no policy: it keeps rows and finds them. A store passes ``kb_core.testing.RecordStoreContract``.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol, runtime_checkable

import attrs

from kb_core.extend.contracts import FactoryContext
from kb_core.types import Chunk, Document, Problem


@attrs.frozen(kw_only=True)
class StoreContext(FactoryContext):
    """What a store factory receives: the configuration (``ctx.config``, ``ctx.options`` its
    ``[backends.<name>]`` table), the knowledge base folder (``directory``: where a file store keeps
    its file, and where kb keeps what is not in the store) and whether to make it when absent."""

    directory: Path
    create: bool = True


@attrs.frozen
class LedgerAnswer:
    """An answer as the ledger keeps it: its words, and its parts as JSON texts written by the core."""

    answer_id: str
    created_at: str
    question: str
    answer: str
    grounded: bool
    refusal_reason: str | None
    citations_json: str = "[]"
    model_json: str = "{}"
    embedding_json: str | None = None
    prompt_template_version: str = ""
    retrieval_json: str = "{}"
    usage_json: str = "{}"
    packed_chunks_json: str | None = None


@attrs.frozen
class LedgerEntry:
    """A stored answer as listed and shown (``answer`` is empty in a listing)."""

    answer_id: str
    created_at: str
    question: str
    grounded: bool
    refusal_reason: str | None
    answer: str = ""


@attrs.frozen
class CitationRecord:
    """What one citation of a stored answer rests on, and how it stood when last checked.

    ``row_id`` is the store's own key of the row (0 for a row not stored yet); an update names it.
    """

    answer_id: str
    marker: int
    chunk_id: str
    doc_path: str
    start_line: int
    end_line: int
    cited_text: str | None = None
    fingerprint: str | None = None
    doc_hash: str | None = None
    state: str = "unchecked"
    reason: str = ""
    now_text: str | None = None
    checked_at: str | None = None
    row_id: int = 0


@attrs.frozen
class TurnRecord:
    """One turn of a thread as kept: ``answer_json`` is the turn's whole answer (``answer.v1``)."""

    position: int
    answer_id: str
    asked: str
    standalone: str
    method: str
    rewrite_ms: float
    rewrite_prompt_tokens: int
    created_at: str
    answer_json: str


@attrs.frozen
class ThreadRecord:
    """A thread's id and times."""

    thread_id: str
    created_at: str
    updated_at: str


@attrs.frozen
class ThreadSummary:
    """A thread in the list: its id, times, how many turns and its first question."""

    thread_id: str
    created_at: str
    updated_at: str
    turns: int
    first_question: str


@runtime_checkable
class RecordStore(Protocol):
    """The store of record of one knowledge base (see the module's docstring).

    Writes happen inside ``transaction()`` (one writer at a time, committed together or rolled back
    together; not nested) unless a method says it is its own. A storage failure is a one-line
    :class:`~kb_core.errors.KbError`.
    Orders are part of the contract: paths and ids sort as their code points do.
    """

    #: The knowledge base folder (messages name it; kb keeps its indexes and caches there).
    kb_dir: Path

    @property
    def schema_version(self) -> int:
        """How many of the store's migrations are applied (shown by ``kb doctor`` and ``kb inspect``)."""
        ...

    def transaction(self) -> AbstractContextManager[object]: ...

    def close(self) -> None: ...

    def check(self) -> list[Problem]:
        """What ``kb doctor`` should report about the store itself (an empty list when healthy): its schema
        against this kb's migrations, damage, a server that cannot be written; each with the command that
        fixes it. A store that cannot be opened at all raises its one-line error when opened instead."""
        ...

    # -- documents and chunks
    def replace_document(self, document: Document, chunks: Sequence[Chunk], mtime_ns: int = 0) -> None: ...

    def delete_documents(self, paths: Iterable[str]) -> int: ...

    def get_document(self, path: str) -> Document | None: ...

    def list_documents(self, prefix: str = "") -> list[Document]: ...

    def count_documents(self) -> int: ...

    def document_hashes(self, source_root: str | None = None) -> dict[str, str]: ...

    def document_hashes_of(self, paths: Sequence[str]) -> dict[str, str]: ...

    def document_owners(self) -> dict[str, str]: ...

    def source_roots(self) -> list[str]: ...

    def repoint_root(self, old: str, new: str) -> int: ...

    def chunks_of(self, doc_paths: Sequence[str]) -> list[Chunk]: ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]: ...

    def iter_chunks(self, batch: int = 1000) -> Iterator[list[Chunk]]: ...

    def count_chunks(self) -> int: ...

    def sample_chunk_texts(self, count: int, length: int) -> list[str]: ...

    # -- the change feed
    def last_seq(self) -> int: ...

    def pending_paths(self, after_seq: int, limit: int) -> list[tuple[int, str]]: ...

    def index_state(self, name: str) -> tuple[int, str]: ...

    def set_index_state(self, name: str, applied_seq: int, fingerprint: str) -> None: ...

    def trim_outbox(self, index_names: Sequence[str]) -> None: ...

    # -- the answer ledger
    def insert_answer(self, answer: LedgerAnswer) -> None: ...

    def insert_eval_run(
        self, run_id: str, created_at: str, kind: str, config_json: str, metrics_json: str, report_path: str | None
    ) -> None: ...

    def answer_entries(
        self, limit: int | None, *, stale_only: bool = False, owner: str | None = None
    ) -> tuple[list[LedgerEntry], int]:
        """The newest answers first (at most ``limit``; only those with a stale or unverifiable citation with
        ``stale_only``; with ``owner``, only those the person owns: a store that keeps no people has none) and how
        many there are in all (of that kind), in the store's query."""
        ...

    def answer_entry(self, answer_id: str) -> LedgerEntry | None: ...

    def answer_citations_json(self, answer_id: str) -> str | None: ...

    def purge_answers(
        self, ids: Sequence[str] = (), *, before: datetime.date | None = None, everything: bool = False
    ) -> list[str]: ...

    def insert_citations(self, records: Sequence[CitationRecord]) -> None: ...

    def citations_of(self, answer_ids: Sequence[str]) -> list[CitationRecord]: ...

    def citations_citing(self, paths: Sequence[str] | None) -> list[CitationRecord]: ...

    def update_citations(self, records: Sequence[CitationRecord]) -> None: ...

    # -- threads
    def create_thread(self, thread_id: str, created_at: str) -> None: ...

    def thread_record(self, thread_id: str) -> ThreadRecord | None: ...

    def append_turn(self, thread_id: str, turn: TurnRecord) -> int: ...

    def turns_of(self, thread_id: str) -> list[TurnRecord]: ...

    def thread_summaries(self, limit: int | None, *, owner: str | None = None) -> list[ThreadSummary]:
        """Threads, the most recently continued first (at most ``limit``; with ``owner``, only those the person
        owns: a store that keeps no people has none), in the store's query."""
        ...

    def delete_thread(self, thread_id: str) -> int | None: ...


@attrs.frozen
class IngestJob:
    """A file of a folder (``root``, ``path`` as stored) one ingest worker took from a shared store's queue.

    ``token`` names that taking: only its holder can finish the job, and only while its lease holds."""

    root: str
    path: str
    token: str
    #: How many workers took this file before and stopped (crashed, were killed) before finishing it.
    taken_before: int = 0


@attrs.frozen
class SetAsideFile:
    """A file of a shared store's queue set aside: no worker takes it until it is released (it changed, or
    ``kb ingest --retry-failed``). ``content_hash`` is the SHA-256 of its bytes then, ``reason`` why (kb's words)."""

    root: str
    path: str
    content_hash: str
    reason: str


@runtime_checkable
class SharedRecordStore(RecordStore, Protocol):
    """A store of record that several kb processes, each with its own knowledge base folder, write at once.

    The SQLite store is not one (one writer, one folder). For a shared store:

    - ``index_state`` and ``set_index_state`` are the *handle's folder's* (each folder keeps its own indexes, so
      each follows the feed on its own); ``trim_outbox`` keeps what any folder seen lately still has to apply,
      and an index whose position was trimmed while its folder was away reads as never built (``(0, "")``),
      so it is rebuilt from the store;
    - its transactions, not ``writer.lock``, keep writes whole: the file lock only keeps one process at a time
      updating a folder's indexes;
    - ``kb ingest`` shares a folder's files among any number of workers through its queue. A document the store
      cannot hold is refused with a :class:`~kb_core.errors.KbError` whose exit code is not ``EXIT_STORAGE`` (that
      file's failure); an ``EXIT_STORAGE`` error (or a :class:`~kb_core.errors.WriterBusyError`) is the store's own
      trouble, and the core returns the batch it was writing (``return_files``).
    """

    def wait_for_change(self, after_seq: int, timeout_s: float) -> int:
        """The feed's newest seq as soon as it passes ``after_seq``, or after ``timeout_s`` (whatever it is)."""
        ...

    def queue_files(self, root: str, paths: Sequence[str]) -> None:
        """Queue these files of folder ``root`` for ingest (a file queued or taken already is left as it is)."""
        ...

    def take_files(self, root: str, limit: int) -> list[IngestJob]:
        """Take up to ``limit`` queued files of ``root`` (or files whose taker's lease ran out), never one another
        worker holds nor one set aside; each is this worker's until it is finished or its lease runs out. A file
        whose taker's lease ran out is taken alone (``taken_before`` counts those takers), so a file that kills
        its worker takes no other file down with it the next time."""
        ...

    def files_in_progress(self, root: str) -> int:
        """How many files of ``root`` are queued or held by a worker (not those set aside)."""
        ...

    def set_aside(self, job: IngestJob, content_hash: str, reason: str) -> bool:
        """Set ``job``'s file aside (:class:`SetAsideFile`) instead of finishing it; False when the job is no longer
        this worker's."""
        ...

    def files_set_aside(self, root: str | None = None) -> list[SetAsideFile]:
        """The files set aside (of ``root``, or of every folder), by folder then path."""
        ...

    def release_files(self, root: str, paths: Sequence[str] | None = None) -> int:
        """Forget that these files of ``root`` (every one, when ``paths`` is None) were set aside: the next
        ``queue_files`` queues them anew. How many were."""
        ...

    def finish_file(self, job: IngestJob) -> bool:
        """Remove ``job`` from the queue, in the caller's transaction; False when it is no longer this worker's
        (its lease ran out and another took it): then nothing of it may be written."""
        ...

    def return_files(self, jobs: Sequence[IngestJob]) -> int:
        """Put ``jobs`` back in the queue untaken, as they were before this worker took them (their takers not
        counted), for any worker to take at once; those no longer this worker's are left alone. How many were.
        The core returns a batch it failed to write (a lost server, a busy lock, a bug), never one it stopped in."""
        ...


__all__ = [
    "CitationRecord",
    "IngestJob",
    "LedgerAnswer",
    "LedgerEntry",
    "RecordStore",
    "SetAsideFile",
    "SharedRecordStore",
    "StoreContext",
    "ThreadRecord",
    "ThreadSummary",
    "TurnRecord",
]
