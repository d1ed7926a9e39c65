"""Answer quality and speed on the public tune sets (and the fixtures), with the embedded default model.

Ingests the set's documents once into a cached knowledge base under bench/out/, picks a
fixed-seed sample of its questions (half answerable, half unanswerable where the set has both),
runs `kb eval answers` in process (the model is loaded once), and prints the headline figures,
refusals by cause, the answer-check trade-off curve and one line per question. The report is
written to bench/out/answers-<set>-<label>/report.json, for `kb eval compare A B`.

    python bench/answers.py --set clapnq --limit 40
    python bench/answers.py --set pubmedqa --limit 40 --config rag.answer_check=0
    python bench/answers.py --set fixtures
    python bench/answers.py --set clapnq --limit 0          # the whole set
    python bench/answers.py --set fixtures --postgres       # on PostgreSQL (pgserver, or --postgres-url URL)

With ``--postgres`` the store of record is PostgreSQL (kb-postgres), in a new schema each run, and the knowledge
base folder (its Tantivy and sqlite-vec indexes) is bench/out/kb-<set>-postgres, emptied first: the documents are
ingested afresh, and SQLite's cached bench/out/kb-<set> is never opened. The label defaults to ``postgres``.

The sets live beside the checkout in shared/datasets; kb itself knows nothing of them. For
PubMedQA the bench adds each question's yes/no/maybe answer as ``expected_verdict``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from common import add_store_arguments, store_overrides, wants_postgres

from kb_core.answers.pipeline import AskOptions
from kb_core.app import KnowledgeBase
from kb_core.config import load_config, parse_value
from kb_core.evaluation.answers import AnswerReport, evaluate_answers
from kb_core.evaluation.golden import load_golden
from kb_core.ingest.pipeline import ingest_paths

DATASETS = REPO.parent / "shared" / "datasets"
OUT = REPO / "bench" / "out"
SETS = {
    "clapnq": (DATASETS / "clapnq-tune" / "docs", DATASETS / "clapnq-tune" / "golden.jsonl"),
    "pubmedqa": (DATASETS / "pubmedqa-tune" / "docs", DATASETS / "pubmedqa-tune" / "golden.jsonl"),
    "fixtures": (REPO / "fixtures" / "corpus", REPO / "fixtures" / "golden" / "answers.jsonl"),
}


def _sample(lines: list[dict[str, Any]], limit: int, seed: int) -> list[dict[str, Any]]:
    if not limit or limit >= len(lines):
        return lines
    rng = random.Random(seed)
    answerable = [x for x in lines if x["answerable"]]
    unanswerable = [x for x in lines if not x["answerable"]]
    if not unanswerable or not answerable:
        return rng.sample(lines, limit)
    half = limit // 2
    return rng.sample(answerable, min(half, len(answerable))) + rng.sample(
        unanswerable, min(limit - half, len(unanswerable))
    )


def golden_file(name: str, limit: int, seed: int) -> Path:
    """The set's golden questions (a fixed-seed sample), with PubMedQA's verdicts added."""
    _, source = SETS[name]
    lines = [json.loads(x) for x in source.read_text(encoding="utf-8").split("\n") if x.strip()]
    if name == "pubmedqa":
        qa = {}
        for x in (source.parent / "qa.jsonl").read_text(encoding="utf-8").split("\n"):
            if x.strip():
                item = json.loads(x)
                qa[item["id"]] = item["answer"]
        for line in lines:
            line["expected_verdict"] = qa[line["id"]]
    lines = _sample(lines, limit, seed)
    target = OUT / f"golden-{name}-{limit or 'all'}-{seed}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return target


def knowledge_base(name: str, overrides: dict[str, Any]) -> KnowledgeBase:
    """The set's documents in a knowledge base cached under bench/out (ingest is incremental). On PostgreSQL (a new
    schema each run) the folder is kb-<name>-postgres, emptied first: its indexes follow that schema alone."""
    docs, _ = SETS[name]
    store = overrides.get("store.backend", "sqlite")
    folder = OUT / (f"kb-{name}-{store}" if store != "sqlite" else f"kb-{name}")
    if store != "sqlite":
        shutil.rmtree(folder, ignore_errors=True)
    kb = KnowledgeBase(load_config(kb_dir=folder, overrides=overrides, environ={}))
    began = time.perf_counter()
    report = ingest_paths(kb, [docs])
    print(f"ingest {docs.name} into {store}: {time.perf_counter() - began:.1f} s ({len(report.added)} added)")
    return kb


def show(report: AnswerReport) -> None:
    """Headline figures, refusal causes, the check curve and a line per question."""
    m = report.metrics
    print(f"\n{report.golden}: {m.questions} questions ({m.answerable} answerable, {m.unanswerable} unanswerable)")
    for name, value in m.rates().items():
        print(f"  {name:<26} {'n/a' if value is None else f'{value:.3f}'}")
    print(f"  grounded_violations        {m.grounded_violations}")
    print(f"  claims supported           {m.claims_supported} / {m.claims}")
    print(f"  prompt tokens p50          {m.prompt_tokens_p50}  (evaluated, not cached: {m.evaluated_tokens_p50})")
    print(f"  first token p50            {m.first_token_ms_p50} ms;  total p50 {m.latency_ms_p50:.0f} ms")
    print(f"  refusals by cause          {m.refusal_details}")
    v = m.verdicts
    if v.labelled:
        print(
            f"  verdicts stated            {v.stated} of {v.labelled} ({v.right} right, precision {v.precision}), "
            f"{v.withheld} withheld; coverage {v.coverage}"
        )
        print("  verdict confidence -> stated, precision, coverage")
        for p in v.curve[::2]:
            print(f"    {p.threshold:.2f}  {p.stated}  {p.precision}  {p.coverage}")
    print("  answer-check threshold -> grounded with expected citation / correct refusals")
    for point in m.check_curve:
        print(f"    {point.threshold:.1f}  {point.grounded_expected_rate}  {point.correct_refusal_rate}")
    for r in report.results:
        outcome = "grounded" if r.grounded else f"refused:{r.refusal_detail}"
        check = "" if r.answer_check is None else f" p={r.answer_check:.2f}"
        verdict = "" if r.verdict_right is None else f" verdict={r.verdict}{'+' if r.verdict_right else '-'}"
        print(
            f"  {'ok ' if r.correct else 'BAD'} {'A' if r.answerable else 'U'} {outcome:<26}{check}{verdict}"
            f" exp={r.cited_expected} {r.prompt_tokens}t {r.answer[:90]!r}"
        )


def prefill_ratio(kb: KnowledgeBase, report: AnswerReport) -> None:
    """Time to first token p50 against llama.cpp's own prefill of the same number of uncached tokens."""
    llm = kb.language_model()
    llama = getattr(llm, "_llama", None)
    evaluated = report.metrics.evaluated_tokens_p50
    if llama is None or not evaluated or report.metrics.first_token_ms_p50 is None:
        return
    tokens = llama.tokenize(("The evidence entries follow. " * 200).encode(), add_bos=False)[: int(evaluated)]
    timings = []
    for _ in range(3):
        llama.reset()
        began = time.perf_counter()
        llama.eval(tokens)
        timings.append((time.perf_counter() - began) * 1000)
    own = sorted(timings)[1]
    ttft = report.metrics.first_token_ms_p50
    print(
        f"  llama.cpp prefill of {int(evaluated)} tokens: {own:.0f} ms ({evaluated / own * 1000:.0f} tokens/s); "
        f"time to first token p50 {ttft:.0f} ms = {ttft / own:.2f} x prefill"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=sorted(SETS), default="clapnq")
    parser.add_argument("--limit", type=int, default=40, help="questions in the sample (0 = all)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--label", help="names the report folder (default: default, or postgres)")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="a config override")
    add_store_arguments(parser)
    args = parser.parse_args()
    label = args.label or ("postgres" if wants_postgres(args) else "default")
    overrides = {key: parse_value(value) for key, value in (item.split("=", 1) for item in args.config)}
    golden = golden_file(args.set, args.limit, args.seed)
    with ExitStack() as stack:
        overrides |= stack.enter_context(store_overrides(args, "answers"))
        kb = stack.enter_context(knowledge_base(args.set, overrides))
        began = time.perf_counter()
        report = evaluate_answers(
            kb, load_golden(golden), AskOptions(), golden_file=golden, out_dir=OUT / f"answers-{args.set}-{label}"
        )
        print(
            f"evaluated in {time.perf_counter() - began:.0f} s; report {report.report_path}; plot {report.verdict_plot}"
        )
        show(report)
        prefill_ratio(kb, report)


if __name__ == "__main__":
    main()
