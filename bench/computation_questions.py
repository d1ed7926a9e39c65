"""The computation checker on real question wording and real formulas (kb_core.answers.computation; no model).

1. ``asks_for_computation`` on the questions of ``../shared/datasets``: the share of tatqa-tune's 750
   computed questions it flags (recall), of its 918 span questions (wrongly flagged), and of
   clapnq-tune's and pubmedqa-tune's questions (which must stay on today's path).
2. TAT-QA's own derivations (``golden-numbers-born-digital.jsonl``): each one written with numbers and
   ``+ - * / ( )`` only (square brackets too, as TAT-QA writes them) is evaluated with kb's parser and
   compared with ``answer`` in absolute value (for a percent answer, the result or, when the derivation
   does not multiply by 100, the result times 100: TAT-QA writes a percentage point difference as is),
   and checked with ``check_computation`` against its context as a passage (the table's rows as
   ``a | b | c`` lines, then the paragraphs), which says whether kb finds every operand in the text;
   then with the checks of a computed answer (the operation the question asks for, each operand's row,
   period column or sentence): how often they would refuse a right computation.
3. The counts kb writes itself (``kb_core.answers.counted``: "how many years did X exceed Y"), over each
   question's context as above, with the checks of a computed answer: written, right, wrong, refused; and
   how many span questions it would take (none should).

    python bench/computation_questions.py            # figures
    python bench/computation_questions.py --show 20  # and up to 20 examples of each kind of miss
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kb_core.answers.computation import Computation, ComputationRefusal, asks_for_computation, check_computation
from kb_core.answers.computed import Reply, computed
from kb_core.answers.counted import threshold_count
from kb_core.answers.numbers import ExpressionError, evaluate, parse
from kb_core.answers.operand_places import operands_problem
from kb_core.answers.operations import operation_problem
from kb_core.answers.tables import stored_rows

DATASETS = REPO.parent / "shared" / "datasets"
TATQA = DATASETS / "tatqa-tune"
ARITHMETIC = re.compile(r"[\d\s.,+\-*/()\[\]%$]+")
HUNDRED = re.compile(r"(?<![\d.,])100(?![\d.,])")


def questions(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def flagged(show: int) -> dict[str, Any]:
    """The share of each question set ``asks_for_computation`` flags."""
    sets = {
        "tatqa computed (recall)": TATQA / "golden-numbers-born-digital.jsonl",
        "tatqa spans (wrongly flagged)": TATQA / "golden-born-digital.jsonl",
        "clapnq-tune": DATASETS / "clapnq-tune" / "golden.jsonl",
        "pubmedqa-tune": DATASETS / "pubmedqa-tune" / "golden.jsonl",
    }
    figures: dict[str, Any] = {}
    for name, path in sets.items():
        rows = questions(path)
        hits = [row["question"] for row in rows if asks_for_computation(row["question"])]
        figures[name] = {"flagged": len(hits), "of": len(rows), "share": round(len(hits) / len(rows), 3)}
        shown = [row["question"] for row in rows if row["question"] not in hits] if "recall" in name else hits
        for question in shown[:show]:
            print(f"  {'missed' if 'recall' in name else 'flagged'} ({name}): {question}")
    return figures


def context_texts() -> dict[str, str]:
    """Each question's context as one passage: the table's rows, then the paragraphs."""
    texts: dict[str, str] = {}
    for context in questions(TATQA / "contexts.jsonl"):
        rows = [" | ".join(cell for cell in row) for row in context["table"]["table"]]
        paragraphs = [paragraph["text"] for paragraph in sorted(context["paragraphs"], key=lambda p: p["order"])]
        text = "\n".join(rows + paragraphs)
        for question in context["questions"]:
            texts[question["uid"]] = text
    return texts


def agrees(value: Fraction, answer: float) -> tuple[bool, bool]:
    """(equal at the answer's precision, within 0.5 % or 0.01) in absolute value."""
    text = repr(float(answer))
    decimals = len(text.partition(".")[2].rstrip("0")) if "e" not in text else 6
    exact = round(abs(float(value)), decimals) == round(abs(answer), decimals)
    close = abs(abs(float(value)) - abs(answer)) <= max(0.005 * abs(answer), 0.01)
    return exact, close


def placement(done: Computation, context: str, question: str) -> tuple[str, str]:
    """What the checks of a computed answer say of a right computation: the operation the question asks for
    (kb_core.answers.operations), then each operand's row, period column and sentence
    (kb_core.answers.operand_places): ("accepted", "") or the refusal and its detail."""
    assert done.tree is not None
    operation = operation_problem(question, done.tree)
    if operation is not None:
        return "refused: operation_off_question", operation
    placed = operands_problem(done, done.tree, {1: context}, question)
    return ("refused: operand_off_question", placed) if placed is not None else ("accepted", "")


def derivations(show: int) -> dict[str, Any]:
    """TAT-QA's arithmetic derivations evaluated with kb's parser, and their operands found in their context."""
    texts = context_texts()
    counts: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for row in questions(TATQA / "golden-numbers-born-digital.jsonl"):
        derivation = row["derivation"].strip()
        arithmetic = row["answer_type"] == "arithmetic" and re.search(r"\d", derivation)
        if not arithmetic or not ARITHMETIC.fullmatch(derivation):
            counts["not arithmetic"] += 1
            continue
        counts["arithmetic"] += 1
        try:
            value = evaluate(parse(derivation))
        except (ExpressionError, ZeroDivisionError) as error:
            counts["refused by the parser"] += 1
            examples.setdefault("refused by the parser", []).append(f"{derivation!r}: {error}")
            continue
        exact, close = agrees(value, float(row["answer"]))
        if (
            row["scale"] == "percent" and not HUNDRED.search(derivation) and not close
        ):  # a ratio TAT-QA gives as a percent
            exact, close = agrees(value * 100, float(row["answer"]))
            counts["a percent answer, the derivation times 100"] += close
        counts["equal at the answer's precision"] += exact
        counts["within 0.5 %"] += close
        if not close:
            examples.setdefault("disagrees", []).append(f"{derivation!r} = {float(value):.4f}, answer {row['answer']}")
        checked = check_computation(derivation, {1: texts.get(row["id"], "")}, question=row["question"])
        if isinstance(checked, Computation):
            counts["every operand found in the context"] += 1
            placed = placement(checked, texts.get(row["id"], ""), row["question"])
            counts[f"then {placed[0]}"] += 1
            if placed[1]:
                examples.setdefault(placed[0], []).append(f"{row['question']} {derivation!r}: {placed[1]}")
        else:
            counts[f"check refused: {checked.reason}"] += 1
            examples.setdefault(checked.reason, []).append(f"{derivation!r}: {checked.detail}")
    for kind, shown in examples.items():
        for example in shown[:show]:
            print(f"  {kind}: {example}")
    return dict(counts)


def own_counts(show: int) -> dict[str, Any]:
    """The counts kb writes itself over each question's context, checked as a computed answer, against the gold."""
    texts = context_texts()
    counts: Counter[str] = Counter()
    for name in ("golden-numbers-born-digital.jsonl", "golden-born-digital.jsonl"):
        for row in questions(TATQA / name):
            text = texts.get(row["id"], "")
            written = threshold_count(row["question"], {1: stored_rows(text)})
            if written is None:
                continue
            counts[f"{name}: written"] += 1
            outcome = computed(Reply(written[0], (1,), ""), {1: text}, row["question"], {1: "report"})
            if outcome is None or isinstance(outcome, ComputationRefusal):
                counts[f"{name}: refused by the checks"] += 1
                continue
            record, answer = outcome
            right = "answer" in row and abs(float(record.result) - float(row["answer"])) < 0.5
            counts[f"{name}: {'right' if right else 'wrong'}"] += 1
            if not right and show:
                print(f"  own count wrong: {row['question']} -> {answer} (gold {row.get('answer')})")
    return dict(counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", type=int, default=0, help="examples of each kind of miss to print")
    args = parser.parse_args()
    report = {
        "asks_for_computation": flagged(args.show),
        "tatqa_derivations": derivations(args.show),
        "own_counts": own_counts(args.show),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
