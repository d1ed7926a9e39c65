"""Vector search latency and recall@10 as the index grows: brute force, binary + rescore, HNSW graph.

    flock /tmp/kb-heavy.lock python plugins/kb-sqlitevec/bench/ann_scale.py --sizes 10000,100000,1000000

The corpus is synthetic and clustered like real sentence embeddings: 384-d unit vectors drawn from a
two-level mixture of gaussians (topics, then sub-topics) around a shared direction, so unrelated
vectors have a cosine near 0.15 and neighbours one of 0.6-0.9. Queries are data points moved by
noise (cosine about 0.85 to their source). Chunks come ten to a document ``d<g>/doc<i // 10>.md``
with ``g = (i // 10) mod 10``, so ``path_glob="d3/*"`` keeps a tenth of the corpus.

Methods, each through ``SqliteVecIndex.search`` unless said (p50/p95 are one query, warm, embedder
excluded since it is a table look-up here):

- ``brute``: the sqlite-vec float scan (the plugin below ``exact_threshold``);
- ``binary``: sqlite-vec ``bit[384]`` hamming scan for ``k * oversample`` candidates, rescored with
  exact cosine from a float table (raw SQL here, not a plugin path: measured to choose);
- ``hnsw``: the plugin's HNSW graph (usearch, float32, ``expansion`` = ef);
- ``hnsw+glob``: the graph with ``path_glob="d3/*"`` (recall against the exact filtered search);
- ``hnsw k=50``: what hybrid search asks the vector index for (recall@50);
- with ``--hybrid``: ``lexical k=50`` (kb-tantivy over synthetic Zipf words, 4-word queries taken
  from each query's source chunk) and ``hybrid`` (both retrievers for 50 hits, then reciprocal-rank
  fusion: what ``kb search`` does, less the query embedding, the store of record's snippet fill and
  the weighing of kb's fusion, which is private to kb-core and adds about 0.4 ms at 2 x 50 hits).

Recall@10 is against exact float32 search with numpy. The build time is the whole upsert path
(chunk rows, embedding cache, vec0 table) plus the graph build at commit.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from kb_core import Chunk, SearchQuery
from kb_sqlitevec.ann import AnnOptions
from kb_sqlitevec.index import SqliteVecIndex
from kb_sqlitevec.synthetic import TableEmbedder

DIMS = 384


def clustered(n: int, seed: int = 0, dims: int = DIMS) -> np.ndarray:
    """``n`` clustered unit vectors (see the module docstring)."""
    rng = np.random.default_rng(seed)
    shared = rng.standard_normal(dims)
    shared /= np.linalg.norm(shared)
    topics = rng.standard_normal((max(8, n // 5000), dims))
    topics = topics / np.linalg.norm(topics, axis=1, keepdims=True) + 0.45 * shared
    sub = topics[rng.integers(0, len(topics), max(16, n // 200))]
    sub = sub / np.linalg.norm(sub, axis=1, keepdims=True) + rng.normal(scale=0.045, size=(len(sub), dims))
    out = np.empty((n, dims), dtype=np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        points = sub[rng.integers(0, len(sub), stop - start)]
        points = points / np.linalg.norm(points, axis=1, keepdims=True)
        points = points + rng.normal(scale=0.03, size=points.shape)
        out[start:stop] = points / np.linalg.norm(points, axis=1, keepdims=True)
    return out


def near_queries(data: np.ndarray, count: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Queries near random data points, and the rows they were drawn from."""
    rng = np.random.default_rng(seed)
    sources = rng.integers(0, len(data), count)
    moved = data[sources] + rng.normal(scale=0.03, size=(count, data.shape[1]))
    return (moved / np.linalg.norm(moved, axis=1, keepdims=True)).astype(np.float32), sources


def words_of(i: int, vocabulary: int = 30_000, length: int = 60) -> list[str]:
    """Chunk i's synthetic text for the lexical index: Zipf-distributed pseudo-words."""
    rng = np.random.default_rng(10_000_019 + i)
    return [f"w{min(vocabulary, int(z))}x" for z in rng.zipf(1.3, length)]


class NoStore:
    """The store of record as far as the index needs it for synthetic chunks: no text, no metadata."""

    def get_document(self, path: str) -> None:
        return None

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        return {}

    def index_state(self, name: str) -> tuple[int, str]:
        return 0, ""


def build_lexical(directory: Path, n: int) -> tuple[Any, float]:
    """kb-tantivy over the same chunk ids and paths, with synthetic words as text; seconds taken."""
    from kb_core import Config
    from kb_core.plugin import IndexContext
    from kb_tantivy.index import TantivyIndex

    kept = directory.exists()
    lexical = TantivyIndex(IndexContext(Config(), name="tantivy", directory=directory, store=NoStore()))  # type: ignore[arg-type]
    start = time.perf_counter()
    if kept:  # kept from an earlier run (--keep)
        return lexical, 0.0
    for first in range(0, n, 20_000):
        stop = min(n, first + 20_000)
        lexical.upsert(
            [Chunk(f"c{i}", doc_path(i), 0, " ".join(words_of(i)), f"h{i}", 1, 1) for i in range(first, stop)]
        )
        lexical.commit()
    return lexical, time.perf_counter() - start


