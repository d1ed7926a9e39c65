"""An answer in words to a question kb would compute: kept only when the passages state that number for what is
asked (kb_core.answers.stated)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core.answers.stated import can_be_stated, stated_answer, states_operation

REPORT = {
    1: "Interest income increased $16.9 million, to $30.2 million, in 2019.",
    2: "Percent Change\n| 2019 | 2018 | Change\nInterest expense | $2,082 | $2,025 | 3%\nRevenue | 5,000 | 4,000 | 25%",
    3: "Emissions\nScope 1 | 87,128\nScope 2 | 11,597\nTotal gross emissions (Scope 1 and 2) | 98,725",
}


@pytest.mark.parametrize(
    ("answer", "question", "kept"),
    [
        ("It rose by $16.9 million [#1].", "What was the increase in interest income in 2019?", True),
        ("It was $30.2 million [#1].", "What was the increase in interest income in 2019?", True),  # same line
        ("Interest expense changed by 3% [#2].", "What was the percentage change in interest expense?", True),
        ("Interest expense was $2,082 [#2].", "What was the change in interest expense from 2018 to 2019?", False),
        ("Total gross emissions were 98,725 [#3].", "What is the total gross emissions for FY18?", True),
        ("Scope 1 was 87,128 [#3].", "What was the average of scope 1 emissions?", False),  # no average stated
        ("The change was 4,000 [#2].", "What was the change in the total between 2018 and 2019?", False),  # no row
        ("It was 7 [#1].", "What was the increase in interest income in 2019?", False),  # in no passage
        ("Interest income increased [#1].", "What was the increase in interest income in 2019?", False),  # no number
    ],
)
def test_an_answer_is_kept_when_a_passage_states_its_number_for_what_is_asked(
    answer: str, question: str, kept: bool
) -> None:
    assert stated_answer(answer, question, REPORT) is kept


def test_a_question_that_names_no_operation_takes_any_line() -> None:
    assert states_operation("Scope 2 was 11,597 [#3].", "What were the scope 2 emissions?", REPORT)


@given(st.text(max_size=300), st.text(max_size=200), st.dictionaries(st.integers(1, 5), st.text(max_size=300)))
def test_any_text_question_and_passages_give_a_yes_or_no(answer: str, question: str, passages: dict[int, str]) -> None:
    assert stated_answer(answer, question, passages) in (True, False)


QUESTIONS = [
    "What was the increase in interest income in 2019?",
    "What was the percentage change in interest expense?",
    "What is the total gross emissions for FY18?",
    "What was the average of scope 1 emissions?",
    "What were the scope 2 emissions?",
    "What was the change in the total between 2018 and 2019?",
    "What would be the decrease in cash if the 2019 amount was 120 instead?",
    "What was the change in the loss of (3.5) million?",
]
LINES = st.lists(
    st.sampled_from(
        [
            "Interest income increased $16.9 million, to $30.2 million, in 2019.",
            "Interest expense was $2,082 in 2019.",
            "| 2019 | 2018 | Change",
            "Revenue | 5,000 | 4,000 | 25%",
            "Total gross emissions (Scope 1 and 2) | 98,725",
            "Scope 1 | 87,128",
            "The average headcount was 120.",
            "Decrease in cash was 120 in 2019.",
            "Decrease in cash | (120) | -3.5",
            "The loss changed to 3.5 million.",
            "No numbers here.",
        ]
    ),
    max_size=6,
).map("\n".join)


@given(st.sampled_from(QUESTIONS), st.dictionaries(st.integers(1, 3), LINES, max_size=3), st.data())
def test_kb_asks_for_an_answer_in_words_whenever_one_could_be_kept(
    question: str, passages: dict[int, str], data: st.DataObject
) -> None:
    """When :func:`can_be_stated` says no answer in words could be kept, kb does not ask the model for one: so no
    answer that :func:`stated_answer` keeps may exist then. Answers are drawn from the passages' own numbers."""
    numbers = [n for text in passages.values() for n in text.replace("|", " ").split() if any(c.isdigit() for c in n)]
    said = data.draw(st.lists(st.sampled_from(numbers), min_size=1, max_size=2)) if numbers else ["5"]
    signs = data.draw(st.lists(st.sampled_from(["", "-", "("]), min_size=len(said), max_size=len(said)))
    answer = (
        "It was "
        + " and ".join(
            f"{sign}{n.strip('()-')}{')' if sign == '(' else ''}" for sign, n in zip(signs, said, strict=True)
        )
        + " [#1]."
    )
    if stated_answer(answer, question, passages):
        assert can_be_stated(question, passages)


TITLED = (
    "Interest Expense:\n\nYear Ended May 31,\nPercent Change\n\n"
    "(Dollars in millions) | 2019 Actual | Constant | | 2018\n"
)


@pytest.mark.parametrize(
    ("title", "answer", "kept"),
    [
        (TITLED, "The actual and constant changes were 3% [#1] and 3% [#1].", True),  # a heading over the columns
        (TITLED, "Interest expense changed by $2,082 [#1].", False),  # a percent heading heads no amount
        ("Group margins (%)\n\n | 2019 Actual | Constant | | 2018\n", "It changed by 3% [#1].", False),  # "up"
        (
            "The table below shows the percent change in our interest expense for the year.\n | 2019 | A | | 2018\n",
            "It changed by 3% [#1].",
            False,  # a sentence is no heading
        ),
    ],
)
def test_a_percent_cell_is_named_by_a_short_heading_above_its_table_that_names_the_operation(
    title: str, answer: str, kept: bool
) -> None:
    passages = {1: f"{title}Interest expense | $2,082 | 3% | 3% | $2,025"}
    assert stated_answer(answer, "How much was the percentage change in interest expense?", passages) is kept
