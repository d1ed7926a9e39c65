"""Documents as people keep them: the same annual-report pages born-digital and scanned (tatqa-tune).

Ingests ``born-digital/`` and ``scanned/`` into two fresh knowledge bases under bench/out/ (pages per
second, documents stored and refused, seconds per OCR'd page from the ingest's progress, then the
same folder again: unchanged, and again after every document was removed: pages read from the OCR
cache, not OCR'd), measures the character error rate of the text kb stored for each scanned document
of the sample against ``truth/`` (whitespace and ``|`` ignored; a document kb could not read counts
as all wrong) and Recall@5 by document of the questions (hybrid search), then asks the same
fixed-seed sample of span questions of both golden sets and prints the right-answer rate (grounded,
the expected document cited, the gold span in the answer) overall and by ``answer_from`` (table,
text, table-text). Reports go to
bench/out/answers-tatqa-<kind>-<label>/report.json, for ``kb eval compare`` and bench/same_answers.py.

    python bench/tatqa.py --limit 40 --seed 7
    python bench/tatqa.py --limit 40 --seed 7 --no-answers     # ingest and OCR figures only
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ocr_engines import edit_distance, normalise  # noqa: E402 - bench/ is the script's folder

from kb_core.answers.pipeline import AskOptions  # noqa: E402
from kb_core.app import KnowledgeBase  # noqa: E402
from kb_core.commands import stored_lines  # noqa: E402
from kb_core.config import load_config  # noqa: E402
from kb_core.evaluation.answers import AnswerReport, evaluate_answers  # noqa: E402
from kb_core.evaluation.golden import load_golden  # noqa: E402
from kb_core.ingest.pipeline import ingest_paths  # noqa: E402
from kb_core.retrieval.search import search  # noqa: E402
from kb_core.types import SearchQuery  # noqa: E402

TATQA = REPO.parent / "shared" / "datasets" / "tatqa-tune"
OUT = REPO / "bench" / "out"
KINDS = ("born-digital", "scanned")


def pages_of(path: Path) -> int:
    """Pages in a PDF (pypdfium2, as kb-documents reads it); an image is one page."""
    if path.suffix.lower() != ".pdf":
        return 1
    import pypdfium2

    document = pypdfium2.PdfDocument(str(path))
    try:
        return len(document)
    finally:
        document.close()


def sample(kind: str, limit: int, seed: int) -> tuple[Path, dict[str, str]]:
    """The fixed-seed sample of ``kind``'s golden set (the same question ids for both kinds), and answer_from by id."""
    lines = [json.loads(x) for x in (TATQA / f"golden-{kind}.jsonl").read_text(encoding="utf-8").splitlines() if x]
    ids = sorted(x["id"] for x in lines)
    chosen = set(random.Random(seed).sample(ids, min(limit, len(ids))) if limit else ids)
    picked = [x for x in lines if x["id"] in chosen]
    target = OUT / f"golden-tatqa-{kind}-{limit or 'all'}-{seed}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in picked), encoding="utf-8")
    return target, {x["id"]: x["answer_from"] for x in picked}


def _cached_pages(kb_dir: Path) -> int:
    return sum(1 for _ in (kb_dir / "ocr-cache").rglob("*.json"))


def _percentile(values: list[float], share: float) -> float | None:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 2) if ordered else None


