"""Numbers worked out from tables and text (issue 43): tatqa-tune's computed-number questions, answered.

Asks a fixed-seed sample of ``golden-numbers-<kind>.jsonl`` (the same question ids for both kinds)
with the embedded default model over ``<kind>/`` ingested into bench/out/kb-tatqa-<kind> (bench/tatqa.py's
ingest and sample, by import; ``--reuse`` keeps a knowledge base already there), scored as the set's
README says (:mod:`kb_core.evaluation.numbers`), and prints: right, grounded-wrong-number and refused
rates overall, by ``answer_type`` (arithmetic / count) and by ``answer_from`` (table / text /
table-text); how many were lost to retrieval (no passage of the expected document packed for the
model) and how the rest went; the whole-answer p50 in seconds. ``--spans [N]`` also asks bench/tatqa.py's
span sample of the same seed (120 questions, or N), for the p50 comparison. Figures go to
bench/out/tatqa-numbers-<kind>-<label>.json, reports to bench/out/answers-tatqa-numbers-<kind>-<label>/.

kb_core comes from PYTHONPATH when it names a tree (a baseline worktree), else from this checkout::

    python bench/tatqa_numbers.py --kind born-digital --limit 60 --seed 7 --label baseline
    PYTHONPATH=/tmp/kb-baseline:... python bench/tatqa_numbers.py --reuse --label baseline
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # after PYTHONPATH: a baseline tree named there is the kb measured

import kb_core  # noqa: E402 - imported before bench/tatqa.py puts this checkout first on sys.path
from kb_core.answers.pipeline import AskOptions  # noqa: E402
from kb_core.app import KnowledgeBase  # noqa: E402
from kb_core.config import load_config  # noqa: E402
from kb_core.evaluation.answers import AnswerReport, QuestionResult, evaluate_answers  # noqa: E402
from kb_core.evaluation.golden import load_golden  # noqa: E402
from kb_core.storage.store import DB_NAME  # noqa: E402

# isort: split
import tatqa  # noqa: E402 - bench/ is the script's folder

SPAN_SAMPLE = 120


def knowledge_base(kind: str, reuse: bool) -> tuple[KnowledgeBase, dict[str, Any] | None]:
    """bench/out/kb-tatqa-<kind>: reused when asked and there, else ingested afresh by bench/tatqa.py."""
    kb_dir = tatqa.OUT / f"kb-tatqa-{kind}"
    if reuse and (kb_dir / DB_NAME).exists():
        return KnowledgeBase(load_config(kb_dir=kb_dir, environ={})), None
    return tatqa.ingest(kind)


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} = {part / whole:.3f}" if whole else "-"


def _p50(values: list[float]) -> float | None:
    ordered = sorted(values)
    return round(ordered[len(ordered) // 2], 2) if ordered else None


def figures(results: tuple[QuestionResult, ...]) -> dict[str, str]:
    """Right, grounded-wrong-number and refused shares of ``results``."""
    n = len(results)
    return {
        "right": _share(sum(bool(r.number_right) for r in results), n),
        "grounded_wrong_number": _share(sum(bool(r.wrong_number) for r in results), n),
        "refused": _share(sum(not r.grounded for r in results), n),
    }


def outcome(r: QuestionResult) -> str:
    return "right" if r.number_right else "wrong_number" if r.wrong_number else "refused" if not r.grounded else "other"


def retrieval(results: tuple[QuestionResult, ...]) -> dict[str, Any]:
    """Questions lost to retrieval (no passage of the expected document packed), and how the rest went."""
    lost = [r for r in results if r.expected_packed is not True]
    kept = [r for r in results if r.expected_packed is True]
    return {
        "lost_to_retrieval": _share(len(lost), len(results)),
        "lost_nothing_packed": sum(r.expected_packed is None for r in lost),
        "lost_outcomes": dict(Counter(outcome(r) for r in lost)),
        "expected_packed_outcomes": dict(Counter(outcome(r) for r in kept)),
    }


def timed_evaluation(kb: KnowledgeBase, golden: Path, out: Path) -> tuple[AnswerReport, list[float]]:
    """The answer report of ``golden`` and each question's whole wall seconds (ask and scoring)."""
    marks = [time.perf_counter()]

    def progress(stage: str, done: int, total: int) -> None:
        marks.append(time.perf_counter())
        print(f"  {done}/{total} {marks[-1] - marks[-2]:.1f} s", file=sys.stderr, flush=True)

    questions = load_golden(golden)
    report = evaluate_answers(
        kb, questions, AskOptions(explain=True), golden_file=golden, out_dir=out, progress=progress
    )
    return report, [b - a for a, b in zip(marks, marks[1:], strict=False)]


