"""The core's store of record, SQLite, registered through ``register_stores`` like any other store.

It is always loaded (``KB_LOAD_PLUGINS`` cannot leave it out: no knowledge base opens without a
store of record) and chosen by ``[store] backend = "sqlite"``, the default.
"""

from __future__ import annotations

from kb_core.extend.hookspecs import RegisterStore, hookimpl
from kb_core.extend.record_store import RecordStore, StoreContext

#: The name of the built-in store of record.
SQLITE = "sqlite"


def sqlite_store(ctx: StoreContext) -> RecordStore:
    """The SQLite store of record of ``ctx.directory`` (``kb.sqlite3``), made when absent if ``ctx.create``."""
    from kb_core.storage.store import StoreOfRecord

    return StoreOfRecord(ctx.directory, create=ctx.create)


@hookimpl
def register_stores(register: RegisterStore) -> None:
    """Register the SQLite store of record."""
    register(
        SQLITE,
        sqlite_store,
        description="one SQLite file in the knowledge base folder (kb.sqlite3); one writer at a time",
        licence="public domain (SQLite)",
    )
