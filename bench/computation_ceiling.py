"""What kb's computed answers could reach with a perfect model: TAT-QA's own computation written for each question.

For each of tatqa-tune's number questions, over the knowledge base bench/tatqa_numbers.py ingests
(bench/out/kb-tatqa-<kind>), the real answer pipeline runs (retrieval, the passages a computation reads, kb's own
counts, every check of a computed answer, and the ordinary path's checks) with a scripted model
(:mod:`kb_core.testing`, counting tokens with the embedded model's own tokenizer, so that it is given what the
real model is given). Asked for a computation, it writes the question's own derivation from TAT-QA (times 100 for a
percentage TAT-QA gives as a ratio); asked for an answer in words, it states TAT-QA's number citing the expected
report's passage when one was packed, and refuses otherwise. Scored as the set's README says
(:func:`kb_core.evaluation.answers.score_answer`). What it gets right is the most any model could get with today's
retrieval and checks; what it loses is lost to retrieval (the expected report not among the passages), to a
question two reports fit alike, or to a check that refuses a right computation. No language model generates
(its tokenizer is loaded); under a minute for the 750::

    python bench/computation_ceiling.py --kind born-digital
    python bench/computation_ceiling.py --kind born-digital --sample 60 --show 5
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kb_core.answers import computed  # noqa: E402
from kb_core.answers.numbers import ExpressionError, evaluate, parse  # noqa: E402
from kb_core.answers.pipeline import AskOptions, RagPipeline  # noqa: E402
from kb_core.app import KnowledgeBase  # noqa: E402
from kb_core.config import load_config  # noqa: E402
from kb_core.evaluation.answers import doc_matches, score_answer  # noqa: E402
from kb_core.evaluation.golden import load_golden  # noqa: E402
from kb_core.limits import check_text  # noqa: E402
from kb_core.retrieval.search import checked_search  # noqa: E402
from kb_core.testing.language_models import ScriptedLanguageModel  # noqa: E402
from kb_core.types import GenerateRequest  # noqa: E402

TATQA = REPO.parent / "shared" / "datasets" / "tatqa-tune"


def oracle(row: dict[str, Any]) -> str:
    """The computation a perfect model would write for ``row``: TAT-QA's derivation ('none' for a count, whose
    derivation lists the rows it counted)."""
    derivation = str(row.get("derivation", "")).strip()
    if row["answer_type"] != "arithmetic" or not re.search(r"\d", derivation):
        return "none"
    try:
        value = float(evaluate(parse(derivation)))
    except (ExpressionError, ZeroDivisionError):
        return derivation  # kb refuses it as the model's would be
    answer = abs(float(row["answer"]))
    if row["scale"] == "percent" and abs(abs(value) * 100 - answer) < abs(abs(value) - answer):
        return f"({derivation}) * 100"  # a ratio TAT-QA gives as a percent
    return derivation


ENTRY = re.compile(r"^\[#(\d+)\] (\S+)", re.MULTILINE)


def in_words(user: str, current: dict[str, Any]) -> str:
    """A perfect answer in words: TAT-QA's number, citing the packed passage of the expected report (the first), or
    a refusal when none was packed."""
    for marker, path in ENTRY.findall(user):
        if any(doc_matches(path, expected) for expected in current["expected"]):
            value = abs(float(current["answer"]))
            written = f"{value:,.2f}".rstrip("0").rstrip(".")
            return f"It is {written}{'%' if current['scale'] == 'percent' else ''} [#{marker}]."
    return "Insufficient evidence."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", choices=("born-digital", "scanned"), default="born-digital")
    parser.add_argument("--sample", type=int, default=0, help="bench/tatqa.py's draw of N questions, seed 7")
    parser.add_argument("--show", type=int, default=0, help="print N questions of each outcome")
    args = parser.parse_args()
    golden_path = TATQA / f"golden-numbers-{args.kind}.jsonl"
    if args.sample:
        import tatqa  # bench/'s own module: the draw every tatqa bench uses

        golden_path, _ = tatqa.sample(f"numbers-{args.kind}", args.sample, 7)
    rows = {r["id"]: r for r in map(json.loads, golden_path.read_text(encoding="utf-8").splitlines()) if r}
    kb = KnowledgeBase(load_config(kb_dir=REPO / "bench" / "out" / f"kb-tatqa-{args.kind}", environ={}))
    current: dict[str, Any] = {}

    def script(request: GenerateRequest) -> list[str]:
        if request.system == computed.SYSTEM:
            return [f"CALC: {current['calc']}"]
        return [in_words(request.user, current)]

    tokenizer = kb.language_model()  # its tokenizer only: the evidence budget and packing are the real ones
    model = ScriptedLanguageModel(script, context_tokens=tokenizer.context_tokens)
    model.count_tokens = tokenizer.count_tokens  # type: ignore[method-assign]
    pipeline = RagPipeline(kb.config, kb.store, lambda query: checked_search(kb, query).hits, lambda: model)
    outcomes: Counter[str] = Counter()
    shown: dict[str, list[str]] = {}
    try:
        for golden in load_golden(golden_path):
            row = rows[golden.id]
            current.update(calc=oracle(row), expected=golden.expected_docs, answer=row["answer"], scale=row["scale"])
            answer = pipeline.ask(check_text(golden.question, "question"), AskOptions(explain=True), save=False)
            result = score_answer(golden, answer)
            read = any(doc_matches(p.ref.split("#")[0], e) for p in answer.packed for e in golden.expected_docs)
            outcome = (
                "right"
                if result.number_right
                else "wrong"
                if result.wrong_number
                else f"refused: {answer.refusal_detail or answer.refusal_reason}"
            )
            key = f"{row['answer_type']} / {outcome} / {'read' if read else 'not read'}"
            outcomes[key] += 1
            shown.setdefault(key, []).append(
                f"{golden.question} | {current['calc']} | {answer.note or answer.answer[:140]}"
            )
    finally:
        kb.close()
    total = len(rows)
    right = sum(n for key, n in outcomes.items() if "/ right /" in key)
    wrong = sum(n for key, n in outcomes.items() if "/ wrong /" in key)
    print(json.dumps({"kind": args.kind, "questions": total, "right": right, "wrong": wrong}))
    print(json.dumps(dict(sorted(outcomes.items())), indent=2))
    for key, examples in sorted(shown.items()):
        for example in examples[: args.show]:
            print(f"  {key}: {example}")


if __name__ == "__main__":
    main()
