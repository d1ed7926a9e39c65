"""What a computed answer must compute, and where its operands must sit (issue 43, deliver 2).

The operation a question asks for (kb_core.answers.operations) and the row, period column and base of each
operand (kb_core.answers.operand_places), checked on their own and through the public checker.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core.answers.computation import Computation, ComputationRefusal, check_computation
from kb_core.answers.computed import Reply, computed
from kb_core.answers.numbers import ExpressionError, parse
from kb_core.answers.operand_places import names_no_row, operands_problem, rival_documents
from kb_core.answers.operations import asked_operations, operation_problem, performed_operation, unlike_terms
from kb_core.answers.question_terms import periods_of
from kb_core.answers.tables import stored_rows

TABLE = """Balance sheet
| 2019 | 2018 | 2017
Other assets | 18,111 | 9,521 | 8,004
Total other assets | 140,964 | 111,749 | 99,120
Net bookings | 6,388 | 7,262 | 3,366"""


@pytest.mark.parametrize(
    ("question", "operations"),
    [
        ("What was the percentage change in revenue from 2018 to 2019?", {"percent_change"}),
        ("What was the % change in revenue from 2018 to 2019?", {"percent_change"}),
        ("What is the percentage difference in the number of shares?", {"percent_change"}),
        ("What was the change in the percentage of revenue from cloud?", {"change"}),
        ("By how much did the margin change, in percentage points?", {"change"}),
        ("What was the percentage change in the average price paid per share?", {"average", "percent_change"}),
        ("What was the change in Other assets in 2019 from 2018?", {"change"}),
        ("What share of total assets were receivables?", {"ratio", "total"}),
        ("What was the average headcount over the three years?", {"average"}),
        ("How many years did the margin exceed 20%?", {"count"}),
        ("What is the name of the chief executive?", set()),
    ],
)
def test_the_operations_a_question_names(question: str, operations: set[str]) -> None:
    assert asked_operations(question) == operations


@pytest.mark.parametrize(
    ("expression", "operation"),
    [
        ("1,571.7 - 1,337.7", "change"),
        ("-(1,571.7 - 1,337.7)", "change"),
        ("(120 - 95) / 95 * 100", "percent_change"),
        ("100 * (120 - 95) / 95", "percent_change"),
        ("(120 / 95 - 1) * 100", "percent_change"),
        ("avg(12.4, 30.1)", "average"),
        ("(12.4 + 30.1) / 2", "average"),
        ("12.4 / 30.1 * 100", "ratio"),
        ("sum(1, 2, 3)", "total"),
        ("1 + 2", "total"),
        ("count(22.1 > 20, 19.0 > 20)", "count"),
        ("max(1, 2)", "extreme"),
        ("12.4", None),
    ],
)
def test_the_operation_an_expression_performs(expression: str, operation: str | None) -> None:
    assert performed_operation(parse(expression)) == operation


def test_a_percentage_given_for_a_change_is_refused_and_the_detail_says_what_to_write() -> None:
    problem = operation_problem("What was the change in revenue from 2018 to 2019?", parse("(2 - 1) / 1 * 100"))
    assert problem == "the question asks for a change, new - old, but the computation is a percentage change"
    assert operation_problem("What was the change in revenue from 2018 to 2019?", parse("2 - 1")) is None
    assert operation_problem("What was the change in total revenue?", parse("2 - 1")) is None  # a row's "total"
    assert operation_problem("What was the total revenue in 2018 and 2019?", parse("sum(1, 2)")) is None


@pytest.mark.parametrize(
    ("text", "periods"),
    [
        ("from 2018 to 2019", [2018, 2019]),
        ("for the years F19 and F18", [2019, 2018]),
        ("in FY2019 compared with FY 2018", [2019, 2018]),
        ("fiscal year 2017", [2017]),
        ("the 2019 $'000 column", [2019]),
        ("12,019 units and 3.2019 and F400", []),
    ],
)
def test_periods_as_questions_and_headings_write_them(text: str, periods: list[int]) -> None:
    assert periods_of(text) == periods


def _problem(question: str, expression: str, table: str = TABLE) -> str | None:
    done = check_computation(expression, {1: table}, question=question)
    assert isinstance(done, Computation), done
    assert done.tree is not None
    return operands_problem(done, done.tree, {1: table}, question)


def test_the_row_the_question_names_and_not_a_row_that_only_contains_its_words() -> None:
    question = "What was the change in Other assets in 2019 from 2018?"
    assert _problem(question, "18,111 - 9,521") is None
    assert "140,964 is in no row" in (_problem(question, "140,964 - 111,749") or "")
    assert _problem("What was the change in total other assets in 2019 from 2018?", "140,964 - 111,749") is None


def test_every_named_period_is_used_and_a_percentage_change_divides_by_the_earliest() -> None:
    question = "What was the percentage change in net bookings between 2018 and 2019?"
    assert _problem(question, "(6,388 - 7,262) / 7,262 * 100") is None
    assert "relative to 2018" in (_problem(question, "(6,388 - 7,262) / 6,388 * 100") or "")
    assert "3,366 is in no row" in (_problem(question, "(6,388 - 3,366) / 3,366 * 100") or "")
    same_year = "What was the average of other assets for 2018 and 2019?"
    assert "no operand is from its column" in (_problem(same_year, "avg(9,521, 9,521)") or "")
    assert "averages 2 periods" in (_problem(same_year, "avg(18,111, 9,521, 9,521)") or "")
    assert _problem("What was the average of other assets from 2017 to 2019?", "avg(18,111, 9,521, 8,004)") is None


@given(st.text(max_size=200), st.sampled_from(["1 - 2", "(1 - 2) / 2 * 100", "avg(1, 2)", "count(1 > 2)", "1"]))
def test_any_question_gets_an_answer_or_a_detail_never_an_exception(question: str, expression: str) -> None:
    try:
        tree = parse(expression)
    except ExpressionError:  # pragma: no cover - the expressions above all parse
        raise
    problem = operation_problem(question, tree)
    assert problem is None or problem.startswith("the question asks for")
    assert all(1900 <= year <= 2099 for year in periods_of(question))


def test_a_row_another_document_also_has_makes_the_question_ambiguous() -> None:
    other = "Other report\n| 2019 | 2018\nOther assets | 5,000 | 4,000"
    passages, documents = {1: TABLE, 2: other}, {1: "a.pdf", 2: "b.pdf"}
    question = "What was the change in Other assets in 2019 from 2018?"
    done = check_computation("18,111 - 9,521", passages, question=question)
    assert isinstance(done, Computation)
    assert rival_documents(done, passages, documents, question) == ["b.pdf"]
    assert rival_documents(done, passages, {1: "a.pdf", 2: "a.pdf"}, question) == []  # the same report
    elsewhere = {1: TABLE, 2: "Other report\n| 2017 | 2016\nOther assets | 5,000 | 4,000"}
    assert rival_documents(done, elsewhere, documents, question) == []  # not for the periods asked


def test_a_table_with_a_row_per_period_is_read_by_its_columns_heading() -> None:
    leases = "Maturities\n| Operating leases | Finance leases\n2021 | 138 | 6\n2022 | 135 | 7"
    question = "What was the change in operating leases between 2021 and 2022?"
    assert _problem(question, "135 - 138", leases) is None
    assert "7 is in no row" in (_problem(question, "7 - 6", leases) or "")  # the finance leases column


def test_the_numbers_of_a_change_between_periods_are_one_row() -> None:
    """Two rows the question's words fit alike ("owed by" and "owed to"): a change takes both years from one."""
    owed = "Peel\n| 2019 | 2018\nAmounts owed by members of Peel | 0.3 | 0.5\n"
    owed += "Amounts owed to members of Peel | (0.1) | (0.2)"
    question = "What is the percentage change in the amounts owed to members of Peel from 2018 to 2019?"
    assert _problem(question, "(0.3 - 0.5) / 0.5 * 100", owed) is None  # one row: kb cannot tell "by" from "to"
    assert "different rows" in (_problem(question, "(0.3 - 0.2) / 0.2 * 100", owed) or "")
    assert "different rows" in (_problem(question, "0.1 - 0.5", owed) or "")
    leases = "Maturities\n| Operating leases | Finance leases\n2021 | 138 | 6\n2022 | 135 | 7"
    assert _problem("What was the change in operating leases between 2021 and 2022?", "135 - 138", leases) is None


