"""SciFact (BEIR) end to end: ingest 5,183 abstracts, then nDCG@10 / Recall@10 / MRR@10 per mode.

Writes each document as ``<_id>.md`` (``# {title}\\n\\n{text}``) in a temporary folder, ingests it
into a fresh knowledge base with both indexes (kb-tantivy, kb-sqlitevec), runs the same code as
``kb eval retrieval`` for every mode, and prints the figures with the published baselines.

    python bench/scifact.py [--data ../shared/datasets/scifact] [--kb DIR] [--mode MODE]
    python bench/scifact.py --mode hybrid --postgres     # the store on PostgreSQL (pgserver, or --postgres-url URL)

``--kb DIR`` reuses (or keeps) a knowledge base there, so a second run only re-evaluates. With ``--postgres``
the store of record is PostgreSQL (kb-postgres) in a new schema, the indexes (the same two) in a temporary
folder: the corpus is ingested afresh each run, so ``--kb`` is refused.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from common import add_store_arguments, store_overrides, wants_postgres

from kb_core.app import KnowledgeBase
from kb_core.config import load_config
from kb_core.evaluation.retrieval import evaluate_retrieval
from kb_core.ingest.pipeline import ingest_paths
from kb_core.types import SEARCH_MODES

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "scifact"
BASELINES = {
    "lexical": ("BM25, BEIR paper", 0.665),
    "vector": ("all-MiniLM-L6-v2, MTEB", 0.645),
    "hybrid": ("target", 0.70),
}


def write_corpus(corpus: Path, folder: Path) -> int:
    """Write every BEIR document as ``<_id>.md``; return how many."""
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            (folder / f"{doc['_id']}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")
            count += 1
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--kb", type=Path, help="knowledge base directory to (re)use; default: a temporary one")
    parser.add_argument("--mode", action="append", choices=SEARCH_MODES, help="modes (default: all)")
    add_store_arguments(parser)
    args = parser.parse_args()
    if args.kb and wants_postgres(args):
        parser.error("--kb keeps a knowledge base folder, but --postgres puts its store in a new schema each run")

    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="kb-scifact-"))
        overrides = stack.enter_context(store_overrides(args, "scifact"))
        kb_dir = args.kb or Path(tmp) / "kb"
        config = load_config(None, kb_dir, {"indexes.enabled": ["tantivy", "sqlitevec"], **overrides}, environ={})
        print(f"store: {config.store.backend}")
        with KnowledgeBase(config) as kb:
            if kb.store.count_documents() == 0:
                docs_dir = Path(tmp) / "scifact"
                written = write_corpus(args.data / "corpus.jsonl", docs_dir)
                start = time.perf_counter()
                report = ingest_paths(kb, [docs_dir])
                took = time.perf_counter() - start
                print(
                    f"ingest: {written} documents, {report.chunks} chunks in {took:.1f} s"
                    f" = {report.chunks / took:.1f} chunks/s ({written / took:.1f} docs/s)"
                )
                for sync in report.indexes:
                    print(f"  index {sync}")
            else:
                print(f"reusing {kb_dir}: {kb.store.count_documents()} documents, {kb.store.count_chunks()} chunks")
            result = evaluate_retrieval(
                kb,
                args.data / "queries.jsonl",
                args.data / "qrels.tsv",
                args.mode or SEARCH_MODES,
                k=10,
                out_dir=Path(tmp) / "eval",
            )
    print(f"\n{result.num_queries} queries; rrf_k={result.settings['rrf_k']} fanout={result.settings['fanout']}")
    print(f"{'mode':<8} {'nDCG@10':>8} {'R@10':>7} {'MRR@10':>7} {'p50 ms':>7} {'p95 ms':>7}   baseline nDCG@10")
    for m in result.modes:
        name, value = BASELINES[m.mode]
        print(
            f"{m.mode:<8} {m.ndcg_at_k:>8.4f} {m.recall_at_k:>7.4f} {m.mrr_at_k:>7.4f} {m.latency_ms_p50:>7.1f}"
            f" {m.latency_ms_p95:>7.1f}   {value:.3f} ({name}); ratio {m.ndcg_at_k / value:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
