"""Benchmark `kb ask` with the embedded default model, and the golden set with and without the grammar.

Prints, for on-topic questions over the fixture corpus (after one warm-up question that loads
the model): time to first token, total time, the model's own time, and the pipeline's own time
outside the model call (retrieval, packing with the model's tokenizer, validation, persistence;
target under 100 ms). Then runs the golden set (fixtures/golden/answers.jsonl) unconstrained and
constrained (GBNF citation grammar) and prints the metrics side by side.

    python bench/ask_latency.py                      # everything
    python bench/ask_latency.py --questions 3 --no-golden
    python bench/ask_latency.py --model /path/to/model.gguf --max-context-tokens 1024
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kb_core.answers.pipeline import AskOptions, ask  # noqa: E402
from kb_core.app import KnowledgeBase  # noqa: E402
from kb_core.config import load_config  # noqa: E402
from kb_core.evaluation.answers import evaluate_answers  # noqa: E402
from kb_core.evaluation.golden import load_golden  # noqa: E402
from kb_core.ingest.pipeline import ingest_paths  # noqa: E402

CORPUS = REPO / "fixtures" / "corpus"
GOLDEN = REPO / "fixtures" / "golden" / "answers.jsonl"


def _ms(values: list[float]) -> str:
    return f"p50 {statistics.median(values):8.1f} ms   max {max(values):8.1f} ms"


def latency(kb: KnowledgeBase, questions: list[str]) -> None:
    """Time to first token, total, model and pipeline time per question (after a warm-up)."""
    began = time.perf_counter()
    warm = ask(kb, questions[0])
    cold_ms = (time.perf_counter() - began) * 1000
    print(f"warm-up (loads the model): {cold_ms:.0f} ms; grounded={warm.grounded}")
    ttft, total, model, own, retrieval, wall_own = [], [], [], [], [], []
    for question in questions:
        began = time.perf_counter()
        answer = ask(kb, question)
        wall = (time.perf_counter() - began) * 1000
        usage = answer.usage
        total.append(usage.latency_ms)
        model.append(usage.generation_ms)
        own.append(usage.latency_ms - usage.generation_ms)
        wall_own.append(wall - usage.generation_ms)
        retrieval.append(answer.retrieval.took_ms)
        if usage.first_token_ms is not None:
            ttft.append(usage.first_token_ms)
        print(
            f"  {usage.latency_ms:8.0f} ms total, first token {usage.first_token_ms or 0:8.0f} ms, "
            f"{usage.prompt_tokens:5d} prompt + {usage.completion_tokens:4d} completion tokens, "
            f"grounded={answer.grounded}  {question[:50]}"
        )
    print(f"time to first token      {_ms(ttft)}")
    print(f"total (ask)              {_ms(total)}")
    print(f"inside the model         {_ms(model)}")
    print(f"pipeline's own time      {_ms(own)}   (of which retrieval {statistics.median(retrieval):.1f} ms)")
    print(f"  incl. persistence      {_ms(wall_own)}")
    print(f"pipeline share of total  {statistics.median(own) / statistics.median(total):.2%}")


def golden(kb: KnowledgeBase, out: Path) -> None:
    """The golden set unconstrained and constrained, side by side."""
    questions = load_golden(GOLDEN)
    reports = {}
    for constrained in (False, True):
        began = time.perf_counter()
        reports[constrained] = evaluate_answers(
            kb,
            questions,
            AskOptions(constrained=constrained),
            golden_file=GOLDEN,
            out_dir=out / ("constrained" if constrained else "plain"),
        )
        print(
            f"golden set {'constrained' if constrained else 'plain':<11} {time.perf_counter() - began:7.1f} s  "
            f"report {reports[constrained].report_path}"
        )
    plain, grammar = reports[False].metrics, reports[True].metrics
    print(f"{'metric':<24} {'plain':>8} {'grammar':>8} {'delta':>8}")
    for name, value in plain.rates().items():
        other = grammar.rates()[name]
        delta = f"{other - value:+8.3f}" if value is not None and other is not None else f"{'':>8}"
        print(f"{name:<24} {_fmt(value)} {_fmt(other)} {delta}")
    for name in ("latency_ms_p50", "latency_ms_p95"):
        print(f"{name:<24} {getattr(plain, name):8.0f} {getattr(grammar, name):8.0f}")
    for constrained, report in reports.items():
        label = "grammar" if constrained else "plain"
        for r in report.results:
            outcome = "grounded" if r.grounded else f"refused:{r.refusal_reason}"
            print(f"  {label:<7} {'ok ' if r.correct else 'BAD'} {r.id:<16} {outcome:<24} {r.answer[:70]!r}")


def _fmt(value: float | None) -> str:
    return f"{value:8.3f}" if value is not None else f"{'n/a':>8}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="", help="GGUF file (default: the llamacpp plugin's embedded model)")
    parser.add_argument("--questions", type=int, default=4, help="on-topic questions to time")
    parser.add_argument("--max-context-tokens", type=int, default=768, help="[rag] max_context_tokens")
    parser.add_argument("--no-golden", action="store_true", help="skip the golden-set comparison")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        overrides = {
            "models.llm.backend": "llamacpp",
            "models.llm.model": args.model,
            "models.llm.context_tokens": 2048,
            "models.llm.max_tokens": 160,
            "rag.max_context_tokens": args.max_context_tokens,
        }
        with KnowledgeBase(load_config(kb_dir=Path(tmp) / "kb", overrides=overrides, environ={})) as kb:
            ingest_paths(kb, [CORPUS])
            on_topic = [g.question for g in load_golden(GOLDEN) if g.answerable][: max(1, args.questions)]
            latency(kb, on_topic)
            if not args.no_golden:
                golden(kb, Path(tmp) / "eval")


if __name__ == "__main__":
    main()
