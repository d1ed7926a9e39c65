"""Questions over every format of a person's folder (issue 46), answered by the embedded default model.

The folder is made here, seeded and the same bytes every run (:mod:`formats_samples`: a small company's
mail as an mbox and two .eml files, a lecture deck with speaker notes, a site-visit .odp, an e-book
handbook, an .odt policy, an .ods register and a data-analysis notebook; every fact made up and written
in one part). The bench writes it to bench/out/formats-folder, ingests it into a fresh knowledge base
(bench/out/kb-formats, kb's default engines), runs `kb eval answers` in process on
``bench/data/formats/golden.jsonl`` and prints, per kind of part: answerable questions grounded with
the expected part cited, grounded citing only other parts, refused; unanswerable questions refused;
the p50 latency. Figures and one row per question go to bench/out/formats.json.

kb's own scoring matches ``expected_docs`` against the cited documents only (a message and an
attachment are documents of their own, so for mail it is exact); a citation names lines
(``deck.pptx#L9-L10``), so the bench finds the slide, chapter or cell itself: the document's
``page_lines`` give the part of the citation's first line, as ``kb pages`` does.

    python bench/formats.py                 # all 56 questions
    python bench/formats.py --limit 3       # a seeded sample, for a quick look
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from formats_samples import GOLDEN, part_of, write_folder

from kb_core.answers.pipeline import AskOptions
from kb_core.app import KnowledgeBase
from kb_core.config import load_config, parse_value
from kb_core.evaluation.answers import AnswerReport, QuestionResult, doc_matches, evaluate_answers
from kb_core.evaluation.golden import load_golden
from kb_core.ingest.pipeline import ingest_paths
from kb_core.types import Citation

OUT = REPO / "bench" / "out"
FOLDER = OUT / "formats-folder"
KB_DIR = OUT / "kb-formats"
KINDS = ("message", "attachment", "slide notes", "slide text", "chapter", "cell", "odt", "ods")


def golden_lines(limit: int, seed: int) -> list[dict[str, Any]]:
    """The golden questions (every one, or a seeded sample of ``limit`` in file order)."""
    lines = [json.loads(x) for x in GOLDEN.read_text(encoding="utf-8").splitlines() if x.strip()]
    if not limit or limit >= len(lines):
        return lines
    chosen = set(random.Random(seed).sample(range(len(lines)), limit))
    return [x for n, x in enumerate(lines) if n in chosen]


def cited_parts(kb: KnowledgeBase, refs: tuple[str, ...]) -> list[tuple[str, int | None]]:
    """(document, part or None) of each cited ``path#Lx-Ly``: the part holding the citation's first line."""
    parts = []
    for ref in refs:
        citation = Citation.parse(ref)
        document = kb.store.get_document(citation.path)
        metadata = document.metadata if document is not None else {}
        parts.append((citation.path, part_of(metadata, citation.start_line)))
    return parts


def outcome(line: dict[str, Any], result: QuestionResult, parts: list[tuple[str, int | None]]) -> str:
    """``right part``, ``other document`` (grounded, the expected document not cited), ``right document`` (only the
    part was wrong) or ``refused`` for an answerable question; ``refused`` or ``answered`` for the others."""
    if not line["answerable"]:
        return "refused" if not result.grounded else "answered"
    if not result.grounded:
        return "refused"
    expected = line["expected_docs"][0]
    in_document = [part for path, part in parts if doc_matches(path, expected)]
    if any(line["part"] is None or part == line["part"] for part in in_document):
        return "right part"
    return "right document" if in_document else "other document"


