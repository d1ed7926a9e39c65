"""The store of record's write and read paths, SQLite against PostgreSQL: 300 documents of 10 chunks, each stored in
its own transaction as ``kb_core.testing.store_document`` does, then every chunk read back (``iter_chunks``) and a
third of the documents' chunks (``chunks_of``, then ``get_chunks`` by id).

    python plugins/kb-postgres/bench/bench_store.py                    # starts PostgreSQL with pgserver
    python plugins/kb-postgres/bench/bench_store.py postgresql://...   # an existing server (a new schema)

Prints one line per store. Needs ``pip install -e "plugins/kb-postgres[test]"``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

from kb_postgres.testing import postgres_server

from kb_core import Config
from kb_core.plugin.stores import StoreContext
from kb_core.testing import load_registry, store_document

DOCUMENTS, CHUNKS = 300, 10


def measure(name: str, options: dict[str, object]) -> str:
    """One store's line."""
    folder = Path(tempfile.mkdtemp(prefix="kb-bench-store-"))
    store = load_registry().store_factory(name)(StoreContext(Config(), options, directory=folder / "kb"))
    texts = tuple(f"paragraph {i} " + "words " * 60 for i in range(CHUNKS))
    began = time.perf_counter()
    for number in range(DOCUMENTS):
        store_document(store, f"docs/{number:04d}.md", texts)
    wrote = time.perf_counter() - began
    began = time.perf_counter()
    every = sum(len(batch) for batch in store.iter_chunks(1000))
    some = store.chunks_of([f"docs/{number:04d}.md" for number in range(0, DOCUMENTS, 3)])
    found = store.get_chunks([chunk.chunk_id for chunk in some])
    read = time.perf_counter() - began
    store.close()
    shutil.rmtree(folder)
    return (
        f"{name}: wrote {DOCUMENTS} documents x {CHUNKS} chunks in {wrote:.2f} s ({DOCUMENTS / wrote:.0f} documents/s);"
        f" read {every} chunks, then {len(found)} by document and id, in {read * 1000:.0f} ms"
    )


def main() -> None:
    """Both stores, on the server named by the first argument or on one pgserver starts."""
    with postgres_server(sys.argv[1] if len(sys.argv) > 1 else "", prefix="kb-bench-pg-") as url:
        print(measure("sqlite", {}))
        print(measure("postgres", {"url": url, "schema": f"bench_{uuid.uuid4().hex[:8]}"}))


if __name__ == "__main__":
    main()
