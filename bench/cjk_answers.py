"""Korean and Chinese answers among near-miss distractors: fixtures/cjk with fixtures/golden/answers_cjk.jsonl.

Ingests fixtures/cjk (about 150 Korean and 150 Chinese paragraphs in 46 files, several per topic
that differ only in the key fact) into a knowledge base cached under bench/out/, runs the golden
set through ``evaluate_answers`` (what ``kb eval answers`` runs) with the default configuration
and the embedded default model, and prints per language:

- grounded-right: answerable questions answered grounded with every citation from the expected
  document (and, in brackets, also holding every must-contain string),
- refused: unanswerable questions refused,
- wrong-cite: grounded answers citing a document other than the expected one (unanswerable
  questions have none, so any grounded answer to them counts),
- violations: ``grounded_violations`` (a grounded answer citing an unpacked marker or holding an
  unsupported claim),
- hit@1 / hit@3 / hit@10: answerable questions whose expected document is among the first k
  search hits (default mode; the answer pipeline packs at most ``rag.max_chunks`` = 3),
- time to first token and total answer time, p50,

then one line per question.

    python bench/cjk_answers.py                               # default embedder (minilm)
    python bench/cjk_answers.py --embedder multilingual       # multilingual-e5-small
    python bench/cjk_answers.py --config rag.answer_check=0.5 --label check05
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kb_core import Hit, KnowledgeBase, SearchQuery, load_config, search
from kb_core.answers.pipeline import AskOptions
from kb_core.config import parse_value
from kb_core.evaluation.answers import QuestionResult, doc_matches, evaluate_answers
from kb_core.evaluation.golden import GoldenQuestion, load_golden
from kb_core.evaluation.stats import percentile
from kb_core.ingest.pipeline import ingest_paths

CORPUS = REPO / "fixtures" / "cjk"
GOLDEN = REPO / "fixtures" / "golden" / "answers_cjk.jsonl"
OUT = REPO / "bench" / "out"


def language(question: GoldenQuestion) -> str:
    """``ko`` or ``zh`` from the question id's prefix."""
    return question.id.split("-", 1)[0]


def wrong_citation(golden: GoldenQuestion, result: QuestionResult) -> bool:
    """A grounded answer that cites any document other than the expected ones."""
    if not result.grounded:
        return False
    if not golden.answerable:
        return True
    return result.cited_expected < len(result.cited)


def holds_answer(hit: Hit, golden: GoldenQuestion) -> bool:
    """True when the hit is from an expected document and its cited lines hold every must-contain string."""
    if not any(doc_matches(hit.doc_path, e) for e in golden.expected_docs):
        return False
    lines = (CORPUS / hit.citation.path).read_text(encoding="utf-8").split("\n")
    text = "\n".join(lines[hit.citation.start_line - 1 : hit.citation.end_line])
    return all(s in text for s in golden.must_contain)


def retrieval_ranks(
    kb: KnowledgeBase, golden: Sequence[GoldenQuestion], k: int = 10
) -> dict[str, tuple[int | None, int | None]]:
    """Per answerable question, the 1-based rank of the first hit from an expected document and of the
    first hit holding the answer (None when not in the first ``k``)."""
    ranks: dict[str, tuple[int | None, int | None]] = {}
    for g in golden:
        if not g.answerable:
            continue
        hits = search(kb, SearchQuery(text=g.question, k=k, mode=kb.config.search.mode)).hits
        doc = next((h.rank for h in hits if any(doc_matches(h.doc_path, e) for e in g.expected_docs)), None)
        passage = next((h.rank for h in hits if holds_answer(h, g)), None)
        ranks[g.id] = (doc, passage)
    return ranks


def _within(
    ranks: dict[str, tuple[int | None, int | None]], results: Sequence[QuestionResult], which: int, k: int
) -> int:
    return sum((rank := ranks[r.id][which]) is not None and rank <= k for r in results)


def _fmt(numerator: int, denominator: int) -> str:
    return f"{numerator}/{denominator}" if denominator else "n/a"


