"""The SQLite store keeps people, groups, grants and owners (the AccessStore contract kit)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kb_core.plugin.stores import RecordStore, StoreContext
from kb_core.testing import load_registry
from kb_core.testing.access_store import AccessStoreContract


class TestSqliteAccess(AccessStoreContract):
    @pytest.fixture
    def store_factory(self) -> Callable[[StoreContext], RecordStore]:
        return load_registry().store_factory("sqlite")
