"""Replay the answer check's threshold over conversation reports, without the model.

A conversation report (``bench/conversations.py``, ``kb eval conversations``) records, for each
answer the answer check judged, its P(Yes) (``answer_check``) and whether its citations name a
relevant passage. An answer the check withdrew keeps the passages it cited, so the threshold can be
moved either way: at threshold ``t`` an answer is grounded when it passed every other check and
its P(Yes) is at least ``t``. Prints, per threshold, answerable turns grounded with a relevant
passage and unanswerable turns refused, over all the reports given together:

    python bench/answer_check_replay.py bench/out/conversations-conv-o2/report.json [...]

Answers refused before the check (the score gate, an unsupported claim, the model's own refusal)
stay refused at every threshold; reports without ``answer_check`` cannot be replayed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

THRESHOLDS = (0.0, 0.5, 0.55, 0.6, 0.62, 0.65, 0.7, 0.75, 0.8)


def replay(results: list[dict], threshold: float) -> tuple[int, int, int, int]:
    """(answerable right, answerable asked, unanswerable refused, unanswerable asked) at ``threshold``."""
    right = asked = refused = unanswerable = 0
    for r in results:
        if r.get("answer_id") is None or r.get("answerable") is None:
            continue
        judged = r.get("answer_check")  # set only for answers that passed every other check
        grounded = judged >= threshold if judged is not None else bool(r["grounded"])
        if r["answerable"]:
            asked += 1
            right += int(grounded and bool(r["cited_relevant"]))
        else:
            unanswerable += 1
            refused += int(not grounded)
    return right, asked, refused, unanswerable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", type=Path)
    args = parser.parse_args()
    results = [r for path in args.reports for r in json.loads(path.read_text(encoding="utf-8"))["results"]]
    if not any("answer_check" in r for r in results):
        raise SystemExit("these reports carry no answer_check: run them again with today's kb")
    print("threshold  answerable right      unanswerable refused")
    for t in THRESHOLDS:
        right, asked, refused, unanswerable = replay(results, t)
        print(
            f"{t:9.2f}  {right:>4} / {asked:<4} {right / max(asked, 1):.3f}"
            f"   {refused:>4} / {unanswerable:<4} {refused / max(unanswerable, 1):.3f}"
        )


if __name__ == "__main__":
    main()
