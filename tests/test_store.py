"""The store of record: migrations, WAL, atomic replacement and the outbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_core.errors import KbError
from kb_core.storage.store import MIGRATIONS, StoreOfRecord
from kb_core.types import Chunk, Document


def _doc(path: str, digest: str = "0" * 64) -> Document:
    return Document(path=path, content_hash=digest, size=1, title="t", parser="text", source_root="/r")


def _chunk(path: str, ordinal: int, text: str) -> Chunk:
    return Chunk(f"{path}-{ordinal}", path, ordinal, text, "h", ordinal + 1, ordinal + 1)


def test_migrations_are_applied_once_and_wal_is_on(tmp_path: Path) -> None:
    store = StoreOfRecord(tmp_path)
    assert store.schema_version == len(MIGRATIONS)
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"documents", "chunks", "answers", "eval_runs", "index_outbox", "index_state"} <= tables
    store.close()
    again = StoreOfRecord(tmp_path)
    assert again.schema_version == len(MIGRATIONS)
    again.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    store = StoreOfRecord(tmp_path)
    store.conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    store.close()
    with pytest.raises(KbError, match="newer kb"):
        StoreOfRecord(tmp_path)


def test_missing_kb_is_refused_without_create(tmp_path: Path) -> None:
    with pytest.raises(KbError, match="no knowledge base"):
        StoreOfRecord(tmp_path / "none", create=False)


def test_replace_is_atomic_and_writes_the_outbox(tmp_path: Path) -> None:
    store = StoreOfRecord(tmp_path)
    with store.transaction():
        store.replace_document(_doc("a.md"), [_chunk("a.md", 0, "one"), _chunk("a.md", 1, "two")])

    def crash_in_the_middle() -> None:
        with store.transaction():
            store.replace_document(_doc("a.md", "1" * 64), [_chunk("a.md", 0, "new")])
            raise RuntimeError("crash in the middle")

    with pytest.raises(RuntimeError, match="crash in the middle"):
        crash_in_the_middle()
    assert [c.text for c in store.chunks_of(["a.md"])] == ["one", "two"]
    assert store.get_document("a.md").content_hash == "0" * 64
    assert [p for _, p in store.pending_paths(0, 10)] == ["a.md"]
    with store.transaction():
        assert store.delete_documents(["a.md", "missing.md"]) == 1
    assert store.chunks_of(["a.md"]) == []
    assert [p for _, p in store.pending_paths(0, 10)] == ["a.md", "a.md"]


def test_outbox_trim_keeps_sequence_monotonic(tmp_path: Path) -> None:
    store = StoreOfRecord(tmp_path)
    with store.transaction():
        store.replace_document(_doc("a.md"), [_chunk("a.md", 0, "x")])
    last = store.last_seq()
    store.set_index_state("ix", last, "fp")
    store.trim_outbox(["ix"])
    assert store.pending_paths(0, 10) == []
    assert store.last_seq() == last
    with store.transaction():
        store.replace_document(_doc("b.md"), [])
    assert store.last_seq() == last + 1


def test_threads_sharing_a_store_write_one_transaction_at_a_time(tmp_path: Path) -> None:
    import threading

    from kb_core.storage.answers import save_eval_run

    store = StoreOfRecord(tmp_path / "kb")
    failures: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for n in range(25):
                with store.transaction():
                    save_eval_run(store, f"run-{worker}-{n}", "2026-01-01T00:00:00Z", "answers", {}, {}, None)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            failures.append(exc)

    workers = [threading.Thread(target=write, args=(w,)) for w in range(6)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert failures == []  # was "cannot start a transaction within a transaction"
    assert store.conn.execute("SELECT count(*) FROM eval_runs").fetchone()[0] == 150
