"""Recall@10 of the HNSW graph alone (usearch, as the plugin builds it) for chosen links per node.

    flock /tmp/kb-heavy.lock python plugins/kb-sqlitevec/bench/graph_recall.py --size 1000000 --connectivity 16,32

Same synthetic clustered corpus and queries as ``ann_scale.py`` (see its docstring), but without
SQLite: the graph is built straight from the vectors with both cores, so comparing links per node
(HNSW's M) at a million vectors takes minutes of graph building each instead of the whole upsert
path. Recall@10 is against exact numpy search; p50 is one graph search, warm, one thread.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from ann_scale import clustered, near_queries

from kb_sqlitevec.ann import usearch_index

BATCH = 8192


def exact_top10(data: np.ndarray, queries: np.ndarray) -> list[set[int]]:
    """The ids of each query's 10 nearest vectors by exact cosine (the vectors are unit length)."""
    return [set(np.argpartition(-(data @ q), 10)[:10].tolist()) for q in queries]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--connectivity", default="16,32", help="comma-separated links per node (M) to compare")
    parser.add_argument("--expansions", default="512,1024", help="comma-separated search breadths (ef)")
    args = parser.parse_args()
    data = clustered(args.size)
    queries, _ = near_queries(data, args.queries)
    truths = exact_top10(data, queries)
    print("| vectors | M | build s | ef | recall@10 | p50 ms | memory GiB |\n|---:|---:|---:|---:|---:|---:|---:|")
    for links in (int(m) for m in args.connectivity.split(",")):
        graph = usearch_index()(ndim=data.shape[1], metric="cos", dtype="f32", connectivity=links)
        start = time.perf_counter()
        for first in range(0, args.size, BATCH):
            keys = np.arange(first, min(args.size, first + BATCH), dtype=np.uint64)
            graph.add(keys, data[first : first + BATCH], threads=2)
        build = time.perf_counter() - start
        for ef in (int(e) for e in args.expansions.split(",")):
            graph.expansion_search = ef
            times, found = [], 0
            for query, truth in zip(queries, truths):
                start = time.perf_counter()
                matches = graph.search(query, 10, threads=1)
                times.append(time.perf_counter() - start)
                found += len(truth & {int(k) for k in matches.keys})
            print(
                f"| {args.size:,} | {links} | {build:.0f} | {ef} | {found / (10 * len(queries)):.3f} "
                f"| {1000 * float(np.median(times)):.2f} | {graph.memory_usage / 2**30:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
