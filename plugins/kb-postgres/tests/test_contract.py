"""The PostgreSQL store passes the store of record contract kit and the shared store's, made through its
registration as kb makes it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kb_core.plugin.stores import RecordStore, StoreContext
from kb_core.testing import RecordStoreContract, load_registry
from kb_core.testing.access_store import AccessStoreContract
from kb_core.testing.shared_store import SharedStoreContract


class PostgresStoreKit:
    """What every kit asks of a store: kb-postgres's registered factory, on the test's new schema (first in
    the bases, so that these fixtures replace the kit's)."""

    @pytest.fixture
    def store_factory(self) -> Callable[[StoreContext], RecordStore]:
        return load_registry().store_factory("postgres")

    @pytest.fixture
    def store_options(self, postgres_options: dict[str, object]) -> dict[str, object]:
        return postgres_options


class TestPostgresStore(PostgresStoreKit, RecordStoreContract):
    pass


class TestPostgresShared(PostgresStoreKit, SharedStoreContract):
    pass


class TestPostgresAccess(PostgresStoreKit, AccessStoreContract):
    pass
