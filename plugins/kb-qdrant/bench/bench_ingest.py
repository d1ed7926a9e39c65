"""Ingest throughput: Qdrant local mode versus sqlite-vec on the same SciFact chunks; prints chunks/s.

    flock /tmp/kb-heavy.lock python plugins/kb-qdrant/bench/bench_ingest.py --docs 2000

One chunk per SciFact document (title + blank line + text), upserted in batches of 256 and
committed after each batch, as the core's index sync does. The texts are embedded once with the
real default embedder (all-MiniLM-L6-v2, timed and printed too); both indexes then get those
vectors from a lookup table, so the figures compare the indexes' own write paths, not the model.
Then a search latency p50 over 50 SciFact queries for each.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kb_core import Chunk, Document, SearchQuery
from kb_core.testing import StoreOfRecord, real_embedder
from kb_qdrant.index import QdrantIndex
from kb_qdrant.settings import QdrantSettings
from kb_sqlitevec.index import SqliteVecIndex

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "datasets" / "scifact"
BATCH = 256


class Precomputed:
    """The real embedder's vectors, computed once, served from a table (query embeddings are live)."""

    def __init__(self, inner: Any, texts: Sequence[str]) -> None:
        self.inner = inner
        start = time.perf_counter()
        vectors = np.asarray(inner.embed_array(list(texts)), dtype=np.float32)
        self.embed_seconds = time.perf_counter() - start
        self.table = dict(zip(texts, vectors))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()


def load_chunks(store: StoreOfRecord, limit: int) -> list[Chunk]:
    """The first ``limit`` SciFact documents as one chunk each, recorded in the store of record."""
    chunks: list[Chunk] = []
    with (DATA / "corpus.jsonl").open(encoding="utf-8") as lines, store.transaction():
        for line in lines:
            if len(chunks) >= limit:
                break
            row = json.loads(line)
            text = f"{row['title']}\n\n{row['text']}"
            path = f"scifact/{row['_id']}.md"
            digest = hashlib.sha256(text.encode()).hexdigest()
            chunk = Chunk(f"sf{row['_id']}", path, 0, text, digest, 1, 3, heading_path=(row["title"][:60],))
            store.replace_document(Document(path, digest, len(text), row["title"], "text", "/scifact"), [chunk])
            chunks.append(chunk)
    return chunks


def ingest(index: Any, chunks: list[Chunk]) -> float:
    """Seconds to upsert and commit every chunk in sync-sized batches."""
    start = time.perf_counter()
    for offset in range(0, len(chunks), BATCH):
        batch = chunks[offset : offset + BATCH]
        index.delete(sorted({c.doc_path for c in batch}))
        index.upsert(batch)
        index.commit()
    return time.perf_counter() - start


def search_p50(index: Any, queries: list[str]) -> float:
    times = []
    for text in queries:
        start = time.perf_counter()
        index.search(SearchQuery(text, k=10))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=2000)
    args = parser.parse_args()
    queries = [json.loads(line)["text"] for line in (DATA / "queries.jsonl").open(encoding="utf-8")][:50]
    with tempfile.TemporaryDirectory() as tmp:
        store = StoreOfRecord(Path(tmp) / "kb")
        chunks = load_chunks(store, args.docs)
        embedder = Precomputed(real_embedder("minilm"), [c.text for c in chunks])
        print(
            f"{len(chunks)} SciFact chunks; embedding them once: {len(chunks) / embedder.embed_seconds:8.1f} chunks/s"
        )
        indexes = {
            "sqlite-vec": SqliteVecIndex(Path(tmp) / "sqlitevec", embedder, store),
            "qdrant (local mode)": QdrantIndex(QdrantSettings(url=None, path=Path(tmp) / "qdrant"), embedder, store),
        }
        for name, index in indexes.items():
            seconds = ingest(index, chunks)
            assert index.count() == len(chunks), (name, index.count())
            p50 = search_p50(index, queries)
            print(
                f"{name:20s} ingest {len(chunks) / seconds:8.1f} chunks/s ({seconds:6.2f} s)"
                f"   search p50 {p50 * 1000:6.1f} ms (k=10, query embedding included)"
            )
            index.close()
        store.close()


if __name__ == "__main__":
    main()