def numbers_run(kb: KnowledgeBase, kind: str, limit: int, seed: int, label: str) -> dict[str, Any]:
    """The number questions of the sample, asked and scored."""
    golden, answer_from = tatqa.sample(f"numbers-{kind}", limit, seed)
    rows = [json.loads(x) for x in golden.read_text(encoding="utf-8").splitlines() if x.strip()]
    answer_type = {x["id"]: x["answer_type"] for x in rows}
    report, seconds = timed_evaluation(kb, golden, tatqa.OUT / f"answers-tatqa-numbers-{kind}-{label}")
    groups: dict[str, list[QuestionResult]] = defaultdict(list)
    for r in report.results:
        groups[f"answer_type={answer_type[r.id]}"].append(r)
        groups[f"answer_from={answer_from[r.id]}"].append(r)
    m = report.metrics
    return {
        "golden": str(golden),
        "questions": len(report.results),
        **figures(report.results),
        "by": {k: figures(tuple(v)) for k, v in sorted(groups.items())},
        "retrieval": retrieval(report.results),
        "refusal_details": m.refusal_details,
        "whole_answer_seconds_p50": _p50(seconds),
        "latency_ms_p50": round(m.latency_ms_p50),
        "prompt_tokens_p50": m.prompt_tokens_p50,
        "report": report.report_path,
    }


def spans_run(kb: KnowledgeBase, kind: str, seed: int, label: str, limit: int = SPAN_SAMPLE) -> dict[str, Any]:
    """bench/tatqa.py's span sample of ``seed`` (``limit`` questions, 120 by default), for the p50 comparison."""
    golden, _answer_from = tatqa.sample(kind, limit, seed)
    report, seconds = timed_evaluation(kb, golden, tatqa.OUT / f"answers-tatqa-spans-{kind}-{label}")
    right = sum(r.correct for r in report.results)
    return {
        "questions": len(report.results),
        "right": _share(right, len(report.results)),
        "whole_answer_seconds_p50": _p50(seconds),
        "latency_ms_p50": round(report.metrics.latency_ms_p50),
        "report": report.report_path,
    }


def tree_of() -> dict[str, str]:
    """Where kb_core was imported from, and that tree's commit."""
    root = Path(kb_core.__file__).resolve().parents[1]
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return {"kb_core": str(root), "commit": done.stdout.strip()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=tatqa.KINDS, default="born-digital")
    parser.add_argument("--limit", type=int, default=60, help="questions in the sample (0 = all)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--label", default="default", help="names the figures file and report folders")
    parser.add_argument("--reuse", action="store_true", help="keep bench/out/kb-tatqa-<kind> when it is there")
    parser.add_argument(
        "--spans",
        type=int,
        nargs="?",
        const=SPAN_SAMPLE,
        default=0,
        help=f"also ask a span sample of this many questions (alone: {SPAN_SAMPLE}), asked after the numbers",
    )
    args = parser.parse_args()

    began = time.perf_counter()
    kb, ingested = knowledge_base(args.kind, args.reuse)
    try:
        result: dict[str, Any] = {
            "command": " ".join(["python", *sys.argv]),
            "tree": tree_of(),
            "ingest": ingested or "reused",
            "numbers": numbers_run(kb, args.kind, args.limit, args.seed, args.label),
        }
        if args.spans:
            result["spans"] = spans_run(kb, args.kind, args.seed, args.label, args.spans)
    finally:
        kb.close()
    result["wall_seconds"] = round(time.perf_counter() - began)
    target = tatqa.OUT / f"tatqa-numbers-{args.kind}-{args.label}.json"
    target.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, ensure_ascii=False))
    print(f"written: {target}")


if __name__ == "__main__":
    main()
