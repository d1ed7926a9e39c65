"""Benchmark kb-sqlitevec on SciFact (BEIR) and on synthetic vectors; prints figures.

    python plugins/kb-sqlitevec/bench/bench_scifact.py --embedder minilm
    python plugins/kb-sqlitevec/bench/bench_scifact.py --embedder multilingual
    python plugins/kb-sqlitevec/bench/bench_scifact.py --scaling-only

What it measures (one chunk per document: title + blank line + text):

1. indexing: every document upserted through the index in batches of 256 (as the sync engine
   does), from an empty embedding cache: chunks/s, and the ratio of the whole upsert path to the
   time the embedding model spent inside it (timed around the embedder's calls, same run);
2. a cross-check of that ratio: the model alone, then the upsert path into a fresh index, on the
   first ``--ratio-docs`` documents;
3. quality: vector-only nDCG@10 / Recall@10 / MRR@10 over the 300 queries (trec_eval's definitions,
   as ``kb eval retrieval`` computes them), with the top-1 score of on-topic vs off-topic questions;
4. search latency p50/p95 (end to end, and without the query embedding);
5. ``--scaling``: search latency at 5k/20k/50k random 384-d vectors, against a numpy brute-force
   scan of the same vectors in the same process.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from kb_core import Chunk, Document, SearchQuery
from kb_core.plugin import ModelRef
from kb_core.testing import StoreOfRecord, real_embedder
from kb_sqlitevec.index import SqliteVecIndex

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "datasets" / "scifact"
BATCH_DOCS = 256
OFF_TOPIC = [
    "how long should I boil an egg",
    "who won the 1998 football world cup",
    "best hiking trails in the alps",
    "how to change a flat bicycle tyre",
    "what time does the train to paris leave",
    "recipe for chocolate cake",
    "how do I reset my router password",
    "cheap flights to tokyo in december",
    "rules of chess castling",
    "what is the capital of australia",
    "how to learn to play the guitar",
    "movie showtimes this weekend",
]


def load_queries(path: Path) -> dict[str, str]:
    """query id -> text, from BEIR's ``queries.jsonl``."""
    records = (json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip())
    return {str(r.get("id", r.get("_id"))): str(r["text"]) for r in records}


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """query id -> {document id: relevance}, from BEIR's ``qrels.tsv`` (its header line skipped)."""
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc_id, relevance = line.split()[:3]
        qrels.setdefault(qid, {})[doc_id] = int(relevance)
    return qrels


def ndcg_at_k(ranking: Sequence[str], judged: dict[str, int], k: int = 10) -> float:
    """trec_eval ``ndcg_cut.k``: linear gain, log2(rank + 1) discount, ideal from the judgements."""
    dcg = sum(max(judged.get(doc, 0), 0) / math.log2(i + 2) for i, doc in enumerate(ranking[:k]))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranking: Sequence[str], judged: dict[str, int], k: int = 10) -> float:
    """trec_eval ``recall.k``: relevant documents in the top k over all relevant documents."""
    relevant = {doc for doc, g in judged.items() if g > 0}
    return len(relevant.intersection(ranking[:k])) / len(relevant) if relevant else 0.0


def mrr_at_k(ranking: Sequence[str], judged: dict[str, int], k: int = 10) -> float:
    """The reciprocal rank of the first relevant document within the top k (0 when there is none)."""
    return next((1.0 / (i + 1) for i, doc in enumerate(ranking[:k]) if judged.get(doc, 0) > 0), 0.0)


def documents(doc_paths: Iterable[str]) -> list[str]:
    """Document ids (a path's stem) in order of their best-ranked chunk, each once."""
    return list(dict.fromkeys(PurePosixPath(path).stem for path in doc_paths))


def percentile(values: Sequence[float], fraction: float) -> float:
    """Linear interpolation between ranks, as every kb report computes it."""
    return float(np.percentile(values, fraction * 100)) if len(values) else 0.0


