"""Golden sets of answer evaluation: JSONL, one question per line (see :mod:`kb_core.evaluation.answers`)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import attrs

from kb_core.errors import KbError
from kb_core.evaluation.numbers import SCALE_FACTORS

#: The verdicts a golden question may expect (``maybe`` is read as ``mixed``).
VERDICTS = ("yes", "no", "maybe", "mixed")

_DECIMAL = re.compile(r"-?\d+(?:\.\d+)?")


@attrs.frozen
class GoldenQuestion:
    """One golden question and what a right answer looks like."""

    id: str
    question: str
    answerable: bool
    expected_docs: tuple[str, ...] = ()
    must_contain: tuple[str, ...] = ()
    expected_verdict: str | None = None
    answer_number: float | None = None  # a number worked out from the documents (scored by kb_core.evaluation.numbers)
    scale: str = ""


def _strings(value: Any, field: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise KbError(f"{where}: {field} must be a list of strings")
    return tuple(value)


def json_object(line: str, where: str) -> dict[str, Any]:
    """The JSON object of one JSONL line; a KbError naming ``where`` when it is not one."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise KbError(f"{where} is not valid JSON: {exc.msg}", hint="each line must be one JSON object") from None
    if not isinstance(data, dict):
        raise KbError(f"{where} is not a JSON object")
    return data


def parse_golden_line(line: str, number: int, source: str = "golden set") -> GoldenQuestion:
    """One golden question from a JSONL line; KbError naming the line when it is malformed."""
    where = f"{source} line {number}"
    data = json_object(line, where)
    question = data.get("question")
    if not isinstance(question, str) or not question.strip():
        raise KbError(f"{where}: question must be a non-empty string")
    answerable = data.get("answerable")
    if not isinstance(answerable, bool):
        raise KbError(f"{where}: answerable must be true or false")
    qid = data.get("id", f"q{number}")
    verdict = data.get("expected_verdict")
    if verdict is not None and verdict not in VERDICTS:
        raise KbError(f"{where}: expected_verdict must be one of {', '.join(VERDICTS)}")
    gold_number, scale = _number(data, where)
    return GoldenQuestion(
        str(qid),
        question,
        answerable,
        _strings(data.get("expected_docs"), "expected_docs", where),
        _strings(data.get("must_contain"), "must_contain", where),
        "mixed" if verdict == "maybe" else verdict,
        gold_number,
        scale,
    )


def _number(data: dict[str, Any], where: str) -> tuple[float | None, str]:
    """The numeric gold ``answer`` (a number, or a numeric string beside a ``scale``) and its ``scale``."""
    answer, scale = data.get("answer"), data.get("scale", "")
    if isinstance(answer, str) and "scale" in data and _DECIMAL.fullmatch(answer.strip()):
        answer = float(answer)  # a count is written "2"
    if not isinstance(answer, int | float) or isinstance(answer, bool) or not math.isfinite(answer):
        return None, ""
    if scale not in SCALE_FACTORS:
        names = ", ".join(repr(s) for s in SCALE_FACTORS)
        raise KbError(f"{where}: scale must be one of {names}", hint="the scale of the numeric answer")
    return float(answer), scale


def load_golden(path: Path) -> list[GoldenQuestion]:
    """The questions of a golden JSONL file (blank lines skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")  # not splitlines(): U+2028 may sit inside a string
    except (OSError, UnicodeDecodeError) as exc:
        raise KbError(f"cannot read golden set {path}: {exc}") from None
    questions = [parse_golden_line(line, n, str(path)) for n, line in enumerate(lines, start=1) if line.strip()]
    if not questions:
        raise KbError(f"golden set {path} has no questions")
    return questions