def language_rows(
    golden: Sequence[GoldenQuestion],
    results: Sequence[QuestionResult],
    ranks: dict[str, tuple[int | None, int | None]],
) -> dict[str, dict[str, Any]]:
    """The per-language figures."""
    by_id = {g.id: g for g in golden}
    rows: dict[str, dict[str, Any]] = {}
    for lang in sorted({language(g) for g in golden}):
        mine = [r for r in results if language(by_id[r.id]) == lang]
        answerable = [r for r in mine if r.answerable]
        unanswerable = [r for r in mine if not r.answerable]
        right = [r for r in answerable if r.grounded and r.cited and r.cited_expected == len(r.cited)]
        first = [r.first_token_ms for r in mine if r.first_token_ms is not None]
        rows[lang] = {
            "answerable": len(answerable),
            "grounded_right": len(right),
            "grounded_right_with_fact": sum(not r.must_contain_missing for r in right),
            "unanswerable": len(unanswerable),
            "refused": sum(not r.grounded for r in unanswerable),
            "wrong_citations": sum(wrong_citation(by_id[r.id], r) for r in mine),
            "violations": sum(r.violation for r in mine),
            **{f"doc@{k}": _within(ranks, answerable, 0, k) for k in (1, 3)},
            **{f"passage@{k}": _within(ranks, answerable, 1, k) for k in (1, 3, 10)},
            "ttft_ms_p50": round(percentile(first, 0.5)) if first else None,
            "total_ms_p50": round(percentile([r.latency_ms for r in mine], 0.5)),
        }
    return rows


def show(rows: dict[str, dict[str, Any]]) -> None:
    """The table, one line per language."""
    columns = ["doc@1", "doc@3", "passage@1", "passage@3", "passage@10"]
    print(
        f"{'lang':<5}{'grounded-right (+fact)':<24}{'refused':<9}{'wrong-cite':<11}{'violations':<11}"
        + "".join(f"{c:<11}" for c in columns)
        + f"{'ttft p50':<10}total p50"
    )
    for lang, r in rows.items():
        right = f"{_fmt(r['grounded_right'], r['answerable'])} ({r['grounded_right_with_fact']})"
        print(
            f"{lang:<5}{right:<24}{_fmt(r['refused'], r['unanswerable']):<9}{r['wrong_citations']:<11}"
            f"{r['violations']:<11}"
            + "".join(f"{_fmt(r[c], r['answerable']):<11}" for c in columns)
            + f"{r['ttft_ms_p50']!s:<10}{r['total_ms_p50']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default="minilm", help="models.embedding.name (minilm or multilingual)")
    parser.add_argument("--label", default="", help="names the knowledge base and report folders")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="a config override")
    parser.add_argument("--retrieval-only", action="store_true", help="search ranks only; no model is loaded")
    args = parser.parse_args()
    overrides = {key: parse_value(value) for key, value in (item.split("=", 1) for item in args.config)}
    overrides |= {"models.embedding.name": args.embedder, "ingest.ignore": ["/README.md"]}
    label = args.label or args.embedder
    golden = load_golden(GOLDEN)
    with KnowledgeBase(load_config(kb_dir=OUT / f"kb-cjk-{label}", overrides=overrides, environ={})) as kb:
        began = time.perf_counter()
        ingested = ingest_paths(kb, [CORPUS])
        print(
            f"ingest fixtures/cjk ({args.embedder}): {time.perf_counter() - began:.1f} s, {len(ingested.added)} added"
        )
        ranks = retrieval_ranks(kb, golden)
        if args.retrieval_only:
            for g in golden:
                if g.answerable:
                    print(f"  doc rank={ranks[g.id][0]!s:<5} passage rank={ranks[g.id][1]!s:<5} {g.id}")
            return
        began = time.perf_counter()
        report = evaluate_answers(kb, golden, AskOptions(), golden_file=GOLDEN, out_dir=OUT / f"answers-cjk-{label}")
        print(f"evaluated {len(golden)} questions in {time.perf_counter() - began:.0f} s; report {report.report_path}")
    show(language_rows(golden, report.results, ranks))
    for r in report.results:
        outcome = "grounded" if r.grounded else f"refused:{r.refusal_detail}"
        print(
            f"  {'ok ' if r.correct else 'BAD'} {r.id:<20} {outcome:<28} ranks={ranks.get(r.id, '-')!s:<10}"
            f" cited={','.join(r.cited) or '-'}  {r.answer[:70]!r}"
        )


if __name__ == "__main__":
    main()