def hybrid_search(lexical: Any, vector: SqliteVecIndex, j: int, text: str, k: int, rrf_k: int = 60) -> set[str]:
    """What ``kb search`` does in hybrid mode: both retrievers for max(k, fanout=50), then reciprocal-rank fusion."""
    fetch = max(k, 50)
    fused: dict[str, float] = {}
    for hits in (lexical.search(SearchQuery(text, k=fetch)), vector.search(SearchQuery(f"q:{j}", k=fetch))):
        for rank, hit in enumerate(hits, start=1):
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + 1 / (rrf_k + rank)
    return set(sorted(fused, key=lambda chunk_id: -fused[chunk_id])[:k])


def doc_path(i: int) -> str:
    """Chunk i's document: ten chunks each, in ten folders."""
    return f"d{(i // 10) % 10}/doc{i // 10}.md"


def build(directory: Path, embedder: TableEmbedder, options: AnnOptions) -> tuple[SqliteVecIndex, float]:
    """Index every data row through the plugin's upsert path; seconds taken, graph included."""
    index = SqliteVecIndex(directory, embedder, NoStore(), options=options)  # type: ignore[arg-type]
    start = time.perf_counter()
    n = len(embedder.data)
    if index.count() == n:  # kept from an earlier run (--keep)
        return index, 0.0
    for first in range(0, n, 20_000):
        chunks = [Chunk(f"c{i}", doc_path(i), 0, f"v:{i}", f"h{i}", 1, 1) for i in range(first, min(n, first + 20_000))]
        index.upsert(chunks)
    index.commit()
    return index, time.perf_counter() - start


def exact_top(data: np.ndarray, query: np.ndarray, k: int, allowed: np.ndarray | None = None) -> set[str]:
    scores = data @ query
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    return {f"c{i}" for i in np.argpartition(-scores, k)[:k]}


def add_binary(index: SqliteVecIndex) -> None:
    """A sqlite-vec bit[384] table and a plain float table beside the plugin's tables (bench only)."""
    table = index.indexed_model().table  # type: ignore[union-attr]
    c = index.conn
    c.execute("DROP TABLE IF EXISTS bench_bits")
    c.execute("DROP TABLE IF EXISTS bench_floats")
    c.execute(f"CREATE VIRTUAL TABLE bench_bits USING vec0(embedding bit[{DIMS}])")
    c.execute("CREATE TABLE bench_floats (id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")
    c.execute("BEGIN")
    c.execute(f"INSERT INTO bench_bits (rowid, embedding) SELECT rowid, vec_quantize_binary(embedding) FROM {table}")
    c.execute(f"INSERT INTO bench_floats (id, embedding) SELECT rowid, embedding FROM {table}")
    c.execute("COMMIT")


