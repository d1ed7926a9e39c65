"""SciFact (BEIR test split) through the Tantivy index: nDCG@10, Recall@10, latency, score calibration.

Indexes the corpus directly (one chunk per document, text = title + "\\n\\n" + text), runs the 300
queries and prints nDCG@10 (trec_eval ``ndcg_cut.10``, linear gain), Recall@10, p50/p95 search
latency, and the [0, 1] scores of the top hit for the SciFact claims (on-topic) against a set of
everyday questions that have nothing to do with the corpus (off-topic)::

    python plugins/kb-tantivy/bench/scifact_lexical.py [--data DIR] [--heading-title]

``--heading-title`` also puts the title into the chunk's heading path (as the markdown ingest of
``# {title}`` would), to measure the heading boost.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

from kb_core import Chunk, Config, SearchQuery
from kb_core.plugin import IndexContext
from kb_core.testing import StoreOfRecord
from kb_tantivy import TantivyIndex

DEFAULT_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "datasets" / "scifact"

OFF_TOPIC = [
    "What is the capital of France?",
    "How do I bake sourdough bread at home?",
    "Who won the football world cup in 2018?",
    "How do I change a flat tyre on a bicycle?",
    "What is the best way to learn to play the guitar?",
    "Which programming language should I learn first?",
    "How many moons does Jupiter have?",
    "What time does the train to Berlin leave?",
    "How do I reset my router password?",
    "What is a good recipe for vegetable lasagna?",
    "Who wrote the novel Pride and Prejudice?",
    "How do I file my taxes online?",
    "What are the rules of chess castling?",
    "Where can I buy cheap flights to Tokyo?",
    "How do I install Python on Windows?",
    "What is the plot of the movie Inception?",
    "How tall is the Eiffel Tower?",
    "What should I pack for a ski holiday?",
    "How do I fix a leaking kitchen faucet?",
    "What is the exchange rate of the euro to the dollar?",
]


def load(data: Path) -> tuple[list[dict], dict[str, str], dict[str, dict[str, int]]]:
    """Corpus rows, queries (id -> text, only those with judgements) and qrels (qid -> doc -> grade)."""
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line]
    qrels: dict[str, dict[str, int]] = {}
    for line in (data / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, grade = line.split("\t")
        if int(grade) >= 1:
            qrels.setdefault(qid, {})[did] = int(grade)
    queries = {}
    for line in (data / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"] in qrels:
            queries[row["id"]] = row["text"]
    return corpus, queries, qrels


def ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    """trec_eval ndcg_cut.10 with linear gain."""
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--heading-title", action="store_true")
    parser.add_argument("--heading-boost", type=float, default=None)
    args = parser.parse_args()
    corpus, queries, qrels = load(args.data)
    options = {} if args.heading_boost is None else {"heading_boost": args.heading_boost}
    with tempfile.TemporaryDirectory() as tmp:
        store = StoreOfRecord(Path(tmp))
        ctx = IndexContext(
            Config(backends={"tantivy": options}),
            name="tantivy",
            directory=Path(tmp) / "indexes" / "tantivy",
            store=store,
        )
        index = TantivyIndex(ctx)
        chunks = [
            Chunk(
                chunk_id=row["_id"],
                doc_path=row["_id"],
                ordinal=0,
                text=f"{row['title']}\n\n{row['text']}",
                content_hash="",
                start_line=1,
                end_line=1,
                heading_path=(row["title"],) if args.heading_title and row["title"] else (),
            )
            for row in corpus
        ]
        started = time.perf_counter()
        index.clear()
        index.upsert(chunks)
        index.commit()
        index_s = time.perf_counter() - started

        latencies, ndcgs, recalls, top_scores = [], [], [], []
        for qid, text in queries.items():
            t0 = time.perf_counter()
            hits = index.search(SearchQuery(text=text, k=10))
            latencies.append((time.perf_counter() - t0) * 1000)
            ranked = [h.doc_path for h in hits]
            ndcgs.append(ndcg_at_10(ranked, qrels[qid]))
            recalls.append(len(set(ranked) & set(qrels[qid])) / len(qrels[qid]))
            top_scores.append(hits[0].score if hits else 0.0)
        off_scores = [(hits[0].score if (hits := index.search(SearchQuery(text=q, k=1))) else 0.0) for q in OFF_TOPIC]
        index.close()
        store.close()

    print(f"documents {len(corpus)}  queries {len(queries)}  index build {index_s:.1f} s")
    print(f"nDCG@10   {statistics.mean(ndcgs):.4f}   (BM25 BEIR paper 0.665, bm25s+stemming 0.687)")
    print(f"Recall@10 {statistics.mean(recalls):.4f}")
    print(f"latency   p50 {percentile(latencies, 50):.2f} ms   p95 {percentile(latencies, 95):.2f} ms")
    for label, scores in (("on-topic ", top_scores), ("off-topic", off_scores)):
        print(
            f"top-hit score {label}: min {min(scores):.3f}  p10 {percentile(scores, 10):.3f}  "
            f"median {statistics.median(scores):.3f}  p90 {percentile(scores, 90):.3f}  max {max(scores):.3f}"
        )
    gate = Config().rag.gate("lexical")
    kept = sum(s >= gate for s in top_scores) / len(top_scores)
    passed = sum(s >= gate for s in off_scores) / len(off_scores)
    print(f"at the default gate {gate}: on-topic kept {kept:.0%}, off-topic passed {passed:.0%}")


if __name__ == "__main__":
    main()
