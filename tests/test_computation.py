"""The computation checker (kb_core.answers.computation, kb_core.answers.numbers): numbers as reports write them,
the expression language, every operand checked, refusals with their reason, and never an exception."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kb_core.answers.computation import (
    Computation,
    ComputationRefusal,
    asks_for_computation,
    check_computation,
    format_working,
)
from kb_core.answers.numbers import format_number, read_numbers

TABLE = "Revenue | 1,571.7 | 1,337.7\nOther | (1,234) | 567\nMargin | 22.1% | 18.0%\nNorth America | $ 6,444 | 4,802"


def checked(expression: str, passages: dict[int, str] | None = None, question: str = "") -> Computation:
    done = check_computation(expression, passages if passages is not None else {1: TABLE}, question=question)
    assert isinstance(done, Computation), done
    return done


def refused(expression: str, passages: dict[int, str] | None = None) -> ComputationRefusal:
    done = check_computation(expression, passages if passages is not None else {1: TABLE})
    assert isinstance(done, ComputationRefusal), done
    return done


# Reading numbers.


@pytest.mark.parametrize(
    ("text", "value", "percent"),
    [
        ("1,571.7", Fraction(15717, 10), False),
        ("(1,234)", Fraction(-1234), False),
        ("(12.5)%", Fraction(-25, 2), True),
        ("(12.5%)", Fraction(-25, 2), True),
        ("-3.5", Fraction(-7, 2), False),
        ("−3.5", Fraction(-7, 2), False),
        ("– 3.5", Fraction(-7, 2), False),
        ("$ 1,452.4", Fraction(14524, 10), False),
        ("€12", Fraction(12), False),
        ("-£3", Fraction(-3), False),
        ("¥-4", Fraction(-4), False),
        ("($12)", Fraction(-12), False),
        ("12.5 %", Fraction(25, 2), True),
        ("12 percent", Fraction(12), True),
        ("2018", Fraction(2018), False),
        (".5", Fraction(1, 2), False),
    ],
)
def test_read_numbers_reads_each_form_reports_write(text: str, value: Fraction, percent: bool) -> None:
    [number] = read_numbers(f"was {text} in")
    assert (number.text, number.value, number.percent) == (text, value, percent)


def test_read_numbers_records_place_decimals_and_scale() -> None:
    text = "Sales (in millions)\nFixed Price | $  1,452.4 million | 3bn\nup 4.25 thousand"
    numbers = read_numbers(text)
    assert [text[n.start : n.end] for n in numbers] == [n.text for n in numbers]
    assert [(n.digits, n.line, n.decimals, n.scale, n.currency) for n in numbers] == [
        ("1,452.4", 2, 1, "million", "$"),
        ("3", 2, 0, "billion", ""),
        ("4.25", 3, 2, "thousand", ""),
    ]
    assert numbers[0].value == Fraction(14524, 10)  # the scale word is recorded, not multiplied


def test_read_numbers_leaves_ranges_words_and_huge_numbers_alone() -> None:
    assert [n.value for n in read_numbers("2018–2019 and 12%-15%")] == [2018, 2019, 12, 15]
    assert [n.value for n in read_numbers("FY2019 Q4 COVID-19")] == [19]
    assert read_numbers("id " + "9" * 31) == []  # more digits than a report writes
    assert [n.value for n in read_numbers("1 571,7")] == [1, 571, 7]  # English reports only


# Checking computations.


def test_a_difference_is_worked_out_with_operands_as_written() -> None:
    done = checked("1571.7 - 1,337.7")
    assert done.result == Fraction(234)
    assert format_working(done) == "234.0 (1,571.7 - 1,337.7)"
    assert [(o.literal, o.source, o.passage, o.line) for o in done.operands] == [
        ("1571.7", "passage", 1, 1),
        ("1,337.7", "passage", 1, 1),
    ]


def test_a_percentage_change_is_rounded_to_two_decimals_and_is_a_percent() -> None:
    done = checked("(1,571.7 - 1,337.7) / 1,337.7 * 100")
    assert done.result == Fraction(2340, 13377) * 100
    assert (done.result_text(), done.percent) == ("17.49%", True)
    assert done.operands[-1].source == "constant"


def test_signs_are_matched_by_magnitude_and_a_bracketed_number_is_a_negative() -> None:
    assert checked("(1,234) - 567").result == -1801
    assert checked("-1234 - 567").result == -1801
    assert checked("1234 + 567").result == 1801
    assert format_working(checked("(1,234) - 567")) == "-1,801 ((1,234) - 567)"
    assert checked("(-1,234) - 567").result == -1801  # a signed number in brackets is grouped


def test_percents_and_question_numbers_and_passages_are_cited() -> None:
    assert checked("22.1 - 18.0%").result_text() == "4.1%"
    done = checked("count(22.1% > 20, 18.0% > 20)", question="In how many years did the margin exceed 20%?")
    assert done.result == 1 and done.result_text() == "1"
    assert [o.source for o in done.operands] == ["passage", "question", "passage", "question"]
    two = checked("1571.7 + 99", {3: "a\nb 99", 5: "1,571.7"})
    assert [(o.passage, o.line) for o in two.operands] == [(5, 1), (3, 2)]


def test_functions_and_averages_written_out() -> None:
    assert checked("avg(6,444, 4,802)").result == 5623
    assert checked("average($6,444, 4,802)").result == 5623
    assert checked("(6,444 + 4,802) / 2").result == 5623
    assert checked("((1,571.7 - 1,337.7) + (6,444 - 4,802)) / 2").result == Fraction(938)
    assert checked("sum(1,571.7, 1,337.7)").result == Fraction(29094, 10)
    assert checked("max(567, 1,234) - min(567, 1,234)").result == 667
    assert checked("abs((1,234))").result == 1234
    assert checked("count(1,571.7, 1,337.7, 567)").result == 3
    assert checked("[1,571.7 - 1,337.7] / 1,337.7 - 1").result == Fraction(2340, 13377) - 1


@pytest.mark.parametrize(
    ("expression", "reason", "in_detail"),
    [
        ("1,571.7 - 1,300", "operand_not_found", "1,300"),
        ("(6,444 + 4,802) / 3", "operand_not_found", "3"),  # an average of two divided by three
        ("1/0", "division_by_zero", ""),
        ("567 / (567 - 567)", "division_by_zero", ""),
        ("(", "expression_unparsed", ""),
        ("", "expression_unparsed", "empty"),
        ("__import__('os')", "expression_unparsed", ""),
        ("2**9999999", "expression_unparsed", ""),
        ("567 > 20", "expression_unparsed", "count"),
        ("sqrt(567)", "expression_unparsed", "sqrt"),
        ("(" * 25 + "567" + ")" * 25, "too_large", "nested"),
        ("-" * 25 + "567", "too_large", "nested"),
        (" + ".join(["567"] * 150), "too_large", "tokens"),
        ("1" * 31, "too_large", "digits"),
        ("567" + " " * 3000, "too_large", "characters"),
        ("100", "no_operands", ""),
        ("(1 + 100) * 0", "no_operands", ""),
        ("567 + 20", "operand_not_found", "20"),
    ],
)
def test_refusals_have_their_reason(expression: str, reason: str, in_detail: str) -> None:
    refusal = refused(expression)
    assert refusal.reason == reason and in_detail in refusal.detail and "\n" not in refusal.detail


def test_result_text_rounds_half_away_from_zero_with_units() -> None:
    assert format_number(Fraction(-5, 2), 0) == "-3" and format_number(Fraction(1234567, 1), 0) == "1,234,567"
    assert format_number(Fraction(-1, 1000), 2) == "0.00"
    done = checked("1,571.7 + 1,337.7")
    assert done.result_text("$", "million") == "$2,909.4 million"
    assert checked("567 - 1,571.7").result_text("$") == "-$1,004.7"
    assert checked("567 / 1,234").result_text() == "0.46"  # a ratio: at least two decimals
    assert checked("1,571.7 / 567 / 1,234").decimals == 2
    assert checked("1.23456 / 7", {1: "1.23456 and 7"}).result_text() == "0.1764"  # at most four decimals


def test_asks_for_computation_on_wording_of_each_kind() -> None:
    for question in [
        "By how much did revenue change from 2018 to 2019?",
        "What was the percentage change in operating income?",
        "What share of total assets were receivables?",
        "What was the average headcount over the three years?",
        "In how many years did the margin exceed 20%?",
        "What is the ratio of debt to equity in 2019?",
    ]:
        assert asks_for_computation(question), question
    for question in [
        "What was the revenue in 2019?",
        "Why did revenue increase in 2019?",
        "Does exercise increase bone density?",
        "In which year was the change in revenue larger?",
        "What were the sales in 2018 and 2019 respectively?",
        "who played the lead in the film",
    ]:
        assert not asks_for_computation(question), question


# Properties.

STYLES = ["plain", "thousands", "parenthesised", "minus", "unicode_minus", "currency", "percent", "paren_percent"]
magnitudes = st.builds(lambda n, d: Fraction(n, 10**d), st.integers(0, 10**12), st.integers(0, 4))


def written(magnitude: Fraction, decimals: int, style: str) -> tuple[str, Fraction]:
    """``magnitude`` as a report writes it in ``style``, and the value that text means."""
    grouped = format_number(magnitude, decimals)
    bare = grouped.replace(",", "")
    return {
        "plain": (bare, magnitude),
        "thousands": (grouped, magnitude),
        "parenthesised": (f"({grouped})", -magnitude),
        "minus": (f"-{grouped}", -magnitude),
        "unicode_minus": (f"−{bare}", -magnitude),
        "currency": (f"$ {grouped} million", magnitude),
        "percent": (f"{bare}%", magnitude),
        "paren_percent": (f"({grouped})%", -magnitude),
    }[style]


@given(st.integers(0, 10**12), st.integers(0, 4), st.sampled_from(STYLES))
def test_every_written_form_reads_back(units: int, decimals: int, style: str) -> None:
    magnitude = Fraction(units, 10**decimals)
    text, value = written(magnitude, decimals, style)
    [number] = read_numbers(f"In 2019 | {text} | of it.")[1:]
    assert (number.text, number.value, number.decimals) == (text, value, decimals)
    assert number.percent == style.endswith("percent")


@given(st.integers(1, 10**12), st.integers(0, 4), st.sampled_from(STYLES), st.sampled_from(STYLES))
def test_an_operand_copied_in_any_form_matches_the_passage(units: int, decimals: int, style: str, copied: str) -> None:
    magnitude = Fraction(units, 10**decimals)
    assume(magnitude not in (1, 100))  # a constant of a formula, not an operand
    passage_text, _ = written(magnitude, decimals, style)
    expression, value = written(magnitude, decimals, copied)
    if copied in ("minus", "unicode_minus"):
        value = -magnitude  # a unary minus, the expression's own
    done = checked(expression, {1: f"Sales | {passage_text}"})
    assert done.result == value and done.operands[0].passage == 1


@settings(max_examples=300)
@given(st.text(max_size=300))
def test_any_text_is_a_computation_or_a_refusal(expression: str) -> None:
    done = check_computation(expression, {1: TABLE, 2: expression})
    assert isinstance(done, Computation | ComputationRefusal)


TOKENS = ["567", "1,234", "(1,234)", "12.5%", "$6,444", "0", "2", "100", " ", "(", ")", "[", "]", ",", "+", "-"]
TOKENS += ["*", "/", "sum(", "avg(", "count(", "abs(", "min(", "max(", ">", "<=", "%", "$", "million", "−", "e"]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(TOKENS), max_size=80))
def test_any_string_of_the_language_is_a_computation_or_a_refusal(parts: list[str]) -> None:
    expression = "".join(parts)
    done = check_computation(expression, {1: "567 1,234 12.5% 6,444 0 2"})
    assert isinstance(done, Computation | ComputationRefusal)
    if isinstance(done, Computation):
        assert done.result_text() and format_working(done)


@st.composite
def trees(draw: st.DrawFn, depth: int = 0) -> tuple[str, Fraction | None]:
    """(an expression, its value computed here independently, None for a division by zero)."""
    if depth >= 4 or draw(st.booleans()):
        value = draw(magnitudes)
        return format_number(value, 4), value
    op = draw(st.sampled_from("+-*/"))
    (left, a), (right, b) = draw(trees(depth + 1)), draw(trees(depth + 1))
    if a is None or b is None or (op == "/" and b == 0):
        return f"({left} {op} {right})", None
    value = a + b if op == "+" else a - b if op == "-" else a * b if op == "*" else a / b
    return f"({left} {op} {right})", value


@given(trees())
def test_a_result_recomputed_independently_matches(tree: tuple[str, Fraction | None]) -> None:
    expression, value = tree
    done = check_computation(expression, {1: expression})  # every operand is in the passage
    if value is None:
        assert isinstance(done, ComputationRefusal) and done.reason == "division_by_zero"
    elif isinstance(done, ComputationRefusal):
        assert done.reason in ("too_large", "no_operands")
    else:
        assert done.result == value