def test_a_total_of_rows_needs_no_row_called_total() -> None:
    deferred = "Deferred revenue\n| 2019\nCurrent deferred revenue | 4,483\nNon-current deferred revenue | 3,444"
    assert _problem("What is the total deferred revenue in 2019?", "4,483 + 3,444", deferred) is None


def test_a_column_kb_cannot_tell_is_a_period_the_question_names_is_refused() -> None:
    headed = "Interest\n(Dollars in millions) | 2019 | Change | 2018\nInterest expense | $2,082 | 3% | $2,025"
    question = "What was the difference in interest expense in 2019 and 2018?"
    assert _problem(question, "2,082 - 2,025", headed) is None  # a heading of words and periods
    unheaded = "Interest\n| December 31, | December 31,\nInterest expense | $2,082 | $2,025"
    assert "2,082 is in no row" in (_problem(question, "2,082 - 2,025", unheaded) or "")


def test_a_question_that_names_no_row_in_particular() -> None:
    assert names_no_row("What was the percentage change in the total between 2018 and 2019?")
    assert not names_no_row("What was the percentage change in total revenue between 2018 and 2019?")


def test_a_sum_or_difference_of_a_percent_and_a_plain_number_is_refused() -> None:
    assert unlike_terms(parse("13.1 - 77%"), [False, True]) is not None
    assert unlike_terms(parse("avg(13.1, 77%)"), [False, True]) is not None
    assert unlike_terms(parse("(4% - 3%) / 3% * 100"), [True, True, True, None]) is None
    assert unlike_terms(parse("12.4 / 77% * 100"), [False, True, None]) is None  # a ratio may mix them


