"""Replay the verdicts of PubMedQA answer reports under kb's verdict confidence, and draw the curve.

An answer report (``bench/answers.py --set pubmedqa``) records, for each grounded yes/no answer,
its verdict, the margin of the model's first token and the passages it cited. This script
recomputes each verdict's confidence with :func:`kb_core.answers.verdicts.verdict_confidence`
(the cited lines read back from the set's documents), prints the figures and the risk-coverage
curve of the reports together, and draws the curve:

    python bench/verdict_replay.py bench/out/answers-pubmedqa-A/report.json [...] --plot docs/verdicts.png

Reports written before the confidence existed cannot be replayed (they lack the margin). The
margin recorded there is the model's alone (``verdict_confidence`` of a run with
``[rag] verdict_confidence = 0``, or of the code before agreement was added); a report of today's
code is replayed the same way, its agreement recomputed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import attrs

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kb_core.answers.verdicts import agrees
from kb_core.evaluation.verdicts import plot_curve, verdict_figures

DOCS = REPO.parent / "shared" / "datasets" / "pubmedqa-tune" / "docs"
NO_SHARE = 0.1  # [rag] verdict_no_share when the reports were made
FLOOR = 0.5  # [rag] verdict_confidence


@attrs.frozen
class Replayed:
    """One labelled result with its verdict confidence recomputed."""

    grounded: bool
    verdict: str | None
    verdict_right: bool | None
    verdict_confidence: float | None
    verdict_withheld: bool


def cited_lines(ref: str) -> str:
    """The text of a citation ``path#Lstart-Lend`` in the set's documents."""
    path, _, lines = ref.partition("#L")
    start, _, end = lines.partition("-L")
    return "\n".join((DOCS / path).read_text(encoding="utf-8").split("\n")[int(start) - 1 : int(end)])


def model_margin(result: dict) -> float | None:
    """The model's margin: the recorded confidence where agreement did not zero it, else from the answer."""
    return result["verdict_confidence"]


def replay(result: dict) -> Replayed:
    """``result`` with kb's confidence: the model's margin if the cited passages and the answer agree."""
    margin = model_margin(result)
    confidence = None
    if result["grounded"] and result["verdict"] in ("yes", "no") and margin is not None:
        evidence = [cited_lines(ref) for ref in result["cited"]]
        confidence = margin if agrees(result["verdict"], result["answer"], evidence) else 0.0
    withheld = result["verdict"] in ("yes", "no") and (confidence is None or confidence < FLOOR)
    return Replayed(result["grounded"], result["verdict"], result["verdict_right"], confidence, withheld)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--plot", type=Path, help="write the risk-coverage curve here (PNG)")
    args = parser.parse_args()
    results = [r for path in args.reports for r in json.loads(path.read_text(encoding="utf-8"))["results"]]
    model_only = verdict_figures(
        [attrs.evolve(replay(r), verdict_withheld=False, verdict_confidence=model_margin(r)) for r in results]
    )
    figures = verdict_figures([replay(r) for r in results])
    print(f"{len(results)} questions, {figures.labelled} with a yes/no/maybe label")
    print(f"  before: every grounded yes/no verdict stated: {model_only.stated} ({model_only.precision} right)")
    print(
        f"  after (confidence >= {FLOOR}): {figures.stated} stated, {figures.right} right "
        f"(precision {figures.precision}), coverage {figures.coverage}; {figures.withheld} withheld"
    )
    print("  threshold  stated  precision  coverage   (the model's margin alone: stated, precision)")
    for kb_point, model_point in zip(figures.curve, model_only.curve, strict=True):
        print(
            f"  {kb_point.threshold:9.2f}  {kb_point.stated:6}  {kb_point.precision!s:>9}  {kb_point.coverage!s:>8}"
            f"   ({model_point.stated}, {model_point.precision})"
        )
    if args.plot:
        print(f"plot: {plot_curve(figures, args.plot, 'PubMedQA tune: verdicts kb states')}")


if __name__ == "__main__":
    main()
