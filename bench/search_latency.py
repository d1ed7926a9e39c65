"""Search latency: warm p50/p95 per mode over the SciFact queries, and a cold ``kb search`` process.

Needs a knowledge base holding SciFact (build one with ``python bench/scifact.py --kb DIR``):

    python bench/search_latency.py --kb DIR [--data ../shared/datasets/scifact] [--cold-runs 5]

Warm: one process, every query once per mode after one warm-up query (models and indexes
loaded). Cold: wall time of ``kb --kb DIR search QUERY`` as a fresh subprocess (interpreter
start, imports, opening the indexes, loading the embedder for vector/hybrid).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from kb_core.app import KnowledgeBase
from kb_core.config import load_config
from kb_core.evaluation.retrieval import load_queries
from kb_core.evaluation.stats import percentile
from kb_core.retrieval.search import search
from kb_core.types import SEARCH_MODES, SearchQuery

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "scifact"


def warm(kb: KnowledgeBase, texts: list[str]) -> dict[str, list[float]]:
    """Milliseconds per query, per mode (k = 10)."""
    timings: dict[str, list[float]] = {}
    for mode in SEARCH_MODES:
        search(kb, SearchQuery(texts[0], k=10, mode=mode))  # warm-up: load models, open readers
        samples = []
        for text in texts:
            start = time.perf_counter()
            search(kb, SearchQuery(text, k=10, mode=mode))
            samples.append((time.perf_counter() - start) * 1000)
        timings[mode] = samples
    return timings


def cold(kb_dir: Path, query: str, mode: str, runs: int) -> list[float]:
    """Wall seconds of ``kb search`` in a fresh process, ``runs`` times."""
    exe = shutil.which("kb") or str(Path(sys.executable).with_name("kb"))
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            [exe, "--kb", str(kb_dir), "search", query, "--mode", mode], capture_output=True, text=True
        )
        samples.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise SystemExit(f"kb search failed ({done.returncode}): {done.stderr.strip()}")
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kb", type=Path, required=True, help="a knowledge base holding SciFact")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cold-runs", type=int, default=5, help="0 skips the cold processes")
    args = parser.parse_args()

    texts = list(load_queries(args.data / "queries.jsonl").values())
    config = load_config(None, args.kb, environ={})
    with KnowledgeBase(config, create=False) as kb:
        print(f"{kb.store.count_documents()} documents, {kb.store.count_chunks()} chunks; {len(texts)} queries")
        timings = warm(kb, texts)
    print(f"{'mode':<8} {'p50 ms':>7} {'p95 ms':>7} {'mean ms':>8}")
    for mode, samples in timings.items():
        print(
            f"{mode:<8} {percentile(samples, 0.5):>7.2f} {percentile(samples, 0.95):>7.2f}"
            f" {statistics.fmean(samples):>8.2f}"
        )
    lexical, hybrid = percentile(timings["lexical"], 0.5), percentile(timings["hybrid"], 0.5)
    print(f"hybrid / lexical p50 ratio: {hybrid / lexical:.2f}")
    for mode in ("lexical", "hybrid") if args.cold_runs > 0 else ():
        samples = cold(args.kb, texts[0], mode, args.cold_runs)
        print(
            f"cold 'kb search --mode {mode}': median {statistics.median(samples):.2f} s,"
            f" min {min(samples):.2f} s over {len(samples)} runs"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