def test_a_header_without_its_label_cell_heads_the_value_columns_from_the_right() -> None:
    """PDF text often gives a table's header as ``2019 | 2018 | 2017`` over ``United States | 933 | 784 | 575``:
    the years head the value columns, not the label's, so 933 is 2019's and 784 is 2018's."""
    assets = "Long-lived assets\n2019 | 2018 | 2017\n| (in thousands) | |\nUnited States | $933 | $784 | $575\n"
    assets += "Europe | 72 | 73 | 77"
    question = "What is the percentage change in the long-lived assets in United States from 2018 to 2019?"
    reply = Reply("(933 - 784) / 784 * 100", (1,))
    done = computed(reply, {1: assets}, question, {1: "a.pdf"})
    assert isinstance(done, tuple) and done[0].result.startswith("19.0"), done
    shifted = computed(Reply("(784 - 575) / 575 * 100", (1,)), {1: assets}, question, {1: "a.pdf"})
    assert isinstance(shifted, ComputationRefusal) and shifted.reason == "operand_off_question", shifted
    assert stored_rows("2019 | 2018\n% | %\nSales | 5 | 4").splitlines()[:2] == [" | 2019 | 2018", " | % | %"]
    assert stored_rows("Segment | Revenue\nSales | 5 | 4") == "Segment | Revenue\nSales | 5 | 4"  # a label's cell


GAPPED = """9.2. Trade and other receivables
| 2019 | | 2018
Notes | $'000 | $'000
Current | | |
Trade receivables | | 3,770 | 3,054
Receivables from related parties | 17 | 11,880 | 8,039"""


@pytest.mark.parametrize(
    ("question", "expression", "refusal"),
    [
        ("What is the change in Trade receivables from 2018 to 2019?", "3,770 - 3,054", None),
        ("What is the change in Trade receivables from 2018 to 2019?", "11,880 - 8,039", "operand_off_question"),
        (
            "What were the trade receivables and receivables from related parties in 2019 in total?",
            "3,770 + 11,880",
            None,
        ),
        (
            "What were the trade receivables and receivables from related parties in 2019 in total?",
            "3,054 + 8,039",
            "operand_off_question",
        ),
    ],
)
def test_periods_a_pdf_set_apart_head_the_value_columns_they_stand_over(
    question: str, expression: str, refusal: str | None
) -> None:
    """PDF text may put an empty cell between a header's years (``| 2019 | | 2018``) that the rows do not have
    (``Trade receivables | | 3,770 | 3,054``, the notes column empty): the years then head the last two columns.
    2018's numbers are not 2019's, and a row of another name is still off the question."""
    done = computed(Reply(expression, (1,)), {1: GAPPED}, question, {1: "a.pdf"})
    if refusal is None:
        assert isinstance(done, tuple), done
    else:
        assert isinstance(done, ComputationRefusal) and done.reason == refusal, done


@pytest.mark.parametrize(
    "table",
    [
        # each year over a value and a share
        " | 2019 | | 2018 | \nOther income | | | 90 | 4%\nSales | 100 | 5% | 90 | 4%",
        " | 2019 | | 2018\nTrade receivables | | 3,770 | 3,054\nOther | 12 | | 9",  # 12 is 2019's
        " | Revenue | | Costs\nSales | | 5 | 4",  # no years
    ],
)
def test_a_header_whose_columns_the_rows_fill_is_left_where_it_is(table: str) -> None:
    assert stored_rows(table).splitlines()[0] == table.splitlines()[0]


WRAPPED = (
    "The Company recognized $2.3 million, $2.1 million and $1.9 million of stock-based compensation\n"
    "expense for the years ended March 31, 2019, 2018 and 2017, respectively, as follows:\n"
    "Stock-based compensation expense in the years ended March 31, 2019, 2018 and 2017 included\n"
    "$211,000, $207,000 and $150,000, respectively, related to the purchase plan."
)


@pytest.mark.parametrize(
    ("expression", "accepted"),
    [
        ("2.3 - 2.1", True),  # 2019's and 2018's, paired by "respectively" on the wrapped line below
        ("2.3 - 1.9", False),  # 1.9 is 2017's
        ("sum(2.3, 2.1, 1.9)", False),
        ("211,000 - 207,000", False),  # its line holds none of the question's words (its sentence is checked
        # for pairing only: a long sentence holds any question's words)
        ("(211,000 - 150,000)", False),
    ],
)
def test_respectively_pairs_numbers_with_periods_across_wrapped_lines(expression: str, accepted: bool) -> None:
    """A PDF's prose wraps one sentence over several lines; a date's day ("March 31") is no number it pairs."""
    question = "What was the change in stock-based compensation expense from 2018 to 2019?"
    if expression.startswith("sum"):
        question = "What was the total stock-based compensation expense in 2019?"
    done = computed(Reply(expression, (1,)), {1: WRAPPED}, question, {1: "a.pdf"})
    assert isinstance(done, tuple) is accepted, done
