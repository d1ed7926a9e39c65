"""Scoring of computed-number answers (issue 43): the numbers an answer writes, the gold, the report."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core.errors import KbError
from kb_core.evaluation.answers import score_answer, summarize
from kb_core.evaluation.golden import GoldenQuestion, parse_golden_line
from kb_core.evaluation.numbers import SCALE_FACTORS, numbers_in, states_number
from kb_core.output import schema
from kb_core.types import Answer as KbAnswer
from kb_core.types import AnswerCitation, Citation, PackedChunk, RetrievalSummary, TokenUsage, to_json

# -- reading numbers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Revenue rose by 234.0 (1,571.7 - 1,337.7) [#1]", (234.0, 1571.7, 1337.7)),
        ("The loss was $(1,234) [#2].", (1234.0,)),
        ("It fell by 22.22% [#1]", (22.22,)),
        ("about 1.2 million units", (1.2, 1_200_000.0)),
        ("$118 million + $169 million", (118.0, 118e6, 169.0, 169e6)),
        ("cited [#12] and [# 3] only", ()),
        ("FY2019 v1.2", ()),
    ],
)
def test_numbers_read_as_reports_write_them(text: str, expected: tuple[float, ...]) -> None:
    assert numbers_in(text) == expected


@given(st.text())
def test_any_answer_text_is_read_without_error(text: str) -> None:
    found = numbers_in(text)
    assert all(math.isfinite(v) and v >= 0 for v in found)
    for scale in SCALE_FACTORS:
        assert isinstance(states_number(text, 1.5, scale), bool)


@given(
    st.decimals(min_value=-(10**9), max_value=10**9, places=2, allow_nan=False, allow_infinity=False),
    st.sampled_from(["{:,}", "${:,}", "({:,})", "{:,}%", "-{}", "{} [#1]", "[#3]{}"]),
)
def test_a_number_written_in_any_form_states_itself(value: object, form: str) -> None:
    number = abs(float(str(value)))
    assert states_number(f"The answer is {form.format(value)}.", number)


@given(st.floats(allow_nan=True, allow_infinity=True), st.text(), st.sampled_from(sorted(SCALE_FACTORS)))
def test_any_gold_and_text_never_raise(gold: float, text: str, scale: str) -> None:
    assert isinstance(states_number(text, gold, scale), bool)


# -- stating the gold -------------------------------------------------------------------------------------


def test_the_issues_wrong_numbers_are_not_the_gold() -> None:
    assert not states_number("The average revenue ... in 2018 and 2019 is $6,444 thousand [#1]", 5623, "thousand")
    assert not states_number("The percentage change ... was 30.0% [#1]", 0.5, "percent")


def test_working_shown_states_the_result() -> None:
    assert states_number("2,123 - 2,064 = 59 [#1]", 59, "")
    assert states_number("$118 million + $169 million + $60 million = $347 million [#1]", 347, "million")


def test_tolerance_sign_and_scale() -> None:
    assert states_number("fell by 12.6 [#1]", -12.6, "million")  # the sign is not required
    assert states_number("22.2% [#1]", -22.22, "percent")  # within 0.5 %
    assert not states_number("22.0% [#1]", -22.22, "percent")
    assert states_number("0.01", 0.004, "")  # at least 0.01
    assert not states_number("0.02", 0.004, "")
    assert states_number("$12,600,000", 12.6, "million")  # the gold times its scale's factor
    assert states_number("a share of 0.2222", 22.22, "percent")
    assert states_number("12.6 million", 12_600_000, "")  # "12.6 million" also read multiplied out


# -- golden rows ------------------------------------------------------------------------------------------


def test_golden_row_with_a_numeric_answer() -> None:
    row = {"question": "q?", "answerable": True, "expected_docs": ["001.pdf"], "answer": -12.6, "scale": "million"}
    q = parse_golden_line(json.dumps(row), 1)
    assert (q.answer_number, q.scale) == (-12.6, "million")
    count = parse_golden_line(json.dumps(row | {"answer": "2", "scale": ""}), 2)  # TAT-QA writes counts as strings
    assert (count.answer_number, count.scale) == (2.0, "")
    span = parse_golden_line(json.dumps(row | {"answer": "revenue"}), 3)
    assert span.answer_number is None
    with pytest.raises(KbError, match="line 4: scale must be one of"):
        parse_golden_line(json.dumps(row | {"scale": "dozens"}), 4)


# -- scoring answers --------------------------------------------------------------------------------------


def _answer(text: str, grounded: bool, path: str = "001.pdf", packed: str = "001.pdf") -> KbAnswer:
    cite = Citation(path, 1, 4)
    return KbAnswer(
        answer_id="a1",
        question="q?",
        answer=text,
        grounded=grounded,
        refusal_reason=None if grounded else "unsupported",
        citations=(AnswerCitation(1, "c1", str(cite), cite, 0.9),) if grounded else (),
        candidates=(),
        invalid_markers=(),
        model=None,
        embedding=None,
        prompt_template_version="v",
        constrained=False,
        finish_reason="stop",
        retrieval=RetrievalSummary("t", "hybrid", 5, 0.0, 0.9, 1, 1, 1.0),
        usage=TokenUsage(latency_ms=10.0),
        created_at="now",
        packed=(PackedChunk(1, "c1", f"{packed}#L1-L4", 0.9, 10, False, "text"),),
    )


GOLD = GoldenQuestion("n1", "What is the change?", True, ("001.pdf",), (), None, -12.6, "million")


def test_right_wrong_and_refused_numbers_scored_and_summarised() -> None:
    right = score_answer(GOLD, _answer("It fell by 12.6 million [#1].", True))
    wrong = score_answer(GOLD, _answer("It fell by 30.0 million [#1].", True))
    other_doc = score_answer(GOLD, _answer("It fell by 12.6 million [#1].", True, "002.pdf", "002.pdf"))
    refused = score_answer(GOLD, _answer("", False))
    assert (right.number_right, right.wrong_number, right.correct, right.expected_packed) == (True, False, True, True)
    assert (wrong.number_right, wrong.wrong_number, wrong.correct) == (False, True, False)
    assert (other_doc.number_right, other_doc.wrong_number, other_doc.expected_packed) == (False, False, False)
    assert (refused.number_right, refused.wrong_number) == (False, False)
    span = GoldenQuestion("s1", "Which?", True, ("001.pdf",), ("12.6",))
    plain = score_answer(span, _answer("12.6 [#1]", True))
    assert (plain.number_right, plain.wrong_number, plain.correct) == (None, None, True)
    metrics = summarize([GOLD, GOLD, GOLD, GOLD, span], [right, wrong, other_doc, refused, plain])
    assert (metrics.number_right_rate, metrics.grounded_wrong_number_rate) == (0.25, 0.25)
    assert metrics.rates()["number_right_rate"] == 0.25


def test_report_with_number_rows_matches_the_schema() -> None:
    right = score_answer(GOLD, _answer("It fell by 12.6 million [#1].", True))
    metrics = summarize([GOLD], [right])
    properties = schema("answer_report.v1")["properties"]
    jsonschema.validate(to_json(right), properties["results"]["items"])
    jsonschema.validate(to_json(metrics), properties["metrics"])
