"""Whether two answer reports (``kb eval answers`` / ``bench/answers.py``) hold the same answers, question by question.

``kb eval compare`` compares the metrics; this compares what each question got: the text, grounded or
the refusal and its detail, the citations, the verdict and the answer check's P(Yes). A change that
should not move answers (a refactor, a faster path) must print ``0 differ``.

    python bench/same_answers.py bench/out/answers-clapnq-before/report.json bench/out/answers-clapnq-after/report.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FIELDS = (
    "answer",
    "grounded",
    "refusal_reason",
    "refusal_detail",
    "cited",
    "verdict",
    "verdict_withheld",
    "answer_check",
)


def differences(baseline: Path, candidate: Path) -> tuple[int, list[str]]:
    """How many questions the baseline holds, and one line per question whose answer differs."""
    before = {r["id"]: r for r in json.loads(baseline.read_text(encoding="utf-8"))["results"]}
    after = {r["id"]: r for r in json.loads(candidate.read_text(encoding="utf-8"))["results"]}
    lines = []
    for qid, old in before.items():
        new = after.get(qid)
        if new is None:
            lines.append(f"{qid}: missing from the candidate")
            continue
        changed = [f for f in FIELDS if old.get(f) != new.get(f)]
        if changed:
            field = changed[0]
            lines.append(f"{qid}: {', '.join(changed)} ({old.get(field)!r:.80} -> {new.get(field)!r:.80})")
    return len(before), lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline", type=Path)
    parser.add_argument("candidate", type=Path)
    args = parser.parse_args()
    total, lines = differences(args.baseline, args.candidate)
    for line in lines:
        print(line)
    print(f"{total} questions, {len(lines)} differ (compared: {', '.join(FIELDS)})")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
