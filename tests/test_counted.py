"""Counts kb writes itself (issue 43): "How many years did X exceed Y?" is worked out from the row the question
names, every period's cell and the question's threshold, with no model asked; the same checks judge it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core.answers.computation import ComputationRefusal, check_computation
from kb_core.answers.counted import threshold_count, threshold_of
from kb_core.answers.numbers import read_numbers
from kb_core.answers.pipeline import AskOptions, RagPipeline
from kb_core.config import load_config
from kb_core.output import envelope, schema
from kb_core.storage.store import StoreOfRecord
from kb_core.testing import ScriptedLanguageModel
from kb_core.types import Answer, Chunk, Document, GenerateRequest, Hit, ModelRef, SearchQuery

SALES = """Net sales by segment were as follows:
| 2019 | 2018 | 2017
| | (in millions) |
Sensors | 914 | 918 | 814
Energy | 699 | 712 | 685
Total | $ 13,448 | $ 13,988 | $ 12,185"""

OTHER_REPORT = """Segment sales:
| 2019 | 2018 | 2017
Sensors | 1,914 | 1,918 | 1,814"""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StoreOfRecord]:
    db = StoreOfRecord(tmp_path / "kb")
    yield db
    db.close()


def _ask(
    store: StoreOfRecord,
    question: str,
    texts: Sequence[str],
    reply: str,
    more: Sequence[Chunk] = (),
    **overrides: object,
) -> tuple[Answer, list[str]]:
    """``question`` over one document per text (and ``more`` chunks, not retrieved); the model replies ``reply``
    and the systems it was asked with are returned too."""
    chunks = [Chunk(f"r{i}.pdf#0", f"r{i}.pdf", 0, text, f"h{i}", 1, 6, ("Sales",)) for i, text in enumerate(texts)]
    with store.transaction():  # a document's chunks together (``more`` are the first document's)
        for path in dict.fromkeys(c.doc_path for c in [*chunks, *more]):
            held = [c for c in [*chunks, *more] if c.doc_path == path]
            store.replace_document(Document(path, f"hash-{len(held)}", 10, path, "text", "docs"), held)
    overrides = {"rag.min_relative_score": 0.0, **overrides}
    config = load_config(kb_dir=store.kb_dir, overrides=overrides, environ={})
    hits = [Hit(c.chunk_id, c.doc_path, 0.9 - i / 10, i + 1, c.citation, c.heading_path) for i, c in enumerate(chunks)]
    asked: list[str] = []

    def script(request: GenerateRequest) -> list[str]:
        asked.append(request.system)
        return [reply]

    llm = ScriptedLanguageModel(script)

    def retrieve(query: SearchQuery) -> Sequence[Hit]:
        return hits

    pipeline = RagPipeline(config, store, retrieve, lambda: llm, lambda: ModelRef("embedder", "onnx", 384))
    return pipeline.ask(question, AskOptions()), asked


def test_kb_counts_the_years_a_row_exceeds_a_threshold_without_asking_the_model(store: StoreOfRecord) -> None:
    answer, asked = _ask(store, "How many years did Sensors exceed $900 million?", [SALES], "CALC: none")
    assert answer.grounded, answer.note
    assert answer.answer == "2 (count(914 > 900, 918 > 900, 814 > 900)) [#1]"  # a count is no amount of millions
    assert answer.computation is not None and answer.computation.written_by == "kb"
    assert [(o.literal, o.source) for o in answer.computation.operands][:2] == [("914", "passage"), ("900", "question")]
    assert not any("CALC" in system for system in asked)  # the model wrote no computation
    jsonschema.validate(envelope("answer.v1", answer), schema("answer.v1"))


def test_a_count_of_years_reads_its_row_not_the_whole_document(store: StoreOfRecord) -> None:
    """A count of rows reads every row of its document (refused when they do not fit); a count of years needs one."""
    rest = [Chunk(f"r0.pdf#{i}", "r0.pdf", i, "Narrative. " * 40, f"n{i}", 10 + i, 10 + i) for i in range(1, 30)]
    question = "How many years did Sensors exceed $900 million?"
    answer, _ = _ask(store, question, [SALES], "CALC: none", rest, **{"rag.max_context_tokens": 2000})
    assert answer.grounded and answer.answer.startswith("2 (count("), answer.note


def test_a_count_the_model_writes_carries_no_scale_either(store: StoreOfRecord) -> None:
    question = "How many of the segments had sales above 800 million in 2019?"  # rows, not years: the model's
    answer, _ = _ask(store, question, [SALES], "CALC: count(914 > 800, 699 > 800) [#1]")
    assert answer.grounded, answer.note
    assert answer.answer.startswith("1 (count(") and answer.computation is not None
    assert answer.computation.written_by == "model"


def test_two_reports_whose_rows_disagree_leave_the_count_to_the_model(store: StoreOfRecord) -> None:
    reply = "CALC: count(914 > 900, 918 > 900, 814 > 900) [#1]"
    answer, asked = _ask(store, "How many years did Sensors exceed $900 million?", [SALES, OTHER_REPORT], reply)
    assert any("CALC" in system for system in asked)  # kb could not tell which report's row
    assert not answer.grounded and answer.refusal_detail == "ambiguous_source", answer.note


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How many years did net income exceed $30,000 thousand?", (">", "30,000", "thousand")),
        ("From 2017 to 2019, how many of the years was R&D more than 5 million?", (">", "5", "million")),
        ("How many years did the margin exceed 20%?", (">", "20%", "")),
        ("How many years was the ratio below 1.5?", ("<", "1.5", "")),
        ("How many fiscal years were sales at least 2,000?", (">=", "2,000", "")),
        ("How many years over 2017 to 2019 did sales exceed 30,000?", (">", "30,000", "")),  # not "over 2017"
        ("How many years did net income not exceed 30,000?", None),  # negated: kb leaves it to the model
        ("How many years was net income no more than 30,000?", None),
        ("How many years didn't sales exceed 30,000?", None),
        ("How many segments exceeded $50 million in 2019?", None),
        ("What was the change in net income from 2018 to 2019?", None),
    ],
)
def test_the_threshold_questions_kb_counts(question: str, expected: tuple[str, str, str] | None) -> None:
    assert threshold_of(question) == expected


def test_a_row_with_a_period_kb_cannot_read_is_not_counted() -> None:
    merged = "| 2019 | 2018 | 2017\nNet income | $53,330 | $21,524 $29,251 |"  # two years' numbers in one cell
    assert threshold_count("How many years did net income exceed $30,000 thousand?", {1: merged}) is None
    whole = "| 2019 | 2018 | 2017\nNet income | 53,330 | 21,524 | 29,251"
    assert threshold_count("How many years did net income exceed $30,000 thousand?", {1: whole}) is not None


INCOME = "(in thousands) | 2019 | 2018 | 2017\nNet income | 53,330 | 21,524 | 29,251"


@pytest.mark.parametrize(
    "question",
    [
        "How many years did net income exceed $30 million?",  # the table is in thousands: 30 is not 30 million
        "How many years did net income per share exceed 1?",  # another measure than the row's
        "How many years did the change in net income exceed 1,000?",
        "How many years did adjusted net income exceed 30,000?",
    ],
)
def test_a_threshold_or_measure_the_row_does_not_hold_is_not_counted(question: str) -> None:
    assert threshold_count(question, {1: INCOME}) is None


def test_a_threshold_in_the_tables_scale_is_counted() -> None:
    assert threshold_count("How many years did net income exceed $30,000 thousand?", {1: INCOME}) is not None
    millions = "(in millions) | 2019 | 2018\nRevenue | 31 | 29"
    written = threshold_count("How many years did revenue exceed $30 million?", {1: millions})
    assert written == ("count(31 > 30, 29 > 30)", 1)


def test_a_negative_percent_is_written_so_that_it_parses() -> None:
    text = "| 2019 | 2018 | 2017\nMargin | (4.5%) | 3.0% | -1.5%"
    written = threshold_count("How many years did the margin exceed -2%?", {1: text})
    assert written is None  # a negative threshold is not read: the model is asked
    written = threshold_count("How many years did Margin exceed 2%?", {1: text})
    assert written == ("count((-4.5%) > 2%, 3.0% > 2%, (-1.5%) > 2%)", 1)
    done = check_computation(written[0], {1: text}, question="How many years did Margin exceed 2%?")
    assert not isinstance(done, ComputationRefusal) and done.result == 1


def test_a_range_in_the_question_limits_the_years() -> None:
    text = "| 2020 | 2019 | 2018 | 2017\nResearch | 9 | 7 | 6 | 4"
    written = threshold_count("From 2018 to 2019, how many of the years was Research more than 5?", {1: text})
    assert written == ("count(7 > 5, 6 > 5)", 1)
    listed = threshold_count("In 2017, 2018 and 2019, how many of the years was Research more than 5?", {1: text})
    assert listed == ("count(7 > 5, 6 > 5, 4 > 5)", 1)  # the years named, not only the last two


_WRITTEN = st.builds(
    lambda n, form: form.format(n=f"{n:,}"),
    st.integers(0, 10**7),
    st.sampled_from(["{n}", "({n})", "-{n}", "\u2212{n}", "{n}%", "({n}%)", "({n})%", "${n}", "$ {n}", "{n}.5"]),
)


@given(
    st.lists(_WRITTEN, min_size=2, max_size=4), _WRITTEN, st.sampled_from(["exceed", "fall below", "reach at least"])
)
def test_a_count_kb_writes_over_any_written_numbers_parses_and_counts_right(
    cells: list[str], threshold: str, comparison: str
) -> None:
    years = list(range(2019, 2019 - len(cells), -1))
    text = " | ".join(["", *map(str, years)]) + "\nSales | " + " | ".join(cells)
    question = f"How many years did Sales {comparison} {threshold}?"
    written = threshold_count(question, {1: text})
    if written is None:
        return
    done = check_computation(written[0], {1: text}, question=question)
    if isinstance(done, ComputationRefusal):  # a cell equal to the threshold is read as the question's number
        assert done.reason != "expression_unparsed", (written, done)
        return
    (limit,) = read_numbers(threshold)
    values = [read_numbers(cell)[0].value for cell in cells]
    meets = {"exceed": lambda v: v > limit.value, "fall below": lambda v: v < limit.value}.get(
        comparison, lambda v: v >= limit.value
    )
    assert done.result == sum(map(meets, values)), (written, done)


@given(
    st.text(max_size=300),
    st.text(alphabet="0123456789,.|$% ()-\nabcSales", max_size=300),
    st.integers(1890, 2110),
    st.integers(1890, 2110),
)
def test_any_text_gives_none_or_an_expression_that_parses(question: str, text: str, first: int, last: int) -> None:
    """Passages are untrusted: kb's own count never raises, and what it writes is always a computation."""
    ranged = f"From {first} to {last}, how many of the years was Sales more than 5? {question}"
    for asked in (question, f"How many years did Sales exceed 5? {question}", ranged):
        written = threshold_count(asked, {1: text})
        if written is not None:
            done = check_computation(written[0], {1: text}, question=asked)
            assert not isinstance(done, ComputationRefusal) or done.reason != "expression_unparsed", done
