"""Computed answers through the answer pipeline, with a scripted model (issue 43).

The model writes ``CALC: <expression> [#n]``; kb evaluates it, checks every operand against the cited passage
(and its row, column or sentence against the question), and states the result it worked out with its working.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import jsonschema
import pytest
from kbtest import store_chunks

from kb_core.answers.computed import read_reply
from kb_core.answers.pipeline import AskOptions, RagPipeline
from kb_core.answers.stated import NOT_STATABLE
from kb_core.config import load_config
from kb_core.output import envelope, schema
from kb_core.storage.store import StoreOfRecord
from kb_core.testing import ScriptedLanguageModel
from kb_core.types import Answer, Chunk, Document, GenerateRequest, Hit, ModelRef, SearchQuery

TABLE = """Net sales by segment were as follows:
| 2019 | 2018 | 2017
| | (in millions) |
Sensors | 914 | 918 | 814
Energy | 699 | 712 | 685
Appliances | 680 | 774 | 676
Total | $ 13,448 | $ 13,988 | $ 12,185"""

PROSE = "Cash amounted to $12.4 million at the end of 2019, and receivables to $30.1 million."

CHUNKS = [
    Chunk("sales.pdf#0", "sales.pdf", 0, TABLE, "h0", 1, 8, ("Net sales",)),
    Chunk("assets.md#0", "assets.md", 0, PROSE, "h1", 1, 1, ("Assets",)),
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StoreOfRecord]:
    db = StoreOfRecord(tmp_path / "kb")
    store_chunks(db, CHUNKS)
    yield db
    db.close()


def _ask(
    store: StoreOfRecord,
    question: str,
    replies: Sequence[str],
    shown: list[str] | None = None,
    *,
    on: bool = True,
    chunks: Sequence[Chunk] = CHUNKS,
    asked: list[GenerateRequest] | None = None,
) -> Answer:
    """``question`` answered over ``chunks`` (both, unless told) by a model that replies ``replies`` in turn (one
    per request, each kept in ``asked`` when given)."""
    config = load_config(
        kb_dir=store.kb_dir,
        overrides={"rag.max_chunks": 10, "rag.min_relative_score": 0.0, "rag.computations": on},
        environ={},
    )
    hits = [Hit(c.chunk_id, c.doc_path, 0.9 - i / 10, i + 1, c.citation, c.heading_path) for i, c in enumerate(chunks)]
    turns = iter(replies)

    def script(request: GenerateRequest) -> list[str]:
        if asked is not None:
            asked.append(request)
        return [next(turns, "Insufficient evidence.")]

    llm = ScriptedLanguageModel(script)

    def retrieve(query: SearchQuery) -> Sequence[Hit]:
        return hits

    pipeline = RagPipeline(config, store, retrieve, lambda: llm, lambda: ModelRef("embedder", "onnx", 384))
    on_token = shown.append if shown is not None else None
    return pipeline.ask(question, AskOptions(), on_token)


def test_a_computation_is_worked_out_by_kb_and_cited(store: StoreOfRecord) -> None:
    shown: list[str] = []
    answer = _ask(store, "What was the change in Appliances from 2018 to 2019?", ["CALC: 680 - 774 [#1]"], shown)
    assert answer.grounded, answer.note
    assert answer.answer == "-$94 million (680 - 774) [#1]"
    assert [c.marker for c in answer.citations] == [1]
    assert answer.computation is not None
    assert [(o.literal, o.marker, o.line) for o in answer.computation.operands] == [("680", 1, 6), ("774", 1, 6)]
    assert shown == [answer.answer]  # only the checked answer is shown
    jsonschema.validate(envelope("answer.v1", answer), schema("answer.v1"))


def test_a_percentage_change_and_an_average_in_prose(store: StoreOfRecord) -> None:
    change = _ask(
        store, "What was the percentage change in Sensors from 2018 to 2019?", ["CALC: (914 - 918) / 918 * 100 [#1]"]
    )
    assert change.grounded and change.answer.startswith("-0.44% ((914 - 918) / 918 * 100)")
    # the passage whose line names cash and receivables is read first (#1), ahead of retrieval's first
    average = _ask(store, "What was the average of cash and receivables in 2019?", ["CALC: avg(12.4, 30.1) [#1]"])
    assert average.grounded and average.answer.startswith("$21.25 million") and average.citations[0].marker == 1
    assert average.citations[0].citation.path == "assets.md"


def test_an_operand_in_no_passage_is_refused_with_its_reason(store: StoreOfRecord) -> None:
    answer = _ask(store, "What was the change in Appliances from 2018 to 2019?", ["CALC: 680 - 775 [#1]"])
    assert (answer.grounded, answer.refusal_reason, answer.refusal_detail) == (
        False,
        "computation",
        "operand_not_found",
    )
    assert "775" in answer.note and answer.citations == ()
    jsonschema.validate(envelope("answer.v1", answer), schema("answer.v1"))


def test_an_operand_from_another_row_or_year_is_refused(store: StoreOfRecord) -> None:
    other_row = _ask(store, "What was the change in Appliances from 2018 to 2019?", ["CALC: 699 - 712 [#1]"])
    assert other_row.refusal_detail == "operand_off_question"
    other_year = _ask(store, "What was the change in Appliances from 2018 to 2019?", ["CALC: 680 - 676 [#1]"])
    assert other_year.refusal_detail == "operand_off_question"


def test_a_wrong_result_stated_by_the_model_is_refused(store: StoreOfRecord) -> None:
    answer = _ask(store, "What was the change in Appliances from 2018 to 2019?", ["CALC: 680 - 774 = -90 [#1]"])
    assert (answer.refusal_reason, answer.refusal_detail) == ("computation", "result_mismatch")
    right = _ask(store, "What was the change in Appliances from 2018 to 2019?", ["CALC: 680 - 774 = -94 [#1]"])
    assert right.grounded


@pytest.mark.parametrize("reply", ["CALC: 1/0 [#1]", "CALC: __import__('os') [#1]", "CALC: (680 - [#1]"])
def test_a_computation_that_cannot_run_is_a_refusal_not_an_exception(store: StoreOfRecord, reply: str) -> None:
    answer = _ask(store, "What was the change in Appliances from 2018 to 2019?", [reply])
    assert answer.refusal_reason == "computation" and answer.refusal_detail in (
        "division_by_zero",
        "expression_unparsed",
    )


STATED = Chunk("notes.md#0", "notes.md", 0, "Appliances sales fell by 94 million in 2019.", "h2", 1, 1, ("Notes",))


@pytest.mark.parametrize("reply", ["CALC: none", "CALC: 94 [#2]", "CALC: 94 - 0 [#2]", "CALC: 94 * 1 [#2]"])
def test_no_computation_takes_the_ordinary_path_which_must_state_what_is_asked(
    store: StoreOfRecord, reply: str
) -> None:
    """Nothing written (``none``), or one number of the passages restated: the ordinary path answers, and its
    number must be one a passage gives for what the question asks (a change: a line that names a change)."""
    store_chunks(store, [STATED])
    question, chunks = "What was the change in Appliances from 2018 to 2019?", [CHUNKS[0], STATED]
    answer = _ask(store, question, [reply, "Appliances sales fell by 94 million [#2]."], chunks=chunks)
    assert answer.grounded and answer.computation is None and "94" in answer.answer, answer.note
    shown: list[str] = []
    guess = _ask(store, question, [reply, "Appliances sales were 680 in 2019 [#1]."], shown, chunks=chunks)
    assert (guess.grounded, guess.refusal_detail) == (False, "not_stated")  # 680 is no change
    assert "".join(shown) == ""  # held until checked: nothing of it was on screen


@pytest.mark.parametrize(
    ("reply", "detail", "note"),
    [("CALC: none", "not_stated", NOT_STATABLE), ("CALC: 699 - 712 [#1]", "operand_off_question", "699")],
)
def test_when_no_passage_could_state_the_number_the_model_is_not_asked_again(
    store: StoreOfRecord, reply: str, detail: str, note: str
) -> None:
    """No computation kb can check, and no passage line that gives a change ("fell by"): no answer in words could
    be kept, so kb refuses without asking the model for one (one request, not two): with the computation's own
    refusal when there was one."""
    asked: list[GenerateRequest] = []
    answer = _ask(store, "What was the change in Appliances from 2018 to 2019?", [reply], asked=asked)
    assert (answer.grounded, answer.refusal_reason, answer.refusal_detail) == (False, "computation", detail)
    assert note in answer.note and len(asked) == 1
    store_chunks(store, [STATED])
    asked.clear()
    stated = _ask(
        store, "What was the change in Appliances from 2018 to 2019?", [reply], asked=asked, chunks=[*CHUNKS, STATED]
    )
    assert len(asked) == 2 and not stated.grounded  # a line could state it: the model was asked (and refused)


def test_the_reply_is_read_with_its_markers_and_without_code_quotes() -> None:
    assert read_reply("CALC: none") is None and read_reply("The answer is 5 [#1].") is None
    reply = read_reply("CALC: `(1,571.7 - 1,337.7)` [#2]")
    assert reply is not None and reply.expression == "(1,571.7 - 1,337.7)" and reply.markers == (2,)


def test_explain_shows_the_computation_and_where_each_operand_is(
    store: StoreOfRecord, capsys: pytest.CaptureFixture[str]
) -> None:
    from kb_core.cli.asking import print_explain

    answer = _ask(
        store, "What was the percentage change in Sensors from 2018 to 2019?", ["CALC: (914 - 918) / 918 * 100 [#1]"]
    )
    print_explain(answer)
    out = capsys.readouterr().out
    assert "Worked out by kb: (914 - 918) / 918 * 100 = -0.44% (the model wrote (914 - 918) / 918 * 100)" in out
    assert "[#1], line 4" in out and "a constant of the formula" in out


def test_computations_are_on_by_default_and_off_the_question_takes_the_ordinary_path(store: StoreOfRecord) -> None:
    assert load_config(kb_dir=store.kb_dir, environ={}).rag.computations is True
    answer = _ask(
        store, "What was the change in Appliances from 2018 to 2019?", ["Appliances were 680 [#1]."], on=False
    )
    assert answer.computation is None and answer.grounded and answer.prompt_template_version != ""


STAFF = [
    Chunk("staff.csv#0", "staff.csv", 0, "Region | Staff\nNorth | 120\nSouth | 80", "s0", 1, 3, ("Staff",)),
    Chunk("staff.csv#1", "staff.csv", 1, "Region | Staff\nEast | 150\nWest | 95", "s1", 4, 5, ("Staff",)),
]


def _over_staff(
    tmp_path: Path,
    reply: str,
    budget: int | None = None,
    question: str = "How many regions had more than 100 staff?",
    computations: bool = True,
) -> Answer:
    """``question`` over staff.csv, whose second chunk retrieval did not find."""
    db = StoreOfRecord(tmp_path / "kb")
    with db.transaction():
        db.replace_document(Document("staff.csv", "h", 10, "staff.csv", "csv", "docs"), STAFF)
    overrides: dict[str, object] = {"rag.computations": computations}
    if budget is not None:
        overrides["rag.max_context_tokens"] = budget
    config = load_config(kb_dir=db.kb_dir, overrides=overrides, environ={})
    first = STAFF[0]
    hits = [Hit(first.chunk_id, first.doc_path, 0.9, 1, first.citation, first.heading_path)]
    llm = ScriptedLanguageModel(lambda request: [reply])
    pipeline = RagPipeline(config, db, lambda query: hits, lambda: llm, lambda: ModelRef("embedder", "onnx", 384))
    try:
        return pipeline.ask(question, AskOptions())
    finally:
        db.close()


def test_a_count_reads_every_row_of_the_document_not_the_retrieved_share(tmp_path: Path) -> None:
    answer = _over_staff(tmp_path, "CALC: count(120 > 100, 80 > 100, 150 > 100, 95 > 100) [#1] [#2]")
    assert answer.grounded, answer.note
    assert answer.answer.startswith("2 (count(")
    assert sorted(c.citation.path for c in answer.citations) == ["staff.csv", "staff.csv"]


def test_a_count_over_a_document_too_large_to_read_whole_is_refused(tmp_path: Path) -> None:
    answer = _over_staff(tmp_path / "small", "CALC: count(120 > 100, 80 > 100) [#1]", budget=120)
    assert (answer.grounded, answer.refusal_detail) == (False, "rows_unread"), answer.note
    assert "did not fit" in answer.note


LIST = "List every region with more than 100 staff."


def test_a_list_reads_every_row_of_the_document_with_computations_off(tmp_path: Path) -> None:
    answer = _over_staff(
        tmp_path, "The regions are North (120 staff) [#1] and East (150 staff) [#2].", question=LIST, computations=False
    )
    assert answer.grounded, answer.note
    assert [(c.marker, c.citation.start_line) for c in answer.citations] == [(1, 1), (2, 4)]  # the second unretrieved
    assert not answer.note


def test_a_list_from_part_of_its_document_says_so(tmp_path: Path) -> None:
    answer = _over_staff(tmp_path, "The region is North (120 staff) [#1].", 120, question=LIST, computations=False)
    assert answer.grounded, answer.note
    assert "1 passage(s) of staff.csv did not fit" in (answer.note or "")


def test_passages_without_a_table_take_the_ordinary_path(store: StoreOfRecord) -> None:
    """Prose alone ("the difference between Russia and Siberia") is not worked out: today's path answers it."""
    question = "What was the average of cash and receivables in 2019?"
    answer = _ask(store, question, ["Cash was $12.4 million [#1]."], chunks=CHUNKS[1:])
    assert answer.computation is None and answer.grounded and "12.4" in answer.answer


