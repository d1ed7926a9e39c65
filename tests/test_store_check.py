"""The SQLite store's ``check()`` (what ``kb doctor`` shows about the store): SQLite's own check of the file."""

from __future__ import annotations

from pathlib import Path

from kb_core.storage.store import DB_NAME, StoreOfRecord
from kb_core.testing.fakes import store_document

PAGE = 4096


def test_a_damaged_file_is_one_problem_line_with_what_to_do(tmp_path: Path) -> None:
    store = StoreOfRecord(tmp_path / "kb")
    for number in range(200):
        store_document(store, f"d{number}.md", (f"text {number} " * 50,))
    assert store.check() == []
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    path = tmp_path / "kb" / DB_NAME
    data = bytearray(path.read_bytes())
    for page in range(3, len(data) // PAGE, 7):  # (page 1, the header and schema, stays whole: the file opens)
        data[page * PAGE + 100 : page * PAGE + 400] = b"\xff" * 300
    path.write_bytes(bytes(data))
    damaged = StoreOfRecord(tmp_path / "kb", create=False)
    try:
        [problem] = damaged.check()
    finally:
        damaged.close()
    assert problem.component == "store" and problem.message.startswith(f"{path} is damaged: ")
    assert "\n" not in problem.message and "backup" in problem.fix
