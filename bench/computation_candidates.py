"""How many retrieved candidates a computation over tables should choose its passages from (no model).

For each of tatqa-tune's number questions, over the knowledge base bench/tatqa_numbers.py ingests
(bench/out/kb-tatqa-<kind>), retrieve ``k`` candidates as the answer pipeline does (hybrid), choose the three
passages a computation reads (:func:`kb_core.answers.evidence_fit.by_evidence_fit`), and count how often the
expected report is among the candidates, among the three, and first; with the retrieval's time per question
(search and reading the candidates' chunks, p50), which a larger k costs every computation over tables::

    python bench/computation_candidates.py --kind born-digital --k 20,40,80,160
    python bench/computation_candidates.py --kind scanned --k 20,80 --limit 200
    python bench/computation_candidates.py --k 20,80 --sample 60 --changed bench/out/ids-changed80.txt

``--sample N`` takes bench/tatqa.py's draw of N (seed 7) instead of the whole set; ``--changed FILE`` writes the
ids of the questions whose three passages differ between the first two ``k`` (to re-ask only those:
``bench/computation_replay.py capture --ids FILE``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kb_core.answers.evidence_fit import by_evidence_fit  # noqa: E402
from kb_core.app import KnowledgeBase  # noqa: E402
from kb_core.config import load_config  # noqa: E402
from kb_core.retrieval.search import checked_search  # noqa: E402
from kb_core.types import SearchQuery  # noqa: E402

TATQA = REPO.parent / "shared" / "datasets" / "tatqa-tune"


def measure(
    kb: KnowledgeBase, rows: list[dict[str, object]], k: int, chosen_ids: dict[str, list[str]] | None = None
) -> dict[str, object]:
    """The expected report among the ``k`` candidates, the three read and first; retrieval ms p50 (and, in
    ``chosen_ids``, each question's three passages)."""
    pool = read = first = 0
    took: list[float] = []
    for row in rows:
        began = time.perf_counter()
        hits = list(checked_search(kb, SearchQuery(text=str(row["question"]), k=k, mode="hybrid")).hits)
        chunks = kb.store.get_chunks([h.chunk_id for h in hits])
        took.append((time.perf_counter() - began) * 1000)
        expected = str(row["expected_docs"][0])  # type: ignore[index]
        chosen = by_evidence_fit(hits, chunks, str(row["question"]), 3)
        if chosen_ids is not None:
            chosen_ids[str(row["id"])] = [h.chunk_id for h in chosen]
        pool += any(h.doc_path == expected for h in hits)
        read += any(h.doc_path == expected for h in chosen)
        first += bool(chosen) and chosen[0].doc_path == expected
    return {
        "k": k,
        "in_candidates": pool,
        "read": read,
        "read_first": first,
        "of": len(rows),
        "retrieval_ms_p50": round(statistics.median(took), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", choices=("born-digital", "scanned"), default="born-digital")
    parser.add_argument("--k", default="20,80", help="candidate counts, comma-separated")
    parser.add_argument("--limit", type=int, default=0, help="the first N questions (0: all 750)")
    parser.add_argument("--sample", type=int, default=0, help="bench/tatqa.py's draw of N questions, seed 7")
    parser.add_argument("--changed", type=Path, help="write the ids whose passages differ between the first two k")
    args = parser.parse_args()
    golden = TATQA / f"golden-numbers-{args.kind}.jsonl"
    if args.sample:
        import tatqa  # bench/'s own module: the draw every tatqa bench uses

        golden, _ = tatqa.sample(f"numbers-{args.kind}", args.sample, 7)
    rows = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = rows[: args.limit] if args.limit else rows
    kb = KnowledgeBase(load_config(kb_dir=REPO / "bench" / "out" / f"kb-tatqa-{args.kind}", environ={}))
    picks: list[dict[str, list[str]]] = []
    try:
        for k in (int(value) for value in args.k.split(",")):
            picks.append({})
            print(json.dumps({"kind": args.kind, **measure(kb, rows, k, picks[-1])}), flush=True)
    finally:
        kb.close()
    if args.changed and len(picks) >= 2:
        changed = [qid for qid, chunks in picks[0].items() if picks[1].get(qid) != chunks]
        args.changed.write_text("".join(f"{qid}\n" for qid in changed), encoding="utf-8")
        print(f"{len(changed)} questions read other passages: {args.changed}")


if __name__ == "__main__":
    main()