def test_the_markdown_of_a_computed_answer_shows_its_working_with_each_operand_linked(store: StoreOfRecord) -> None:
    """What ``/v1`` and every Markdown front end show: the computation kb evaluated, each operand's passage."""
    from kb_core.service import markdown

    answer = _ask(store, "What was the change in Appliances from 2018 to 2019?", ["CALC: 680 - 774 [#1]"])
    shown = markdown.message(envelope("answer.v1", answer), "http://kb")
    assert shown.startswith("-$94 million (680 - 774) [[1]][kb-1]")
    assert "Worked out by kb: `680 - 774` = -$94 million" in shown
    assert "- `680`: [[1]][kb-1], line 6\n- `774`: [[1]][kb-1], line 6" in shown
    assert "[kb-1]: http://kb/#/doc/sales.pdf/L1-L8" in shown


@pytest.mark.parametrize("breaking", ["\f", "\v", "\x1c", "\u2028", "\x85"])
def test_a_line_break_other_than_newline_does_not_shift_the_rows(store: StoreOfRecord, breaking: str) -> None:
    """Operands are numbered by newlines; a form feed (between PDF pages) or another break splitlines() knows must
    not move the row kb checks them against."""
    text = TABLE.replace("as follows:", f"as follows:{breaking}(continued)")
    chunks = store_chunks(store, [Chunk("sales.pdf#0", "sales.pdf", 0, text, "h0", 1, 9, ("Net sales",))])
    answer = _ask(
        store, "What was the change in Appliances from 2018 to 2019?", ["CALC: 680 - 774 [#1]"], chunks=chunks
    )
    assert answer.grounded, answer.note
    assert answer.answer.startswith("-$94 million (680 - 774)")


