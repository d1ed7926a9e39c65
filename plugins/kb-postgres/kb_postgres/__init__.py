"""kb-postgres: kb's store of record on PostgreSQL (documents, chunks, the change feed, answers, threads).

Registers the store ``postgres``, chosen by ``[store] backend = "postgres"``; where the server is lives
in ``[backends.postgres]`` (see :mod:`kb_postgres.settings`). The store is :mod:`kb_postgres.store`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kb_core.plugin import hookimpl
from kb_core.plugin.options import RegisterOptions
from kb_core.plugin.stores import RegisterStore, StoreContext

if TYPE_CHECKING:
    from kb_postgres.store import PostgresStore

__all__ = ["open_store", "register_options", "register_stores"]

NAME = "postgres"


def open_store(ctx: StoreContext) -> PostgresStore:
    """The PostgreSQL store of record ``ctx.options`` (``[backends.postgres]``) names, its schema made and migrated
    when ``ctx.create``. psycopg is imported here, not at registration, to keep ``kb`` start-up fast."""
    from kb_postgres.settings import PostgresSettings
    from kb_postgres.store import PostgresStore

    return PostgresStore(PostgresSettings.resolve(ctx.options, os.environ), ctx.directory, create=ctx.create)


@hookimpl
def register_stores(register: RegisterStore) -> None:
    """The store of record ``postgres``."""
    register(
        NAME,
        open_store,
        description="a schema in a PostgreSQL database: several kb processes, on one machine or several, share it",
        licence="psycopg: LGPL-3.0-only",
        needs="a PostgreSQL server ([backends.postgres] url)",
    )


@hookimpl
def register_options(register: RegisterOptions) -> None:
    """The options of ``[backends.postgres]``, checked by kb at start."""
    from kb_postgres.settings import OPTIONS

    register(NAME, OPTIONS)