def table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per kind of part: questions and how they ended."""
    lines = []
    for kind in (*KINDS, "unanswerable"):
        of_kind = [r for r in rows if r["kind"] == kind]
        if of_kind:
            counts = Counter(r["outcome"] for r in of_kind)
            lines.append({"kind": kind, "questions": len(of_kind), **counts})
    return lines


def show(figures: dict[str, Any]) -> None:
    print(f"\n{'kind':<14}{'asked':>6}{'right part':>12}{'right doc':>11}{'other doc':>11}{'refused':>9}")
    for line in figures["by_kind"]:
        if line["kind"] == "unanswerable":
            print(f"{'unanswerable':<14}{line['questions']:>6}{'':>34}{line.get('refused', 0):>9}")
            continue
        print(
            f"{line['kind']:<14}{line['questions']:>6}{line.get('right part', 0):>12}"
            f"{line.get('right document', 0):>11}{line.get('other document', 0):>11}{line.get('refused', 0):>9}"
        )
    total = figures["answerable"]
    print(
        f"answerable {total['questions']}: {total['right_part']} grounded with the expected part cited, "
        f"{total['grounded_elsewhere']} grounded citing other parts, {total['refused']} refused; "
        f"must-contain met {total['must_contain']}; unanswerable refused {figures['unanswerable_refused']}; "
        f"latency p50 {figures['latency_ms_p50']:.0f} ms, p95 {figures['latency_ms_p95']:.0f} ms"
    )
    for row in figures["questions"]:
        right = row["outcome"] == ("right part" if row["answerable"] else "refused")
        mark = "ok " if right else "BAD"
        print(f"  {mark} {row['id']:<11} {row['outcome']:<14} {row['cited'][:2]} {row['answer'][:80]!r}")


def figures_of(lines: list[dict[str, Any]], report: AnswerReport, kb: KnowledgeBase, ingest_s: float) -> dict[str, Any]:
    """The bench's figures and one row per question."""
    by_id = {r.id: r for r in report.results}
    rows = []
    for line in lines:
        result = by_id[line["id"]]
        parts = cited_parts(kb, result.cited) if result.grounded else []
        rows.append(
            {
                "id": line["id"],
                "kind": line["kind"],
                "answerable": line["answerable"],
                "expected": line.get("expected_docs", [""])[0] + (f" part {line['part']}" if line.get("part") else ""),
                "outcome": outcome(line, result, parts),
                "cited": list(result.cited),
                "cited_parts": [f"{p} part {n}" if n else p for p, n in parts],
                "refusal": result.refusal_detail,
                "must_contain_missing": list(result.must_contain_missing),
                "latency_ms": round(result.latency_ms),
                "answer": result.answer,
            }
        )
    answerable = [r for r in rows if r["answerable"]]
    m = report.metrics
    return {
        "date": time.strftime("%Y-%m-%d"),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip(),
        "golden": str(report.golden),
        "documents": kb.store.count_documents(),
        "chunks": kb.store.count_chunks(),
        "ingest_s": round(ingest_s, 1),
        "by_kind": table(rows),
        "answerable": {
            "questions": len(answerable),
            "right_part": sum(r["outcome"] == "right part" for r in answerable),
            "grounded_elsewhere": sum(r["outcome"] in ("right document", "other document") for r in answerable),
            "refused": sum(r["outcome"] == "refused" for r in answerable),
            "must_contain": sum(r["outcome"] == "right part" and not r["must_contain_missing"] for r in answerable),
        },
        "unanswerable_refused": f"{sum(r['outcome'] == 'refused' for r in rows if not r['answerable'])} of "
        f"{sum(not r['answerable'] for r in rows)}",
        "latency_ms_p50": m.latency_ms_p50,
        "latency_ms_p95": m.latency_ms_p95,
        "kb_metrics": m.rates() | {"refusal_details": m.refusal_details},
        "report": report.report_path,
        "questions": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=0, help="a seeded sample of this many questions (0 = all)")
    parser.add_argument("--seed", type=int, default=46)
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="a config override")
    parser.add_argument("--out", type=Path, default=OUT / "formats.json", help="where to write the figures")
    args = parser.parse_args()
    overrides = {key: parse_value(value) for key, value in (item.split("=", 1) for item in args.config)}
    lines = golden_lines(args.limit, args.seed)
    golden = GOLDEN
    if args.limit:
        golden = OUT / f"golden-formats-{args.limit}-{args.seed}.jsonl"
        golden.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    shutil.rmtree(FOLDER, ignore_errors=True)
    shutil.rmtree(KB_DIR, ignore_errors=True)
    files = write_folder(FOLDER)
    with KnowledgeBase(load_config(kb_dir=KB_DIR, overrides=overrides, environ={})) as kb:
        began = time.perf_counter()
        ingested = ingest_paths(kb, [FOLDER])
        ingest_s = time.perf_counter() - began
        print(f"ingest {len(files)} files: {ingest_s:.1f} s, {len(ingested.added)} documents, {ingested.failed} failed")
        began = time.perf_counter()
        report = evaluate_answers(
            kb, load_golden(golden), AskOptions(), golden_file=golden, out_dir=OUT / "answers-formats"
        )
        print(f"evaluated {len(lines)} questions in {time.perf_counter() - began:.0f} s; report {report.report_path}")
        figures = figures_of(lines, report, kb, ingest_s)
    show(figures)
    args.out.write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"figures in {args.out}")


if __name__ == "__main__":
    main()