class Timed:
    """Delegates to an embedder and adds up the seconds spent in its calls."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.document_seconds = 0.0
        self.query_seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        try:
            return self.inner.embed_array(texts)
        finally:
            self.document_seconds += time.perf_counter() - start

    def embed_query(self, text: str) -> list[float]:
        start = time.perf_counter()
        try:
            return self.inner.embed_query(text)
        finally:
            self.query_seconds += time.perf_counter() - start


class RandomEmbedder:
    """Random unit vectors: for measuring the index alone at sizes no model run could afford here."""

    max_tokens = 512

    def __init__(self, dimensions: int = 384, seed: int = 0) -> None:
        self.dimensions = dimensions
        self.model_ref = ModelRef(id=f"random-{dimensions}", provider="bench", dimensions=dimensions)
        self.rng = np.random.default_rng(seed)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [1 for _ in texts]

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.rng.standard_normal((len(texts), self.dimensions)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()


def load_chunks(store: StoreOfRecord) -> list[Chunk]:
    """SciFact documents as one chunk each, also written to the store of record (for snippets)."""
    chunks = []
    with store.transaction():
        for line in (DATA / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            text = f"{record['title']}\n\n{record['text']}"
            path = f"{record['_id']}.md"
            chunk = Chunk(record["_id"], path, 0, text, str(hash(text)), 1, 3)
            store.replace_document(
                Document(path, chunk.content_hash, len(text), record["title"], "bench", "/"), [chunk]
            )
            chunks.append(chunk)
    return chunks


def ms(values: Sequence[float]) -> str:
    return f"p50 {percentile(values, 0.5) * 1000:.1f} ms, p95 {percentile(values, 0.95) * 1000:.1f} ms"


def index_all(index: SqliteVecIndex, chunks: list[Chunk]) -> float:
    start = time.perf_counter()
    for offset in range(0, len(chunks), BATCH_DOCS):
        index.upsert(chunks[offset : offset + BATCH_DOCS])
        index.commit()
    return time.perf_counter() - start


def bench_model(name: str, ratio_docs: int, work: Path) -> None:
    embedder = real_embedder(name)
    embedder.embed_array(["warm up the model"] * 4)
    store = StoreOfRecord(work / name)
    chunks = load_chunks(store)
    print(f"== {name}: {embedder.model_ref.id}, {len(chunks)} chunks")

    if ratio_docs > 0:
        subset = chunks[:ratio_docs]
        start = time.perf_counter()
        embedder.embed_array([c.text for c in subset])
        alone = time.perf_counter() - start
        fresh = SqliteVecIndex(work / name / "ratio", embedder, store)
        through_index = index_all(fresh, subset)
        fresh.close()
        print(
            f"ratio check on {len(subset)} chunks: model alone {alone:.1f} s, upsert path {through_index:.1f} s,"
            f" ratio {through_index / alone:.3f}"
        )

    timed = Timed(embedder)
    index = SqliteVecIndex(work / name / "full", timed, store)
    total = index_all(index, chunks)
    print(
        f"indexing: {len(chunks)} chunks in {total:.1f} s = {len(chunks) / total:.1f} chunks/s;"
        f" model {timed.document_seconds:.1f} s inside it; upsert path / model = {total / timed.document_seconds:.3f}"
    )
    replay = index_all(index, chunks)
    print(f"re-upsert of the same chunks (all cache hits): {replay:.2f} s = {len(chunks) / replay:.0f} chunks/s")

    queries, qrels = load_queries(DATA / "queries.jsonl"), load_qrels(DATA / "qrels.tsv")
    ndcg, recall, mrr, latency, knn_only, top_on = [], [], [], [], [], []
    for qid, text in queries.items():
        before = timed.query_seconds
        start = time.perf_counter()
        hits = index.search(SearchQuery(text, k=10))
        elapsed = time.perf_counter() - start
        latency.append(elapsed)
        knn_only.append(elapsed - (timed.query_seconds - before))
        ranking = documents(h.doc_path for h in hits)
        judged = qrels.get(qid, {})
        ndcg.append(ndcg_at_k(ranking, judged))
        recall.append(recall_at_k(ranking, judged))
        mrr.append(mrr_at_k(ranking, judged))
        top_on.append(hits[0].score)
    top_off = [index.search(SearchQuery(q, k=1))[0].score for q in OFF_TOPIC]
    n = len(queries)
    print(
        f"quality over {n} queries: nDCG@10 {sum(ndcg) / n:.4f}, Recall@10 {sum(recall) / n:.4f},"
        f" MRR@10 {sum(mrr) / n:.4f}"
    )
    print(
        f"top-1 score: on-topic p10 {percentile(top_on, 0.1):.3f} median {statistics.median(top_on):.3f};"
        f" off-topic median {statistics.median(top_off):.3f} max {max(top_off):.3f}"
    )
    print(f"search latency at {index.count()} chunks: end to end {ms(latency)}; without query embedding {ms(knn_only)}")
    index.close()
    store.close()


def bench_scaling(sizes: list[int], work: Path, queries: int = 50) -> None:
    print("== scaling (random 384-d unit vectors, k=10)")
    store = StoreOfRecord(work / "scaling")
    embedder = RandomEmbedder()
    index = SqliteVecIndex(work / "scaling" / "idx", embedder, store)
    added = 0
    for size in sizes:
        batch = [Chunk(f"c{i}", f"doc{i // 10}.md", i % 10, f"t{i}", f"h{i}", 1, 1) for i in range(added, size)]
        start = time.perf_counter()
        index_all(index, batch)
        insert = time.perf_counter() - start
        added = size
        matrix = np.stack(
            [
                np.frombuffer(v, dtype=np.float32)
                for (v,) in index.conn.execute("SELECT vector FROM embedding_cache WHERE model = 'random-384@384'")
            ]
        )
        latency, numpy_scan = [], []
        for _ in range(queries):
            text = "q"
            start = time.perf_counter()
            index.search(SearchQuery(text, k=10))
            latency.append(time.perf_counter() - start)
            vector = np.asarray(embedder.embed_query(text), dtype=np.float32)
            start = time.perf_counter()
            np.argpartition(-(matrix @ vector), 10)[:10]
            numpy_scan.append(time.perf_counter() - start)
        filtered = []
        for _ in range(queries // 5):
            start = time.perf_counter()
            index.search(SearchQuery("q", k=10, path_glob="doc1*.md"))
            filtered.append(time.perf_counter() - start)
        print(
            f"{size:>6} vectors: search {ms(latency)}; with path_glob {ms(filtered)};"
            f" numpy scan {ms(numpy_scan)}; (inserted {len(batch)} in {insert:.1f} s)"
        )
    index.close()
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--embedder", default="minilm", help="registered embedder name")
    parser.add_argument("--ratio-docs", type=int, default=500, help="0 skips the cross-check")
    parser.add_argument("--scaling", default="5000,20000,50000", help="comma-separated sizes ('' to skip)")
    parser.add_argument("--scaling-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if not args.scaling_only:
            bench_model(args.embedder, args.ratio_docs, work)
        if args.scaling:
            bench_scaling([int(s) for s in args.scaling.split(",")], work)


if __name__ == "__main__":
    main()
