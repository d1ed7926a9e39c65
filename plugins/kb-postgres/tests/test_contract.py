"""The PostgreSQL store passes the store of record contract kit and the shared store's, made through its
registration as kb makes it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kb_core.plugin.stores import RecordStore, StoreContext
from kb_core.testing import RecordStoreContract, load_registry
from kb_core.testing.access_store import AccessStoreContract
from kb_core.testing.shared_store import SharedStoreContract


class TestPostgresStore(RecordStoreContract):
    @pytest.fixture
    def store_factory(self) -> Callable[[StoreContext], RecordStore]:
        return load_registry().store_factory("postgres")

    @pytest.fixture
    def store_options(self, postgres_options: dict[str, object]) -> dict[str, object]:
        return postgres_options


class TestPostgresShared(SharedStoreContract):
    @pytest.fixture
    def store_factory(self) -> Callable[[StoreContext], RecordStore]:
        return load_registry().store_factory("postgres")

    @pytest.fixture
    def store_options(self, postgres_options: dict[str, object]) -> dict[str, object]:
        return postgres_options


class TestPostgresAccess(AccessStoreContract):
    @pytest.fixture
    def store_factory(self) -> Callable[[StoreContext], RecordStore]:
        return load_registry().store_factory("postgres")

    @pytest.fixture
    def store_options(self, postgres_options: dict[str, object]) -> dict[str, object]:
        return postgres_options
