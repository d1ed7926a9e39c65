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
:func:`follow_feed`.
"""

from typing import TYPE_CHECKING, Any

from kb_core.extend.hookspecs import RegisterStore
from kb_core.extend.record_store import (
    CitationRecord,
    IngestJob,
    LedgerAnswer,
    LedgerEntry,
    RecordStore,
    SharedRecordStore,
    StoreContext,
    ThreadRecord,
    ThreadSummary,
    TurnRecord,
)

if TYPE_CHECKING:
    from kb_core.ingest.follow import FeedFollower, follow_feed

__all__ = [
    "CitationRecord",
    "FeedFollower",
    "IngestJob",
    "LedgerAnswer",
    "LedgerEntry",
    "RecordStore",
    "RegisterStore",
    "SharedRecordStore",
    "StoreContext",
    "ThreadRecord",
    "ThreadSummary",
    "TurnRecord",
    "follow_feed",
]


def __getattr__(name: str) -> Any:
    """The follower's names, imported on first use (they load the pipeline; registering a store does not)."""
    if name in ("FeedFollower", "follow_feed"):
        from kb_core.ingest import follow

        return getattr(follow, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
