"""The core's SQLite store of record passes the store contract kit (``kb_core.testing.RecordStoreContract``),
made through its registration as kb makes it (``[store] backend = "sqlite"``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kb_core.config import Config
from kb_core.errors import NotFoundError
from kb_core.extend.record_store import RecordStore, StoreContext
from kb_core.extend.registry import load_registry
from kb_core.storage.store import StoreOfRecord
from kb_core.testing import RecordStoreContract


class TestSqliteStore(RecordStoreContract):
    @pytest.fixture
    def store_factory(self) -> Callable[[StoreContext], RecordStore]:
        return load_registry().store_factory("sqlite")


def test_the_sqlite_store_is_the_default_and_a_knowledge_base_opens_it(
    make_kb: Callable[..., object], tmp_path: Path
) -> None:
    assert Config().store.backend == "sqlite"
    kb = make_kb()
    assert isinstance(kb.store, StoreOfRecord)  # type: ignore[attr-defined]


def test_a_backend_that_is_not_registered_is_one_error_naming_those_that_are(make_kb: Callable[..., object]) -> None:
    kb = make_kb(store__backend="acme")
    with pytest.raises(NotFoundError, match=r"no store of record named 'acme' \(available: ([a-z]+, )*sqlite[,)]"):
        kb.store  # type: ignore[attr-defined]  # noqa: B018
