"""What a store of record needs (where documents, chunks, the change feed, the answer ledger and threads
are kept): the :class:`RecordStore` contract, the ``register`` of ``register_stores`` and the records
the store exchanges with the core::

    from kb_core.plugin import hookimpl
    from kb_core.plugin.stores import RegisterStore, StoreContext


    @hookimpl
    def register_stores(register: RegisterStore) -> None:
        register("acme", lambda ctx: AcmeStore(ctx.options["url"]), needs="a running Acme server")

``[store] backend = "acme"`` chooses it; ``kb_core.testing.RecordStoreContract`` proves it. A store several kb
processes write at once (each with its own folder and indexes) is also a :class:`SharedRecordStore`
(``kb_core.testing.SharedStoreContract``); a server keeps its folder's indexes following it with
:func:`follow_feed`. A store with SQL tables maps documents, chunks and the ledger's records to rows as the core's
SQLite store does, with the ``*_COLUMNS``, ``*_values`` and ``*_from_row`` names.

People, groups and grants: a store of record that keeps them is also an :class:`AccessStore` (both stores kb
ships are); a server that knows who asks runs each request under :func:`restricted_to` with the person's
:class:`Access`, and every search in it reads only their folders (:func:`current_access`).
"""

from typing import TYPE_CHECKING, Any

from kb_core.extend.access_store import AccessStore, GrantRecord, PersonRecord
from kb_core.extend.hookspecs import RegisterStore
from kb_core.extend.record_store import (
    CitationRecord,
    IngestJob,
    LedgerAnswer,
    LedgerEntry,
    RecordStore,
    SetAsideFile,
    SharedRecordStore,
    StoreContext,
    ThreadRecord,
    ThreadSummary,
    TurnRecord,
)
from kb_core.extend.store_rows import (
    CHUNK_COLUMNS,
    CITATION_COLUMNS,
    DOCUMENT_COLUMNS,
    chunk_values,
    citation_check_values,
    citation_from_row,
    citation_values,
    document_values,
    entry_from_row,
    summary_from_row,
)
from kb_core.retrieval.access import Access, current_access, restricted_to

if TYPE_CHECKING:
    from kb_core.ingest.follow import FeedFollower, follow_feed

__all__ = [
    "CHUNK_COLUMNS",
    "CITATION_COLUMNS",
    "DOCUMENT_COLUMNS",
    "Access",
    "AccessStore",
    "CitationRecord",
    "FeedFollower",
    "GrantRecord",
    "IngestJob",
    "LedgerAnswer",
    "LedgerEntry",
    "PersonRecord",
    "RecordStore",
    "RegisterStore",
    "SetAsideFile",
    "SharedRecordStore",
    "StoreContext",
    "ThreadRecord",
    "ThreadSummary",
    "TurnRecord",
    "chunk_values",
    "citation_check_values",
    "citation_from_row",
    "citation_values",
    "current_access",
    "document_values",
    "entry_from_row",
    "follow_feed",
    "restricted_to",
    "summary_from_row",
]


def __getattr__(name: str) -> Any:
    """The follower's names, imported on first use (they load the pipeline; registering a store does not)."""
    if name in ("FeedFollower", "follow_feed"):
        from kb_core.ingest import follow

        return getattr(follow, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
