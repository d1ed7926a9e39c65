"""The SQLite store keeps people, groups, grants and owners (the AccessStore contract kit)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from kb_core.plugin.stores import RecordStore, StoreContext
from kb_core.storage.store import MIGRATIONS, StoreOfRecord
from kb_core.testing import load_registry
from kb_core.testing.access_store import AccessStoreContract


class TestSqliteAccess(AccessStoreContract):
    @pytest.fixture
    def store_factory(self) -> Callable[[StoreContext], RecordStore]:
        return load_registry().store_factory("sqlite")


def test_migration_6_drops_owners_of_people_answers_and_threads_gone_and_keeps_the_rest(tmp_path: Path) -> None:
    StoreOfRecord(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "kb.sqlite3")  # a knowledge base as migration 5 left it
    conn.executescript(
        "DROP TABLE access_owners;"
        "CREATE TABLE access_owners (kind TEXT NOT NULL, item_id TEXT NOT NULL, person TEXT NOT NULL,"
        " PRIMARY KEY (kind, item_id));"
        "INSERT INTO access_people VALUES ('ann', 'h1', 't');"
        "INSERT INTO answers (answer_id, created_at, question, answer, grounded, prompt_template_version)"
        " VALUES ('ans_kept', 't', 'q', 'a', 1, 'v1'), ('ans_orphan', 't', 'q', 'a', 1, 'v1');"
        "INSERT INTO threads (thread_id, created_at, updated_at) VALUES ('thr_kept', 't', 't');"
        "INSERT INTO access_owners VALUES ('answer', 'ans_kept', 'ann'), ('thread', 'thr_kept', 'ann'),"
        " ('answer', 'ans_orphan', 'removed'), ('answer', 'ans_purged', 'ann'), ('thread', 'thr_gone', 'ann');"
        "PRAGMA user_version = 5;"
    )
    conn.close()
    store = StoreOfRecord(tmp_path)
    assert store.schema_version == len(MIGRATIONS)
    rows = sorted(tuple(r) for r in store.conn.execute("SELECT kind, item_id, person FROM access_owners"))
    assert rows == [("answer", "ans_kept", "ann"), ("thread", "thr_kept", "ann")]
    assert store.remove_person("ann") and store.owner_of("answer", "ans_kept") is None  # the foreign key holds
    store.close()
