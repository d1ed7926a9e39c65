"""cmrc2018-tune (Chinese) end to end: ingest the 848 paragraphs, then nDCG@10 / Recall@10 / MRR@10 per mode.

The data folder holds ``docs/<id>.md`` (one Wikipedia paragraph each) and ``queries.jsonl`` +
``qrels.tsv`` in BEIR form. The paragraphs are ingested into a fresh knowledge base with both
indexes (kb-tantivy, kb-sqlitevec) and the chosen embedder, then every mode is evaluated with the
same code as ``kb eval retrieval``.

    python bench/cmrc.py [--data ../shared/datasets/cmrc2018-tune] [--embedder minilm|multilingual] [--kb DIR]
    python bench/cmrc.py --paragraphs tests/data/ko_paragraphs.jsonl     # the Korean set written for kb's tests

``--paragraphs FILE`` takes a JSONL of ``{"id", "title", "text", "questions": [...]}`` instead and
writes it in the same form first. ``--kb DIR`` reuses (or keeps) a knowledge base there, so a
second run only re-evaluates.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from kb_core.app import KnowledgeBase
from kb_core.config import load_config
from kb_core.evaluation.retrieval import evaluate_retrieval
from kb_core.ingest.pipeline import ingest_paths
from kb_core.types import SEARCH_MODES

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "cmrc2018-tune"
# nDCG@10 before per-query retriever weights and per-script floors (commit bc0e12b), same data and machine.
BEFORE = {
    "minilm": {"lexical": 0.991, "vector": 0.138, "hybrid": 0.441},
    "multilingual": {"lexical": 0.992, "vector": 0.976, "hybrid": 0.993},
}


def write_paragraphs(source: Path, folder: Path) -> Path:
    """Write a paragraphs JSONL as ``docs/<id>.md``, ``queries.jsonl`` and ``qrels.tsv`` under ``folder``."""
    (folder / "docs").mkdir(parents=True, exist_ok=True)
    queries, qrels = [], ["query-id\tdoc-id\tscore"]
    for line in source.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        (folder / "docs" / f"{row['id']}.md").write_text(f"# {row['title']}\n\n{row['text']}\n", encoding="utf-8")
        for i, question in enumerate(row["questions"]):
            queries.append(json.dumps({"id": f"{row['id']}-{i}", "text": question}, ensure_ascii=False))
            qrels.append(f"{row['id']}-{i}\t{row['id']}\t1")
    (folder / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    (folder / "qrels.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--paragraphs", type=Path, help="a JSONL of paragraphs with their questions instead of --data")
    parser.add_argument("--embedder", default="minilm", help="[models.embedding] name (default: minilm)")
    parser.add_argument("--kb", type=Path, help="knowledge base directory to (re)use; default: a temporary one")
    parser.add_argument("--mode", action="append", choices=SEARCH_MODES, help="modes (default: all)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="kb-cmrc-") as tmp:
        kb_dir = args.kb or Path(tmp) / "kb"
        data = write_paragraphs(args.paragraphs, Path(tmp) / "set") if args.paragraphs else args.data
        overrides = {"indexes.enabled": ["tantivy", "sqlitevec"], "models.embedding.name": args.embedder}
        config = load_config(None, kb_dir, overrides, environ={})
        with KnowledgeBase(config) as kb:
            if kb.store.count_documents() == 0:
                start = time.perf_counter()
                report = ingest_paths(kb, [data / "docs"])
                took = time.perf_counter() - start
                print(
                    f"ingest ({args.embedder}): {report.documents} documents, {report.chunks} chunks in {took:.1f} s"
                    f" = {report.chunks / took:.1f} chunks/s"
                )
            else:
                print(f"reusing {kb_dir}: {kb.store.count_documents()} documents, {kb.store.count_chunks()} chunks")
            result = evaluate_retrieval(
                kb,
                data / "queries.jsonl",
                data / "qrels.tsv",
                args.mode or SEARCH_MODES,
                k=10,
                out_dir=Path(tmp) / "eval",
            )
    before = {} if args.paragraphs else BEFORE.get(args.embedder, {})
    print(f"\n{result.num_queries} queries; embedder {args.embedder}; rrf_k={result.settings['rrf_k']}")
    print(f"{'mode':<8} {'nDCG@10':>8} {'R@10':>7} {'MRR@10':>7} {'p50 ms':>7} {'p95 ms':>7}   before")
    for m in result.modes:
        was = f"{before[m.mode]:.3f}" if m.mode in before else "-"
        print(
            f"{m.mode:<8} {m.ndcg_at_k:>8.4f} {m.recall_at_k:>7.4f} {m.mrr_at_k:>7.4f} {m.latency_ms_p50:>7.1f}"
            f" {m.latency_ms_p95:>7.1f}   {was}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
