"""An ingest's report after a process that held a folder's files was killed (found by bench/bench_faults.py, run b).

A ``kb serve`` SIGKILLed while it ingested an upload leaves the upload's other files queued in the store under the
uploads folder, with its leases. The client sends the upload again; the restarted server then ingests each file
as a target of its own (``KbService.upload``: the uploads folder is a stored root by then). The first target's
taking finishes every file the dead server left (their leases run out), and each later target finds its file
stored and counts it unchanged: the report names a file as added and counts it unchanged too (the bench saw
"added 24, unchanged 40" for an upload of 40 files, 16 of which were stored before the kill). The store is right:
every document once.
"""

from __future__ import annotations

from pathlib import Path

from kb_postgres.store import PostgresStore
from kb_postgres.testing import run_sql

from kb_core import KnowledgeBase, ingest_paths


def test_files_a_killed_process_left_are_counted_once_when_ingested_file_by_file(
    open_kb: KnowledgeBase, postgres_options: dict[str, object], tmp_path: Path
) -> None:
    docs = tmp_path / "uploads"
    docs.mkdir()
    names = ["a.md", "b.md", "c.md"]
    for name in names:
        (docs / name).write_text(f"Notes {name}.\n")
    assert ingest_paths(open_kb, [docs / "a.md"]).added == ["a.md"]  # (the folder is a stored root now)
    store = open_kb.store
    assert isinstance(store, PostgresStore)
    store.queue_files(str(docs.resolve()), ["b.md", "c.md"])
    store.take_files(str(docs.resolve()), 8)  # a process took them, and was killed
    run_sql(postgres_options, "UPDATE ingest_jobs SET lease_until = now() - interval '1 second'")

    report = ingest_paths(open_kb, [docs / name for name in names])  # as kb serve ingests an upload sent again

    assert sorted(report.added) == ["b.md", "c.md"]
    assert store.count_documents() == 3 and store.last_seq() == 3  # the store is right: each document once
    assert report.unchanged == 1  # a.md only; b.md and c.md were added, not unchanged