def binary_search(index: SqliteVecIndex, query: np.ndarray, k: int, oversample: int) -> set[str]:
    c = index.conn
    blob = query.tobytes()
    candidates = [
        r[0]
        for r in c.execute(
            "SELECT rowid FROM bench_bits WHERE embedding MATCH vec_quantize_binary(?) AND k = ?",
            (blob, min(4096, k * oversample)),
        )
    ]
    marks = ",".join("?" * len(candidates))
    rows = c.execute(
        f"SELECT id FROM bench_floats WHERE id IN ({marks}) ORDER BY vec_distance_cosine(embedding, ?) LIMIT ?",
        [*candidates, blob, k],
    )
    ids = [r[0] for r in rows]
    return {r[0] for r in c.execute(f"SELECT chunk_id FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids)}


def measure(run: Any, queries: int) -> tuple[float, float, float]:
    """(p50 ms, p95 ms, recall@10) of ``run(j) -> (found, truth)`` over the queries."""
    times, recalls = [], []
    run(0)  # warm-up
    for j in range(queries):
        start = time.perf_counter()
        found, truth = run(j)
        times.append(time.perf_counter() - start)
        recalls.append(len(found & truth) / len(truth) if truth else float("nan"))
    p50, p95 = np.percentile(times, [50, 95]) * 1000
    return float(p50), float(p95), float(np.mean(recalls))


def run_size(n: int, args: argparse.Namespace, work: Path) -> None:
    data = clustered(n)
    queries, sources = near_queries(data, args.queries)
    embedder = TableEmbedder(data, queries)
    options = AnnOptions(
        expansion=args.expansion,
        oversample=args.oversample,
        connectivity=args.connectivity,
        exact_threshold=min(n, 20_000),
    )
    index, seconds = build(work / f"n{n}", embedder, options)
    assert index.last_plan == "" and index.count() == n
    brute = SqliteVecIndex(work / f"n{n}", embedder, NoStore(), options=AnnOptions(exact_threshold=10**12))  # type: ignore[arg-type]
    k = 10
    truths = [exact_top(data, queries[j], k) for j in range(args.queries)]
    group = (np.arange(n) // 10) % 10 == 3
    glob_truths = [exact_top(data, queries[j], k, group) for j in range(args.queries)]
    graph = "" if index._graph(index.indexed_model(), n) is None else "graph"  # type: ignore[arg-type]
    built = f"built in {seconds:.1f} s ({n / seconds:.0f} chunks/s)" if seconds else "reused"
    print(f"n={n}: {built}, {graph or 'no graph'}")

    def hits(ix: SqliteVecIndex, j: int, glob: str | None = None, k: int = k) -> set[str]:
        return {h.chunk_id for h in ix.search(SearchQuery(f"q:{j}", k=k, path_glob=glob))}

    def lexical_ids(lexical: Any, text: str) -> set[str]:
        return {h.chunk_id for h in lexical.search(SearchQuery(text, k=50))}

    few = max(10, args.queries // (5 if n >= 500_000 else 1))
    rows = [("hnsw", measure(lambda j: (hits(index, j), truths[j]), args.queries), index.last_plan)]
    rows.append(
        ("hnsw+glob", measure(lambda j: (hits(index, j, "d3/*"), glob_truths[j]), args.queries), index.last_plan)
    )
    if not args.no_brute:
        rows.append(("brute", measure(lambda j: (hits(brute, j), truths[j]), few), brute.last_plan))
        rows.append(("brute+glob", measure(lambda j: (hits(brute, j, "d3/*"), glob_truths[j]), few), brute.last_plan))
    for ef in [int(e) for e in args.expansions.split(",") if e]:
        index.options = attrs.evolve(index.options, expansion=ef)
        rows.append((f"hnsw ef={ef}", measure(lambda j: (hits(index, j), truths[j]), args.queries), index.last_plan))
    index.options = options
    truths50 = [exact_top(data, queries[j], 50) for j in range(args.queries)]
    rows.append(("hnsw k=50", measure(lambda j: (hits(index, j, k=50), truths50[j]), args.queries), index.last_plan))
    if args.hybrid:
        lexical, lexical_seconds = build_lexical(work / f"t{n}", n)
        print(f"n={n}: lexical index built in {lexical_seconds:.1f} s" if lexical_seconds else f"n={n}: lexical reused")
        texts = [" ".join(words_of(int(s))[:4]) for s in sources]
        rows.append(("lexical k=50", measure(lambda j: (lexical_ids(lexical, texts[j]), set()), args.queries), "bm25"))
        rows.append(
            ("hybrid", measure(lambda j: (hybrid_search(lexical, index, j, texts[j], k), set()), args.queries), "fused")
        )
    if not args.no_binary:
        add_binary(index)
        over = args.binary_oversample
        rows.append(
            (f"binary x{over}", measure(lambda j: (binary_search(index, queries[j], k, over), truths[j]), few), "sql")
        )
    for name, (p50, p95, recall), plan in rows:
        print(f"| {n:>9,} | {name:<11} | {p50:8.2f} | {p95:8.2f} | {recall:.3f} | {plan} |", flush=True)
    start = time.perf_counter()
    index.upsert([Chunk(f"x{i}", "extra/doc.md", i, f"v:{i}", f"x{i}", 1, 1) for i in range(10)])
    index.commit()
    print(f"n={n}: one 10-chunk document upserted and committed (graph patched) in {time.perf_counter() - start:.2f} s")
    index.delete(["extra/doc.md"])
    index.commit()
    brute.close()
    index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated corpus sizes")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--expansion", type=int, default=AnnOptions().expansion)
    parser.add_argument("--oversample", type=int, default=AnnOptions().oversample)
    parser.add_argument("--connectivity", type=int, default=AnnOptions().connectivity, help="HNSW links per node (M)")
    parser.add_argument("--binary-oversample", type=int, default=40)
    parser.add_argument("--expansions", default="", help="also time the graph at these search breadths (ef)")
    parser.add_argument("--hybrid", action="store_true", help="also build kb-tantivy and time hybrid search")
    parser.add_argument("--no-brute", action="store_true", help="skip the brute-force rows")
    parser.add_argument("--no-binary", action="store_true", help="skip the sqlite-vec binary comparison")
    parser.add_argument("--dir", help="work folder (default: a temporary one, removed after)")
    parser.add_argument("--keep", action="store_true", help="keep the indexes in --dir and reuse them on the next run")
    args = parser.parse_args()
    print("| vectors | method | p50 ms | p95 ms | recall@10 | plan |\n|---:|---|---:|---:|---:|---|")
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.keep:
        if not args.dir:
            parser.error("--keep needs --dir")
        for n in sizes:
            run_size(n, args, Path(args.dir))
        return
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for n in sizes:
            run_size(n, args, Path(tmp))


if __name__ == "__main__":
    main()
