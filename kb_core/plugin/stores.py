"""What a store of record needs (where documents, chunks, the change feed, the answer ledger and threads
are kept): the :class:`RecordStore` contract, the ``register`` of ``register_stores`` and the records
the store exchanges with the core::

    from kb_core.plugin import hookimpl
    from kb_core.plugin.stores import RegisterStore, StoreContext


    @hookimpl
    def register_stores(register: RegisterStore) -> None:
        register("acme", lambda ctx: AcmeStore(ctx.options["url"]), needs="a running Acme server")

``[store] backend = "acme"`` chooses it; ``kb_core.testing.RecordStoreContract`` proves it.
"""

from kb_core.extend.hookspecs import RegisterStore
from kb_core.extend.record_store import (
    CitationRecord,
    LedgerAnswer,
    LedgerEntry,
    RecordStore,
    StoreContext,
    ThreadRecord,
    ThreadSummary,
    TurnRecord,
)

__all__ = [
    "CitationRecord",
    "LedgerAnswer",
    "LedgerEntry",
    "RecordStore",
    "RegisterStore",
    "StoreContext",
    "ThreadRecord",
    "ThreadSummary",
    "TurnRecord",
]