@pytest.mark.parametrize("breaking", ["\f", "\u2028"])
def test_after_another_line_break_operands_from_two_rows_are_still_refused(store: StoreOfRecord, breaking: str) -> None:
    text = TABLE.replace("as follows:", f"as follows:{breaking}(continued)")
    chunks = store_chunks(store, [Chunk("sales.pdf#0", "sales.pdf", 0, text, "h0", 1, 9, ("Net sales",))])
    answer = _ask(
        store, "What was the change in Appliances from 2018 to 2019?", ["CALC: 680 - 712 [#1]"], chunks=chunks
    )
    assert not answer.grounded


RESPECTIVELY = (
    "Amortization expense was $2.3 million, $2.1 million and $1.9 million in 2019, 2018 and 2017, respectively."
)


@pytest.mark.parametrize(
    ("reply", "grounded"),
    [
        ("CALC: 2.3 - 2.1 [#1]", True),  # 2019 and 2018, as "respectively" pairs them
        ("CALC: 2.3 - 1.9 [#1]", False),  # 1.9 is 2017's
    ],
)
def test_respectively_pairs_a_sentences_numbers_with_its_periods(
    store: StoreOfRecord, reply: str, grounded: bool
) -> None:
    chunks = [*store_chunks(store, [Chunk("notes.md#0", "notes.md", 0, RESPECTIVELY, "h0", 1, 1, ())]), CHUNKS[0]]
    answer = _ask(store, "What was the change in amortization expense from 2018 to 2019?", [reply], chunks=chunks)
    assert answer.grounded is grounded, answer.note


def test_an_average_of_two_years_takes_no_third_years_number(store: StoreOfRecord) -> None:
    chunks = [*store_chunks(store, [Chunk("notes.md#0", "notes.md", 0, RESPECTIVELY, "h0", 1, 1, ())]), CHUNKS[0]]
    question = "What was the average amortization expense in 2019 and 2018?"
    assert _ask(store, question, ["CALC: avg(2.3, 2.1) [#1]"], chunks=chunks).grounded
    assert not _ask(store, question, ["CALC: avg(2.3, 2.1, 1.9) [#1]"], chunks=chunks).grounded