def ingest(kind: str) -> tuple[KnowledgeBase, dict[str, Any]]:
    """``kind``'s folder ingested into a fresh knowledge base: the figures of the run, and of two more."""
    folder, kb_dir = TATQA / kind, OUT / f"kb-tatqa-{kind}"
    shutil.rmtree(kb_dir, ignore_errors=True)
    kb = KnowledgeBase(load_config(kb_dir=kb_dir, environ={}))
    files = sorted(p for p in folder.iterdir() if p.is_file())
    page_seconds: list[float] = []
    last = [time.perf_counter()]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if stage.startswith("ocr "):
            page_seconds.append(now - last[0])
        last[0] = now

    began = time.perf_counter()
    report = ingest_paths(kb, [folder], progress)
    seconds = time.perf_counter() - began
    stored = set(report.added)
    pages = sum(pages_of(p) for p in files if p.name in stored)
    read = _cached_pages(kb_dir)
    began = time.perf_counter()
    again = ingest_paths(kb, [folder])
    unchanged_seconds = time.perf_counter() - began
    with kb.store.transaction():
        kb.store.delete_documents(sorted(stored))
    began = time.perf_counter()
    ingest_paths(kb, [folder])
    reparse_seconds = time.perf_counter() - began
    return kb, {
        "files": len(files),
        "stored": len(stored),
        "refused": len(report.failed),
        "refused_reasons": sorted({f.reason.split(";")[0][:90] for f in report.failed}),
        "seconds": round(seconds, 1),
        "pages_stored": pages,
        "pages_per_second": round(pages / seconds, 2) if seconds else None,
        "ocr_pages": len(page_seconds),
        "ocr_seconds_per_page_p50": _percentile(page_seconds, 0.5),
        "ocr_seconds_per_page_p95": _percentile(page_seconds, 0.95),
        "again_unchanged": f"{again.unchanged} unchanged, {len(again.added) + len(again.updated)} parsed"
        f" in {unchanged_seconds:.1f} s",
        "again_after_removing_all": f"{_cached_pages(kb_dir) - read} pages OCR'd (cache kept {read})"
        f" in {reparse_seconds:.1f} s",
    }


def recall_at_5(kb: KnowledgeBase, questions: list[Any]) -> str:
    """Questions whose expected document is among the documents of the first 5 hits (hybrid search)."""
    found = 0
    for question in questions:
        hits = search(kb, SearchQuery(question.question, k=5)).hits
        found += bool({h.doc_path for h in hits} & set(question.expected_docs))
    return f"{found}/{len(questions)} = {found / len(questions):.3f}" if questions else "-"


def stored_text(kb: KnowledgeBase, path: str) -> str:
    """The text kb stored for ``path``, line by line as ``kb serve`` and ``kb mcp`` show it (overlaps
    and repeated table headers counted once, the blank lines between joined blocks dropped)."""
    lines, _exact = stored_lines(kb.store.chunks_of([path]))
    return "\n".join(line for line in lines if line is not None)


def error_rate(kb: KnowledgeBase, documents: list[str]) -> dict[str, Any]:
    """Character error rate of the stored text of ``documents`` against truth/ (unread documents: all wrong)."""
    errors = characters = unread = 0
    for name in documents:
        truth = normalise((TATQA / "truth" / f"{Path(name).stem}.txt").read_text(encoding="utf-8"))
        text = normalise(stored_text(kb, name))
        unread += not text
        errors += edit_distance(truth, text)
        characters += len(truth)
    return {"documents": len(documents), "unread": unread, "cer": round(errors / characters, 4) if characters else None}


def by_source(report: AnswerReport, answer_from: dict[str, str]) -> dict[str, str]:
    """Right answers (grounded, expected document cited, gold span present) overall and by answer_from."""
    right: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in report.results:
        for key in ("all", answer_from[r.id]):
            right[key][0] += int(r.correct)
            right[key][1] += 1
    return {k: f"{a}/{n} = {a / n:.2f}" for k, (a, n) in sorted(right.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=40, help="questions in the sample (0 = all)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--label", default="default", help="names the report folders")
    parser.add_argument("--no-answers", action="store_true", help="ingest and the error rate only")
    args = parser.parse_args()

    figures: dict[str, Any] = {}
    for kind in KINDS:
        kb, ingested = ingest(kind)
        golden, answer_from = sample(kind, args.limit, args.seed)
        questions = load_golden(golden)
        docs = sorted({d for q in questions for d in q.expected_docs})
        figures[kind] = {
            "ingest": ingested,
            "ocr" if kind == "scanned" else "text": error_rate(kb, docs),
            "recall_at_5_by_document": recall_at_5(kb, questions),
        }
        if not args.no_answers:
            out = OUT / f"answers-tatqa-{kind}-{args.label}"
            report = evaluate_answers(kb, questions, AskOptions(), golden_file=golden, out_dir=out)
            m = report.metrics
            figures[kind]["answers"] = {
                "right": by_source(report, answer_from),
                "grounded": m.grounded_rate,
                "citation_precision": m.citation_precision,
                "prompt_tokens_p50": m.prompt_tokens_p50,
                "first_token_ms_p50": m.first_token_ms_p50,
                "latency_ms_p50": round(m.latency_ms_p50),
                "report": str(report.report_path),
            }
        kb.close()
    print(json.dumps(figures, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
