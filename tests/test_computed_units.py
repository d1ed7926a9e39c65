"""A computed amount's currency and scale, and the report's own rounded figure for it (issue 43).

"€1,266 million (1,655 - 389) [#1], stated as €1.3 billion [#2]": the result carries the unit its operands'
table or sentence is written in (:mod:`kb_core.answers.amounts`), and a sentence of the passages that states
the same result, rounded, is said and cited (:mod:`kb_core.answers.restated`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path

import attrs
import jsonschema
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kb_core.answers.amounts import amount_unit
from kb_core.answers.computation import Computation, check_computation
from kb_core.answers.pipeline import AskOptions, RagPipeline
from kb_core.answers.restated import stated_as
from kb_core.config import load_config
from kb_core.output import envelope, schema
from kb_core.service.markdown import computation_part
from kb_core.storage.store import StoreOfRecord
from kb_core.testing import ScriptedLanguageModel
from kb_core.types import Answer, Chunk, Document, Hit, ModelRef, SearchQuery

FINANCING = """Net financing costs
| 2019 | 2018
| €m | €m
Investment income | 433 | 685
Net financing costs | (1,655) | (389)"""
STATEMENT = "Net financing costs increased by €1.3 billion, primarily driven by mark-to-market losses."
QUESTION = "How much did net financing costs increase by between 2018 and 2019?"


def _checked(expression: str, passages: dict[int, str]) -> Computation:
    done = check_computation(expression, passages)
    assert isinstance(done, Computation), done
    return done


@pytest.mark.parametrize(
    ("passages", "documents", "unit"),
    [
        ({1: FINANCING}, {}, ("€", "million")),  # a heading that is a currency and a scale
        ({1: "(in millions)\n | 2019 | 2018\nTotal | $ 9 | $ 8\nCosts | 1,655 | 389"}, {}, ("$", "million")),
        ({1: " | 2019 | 2018\nCosts | 1,655 | 389\n\nThe costs were as follows (in thousands):"}, {}, ("", "thousand")),
        (  # the caption in another passage of the same document
            {1: " | 2019 | 2018\nCosts | £1,655 | £389", 2: "Costs comprise the following (in thousands):"},
            {1: "a.pdf", 2: "a.pdf"},
            ("£", "thousand"),
        ),
        (  # ... but not of another document
            {1: " | 2019 | 2018\nCosts | 1,655 | 389", 2: "Costs comprise the following (in thousands):"},
            {1: "a.pdf", 2: "b.pdf"},
            ("", ""),
        ),
        ({1: " | 2019 | 2018\nCosts | $1,655 | €389"}, {}, ("", "")),  # two currencies: neither
        ({1: "(in millions)\n | 2019\nCosts | 1,655", 2: "In 2018 costs were 389."}, {}, ("", "million")),  # one says
        ({1: "US$m | 2019 | 2018\nCosts | 1,655 | 389"}, {}, ("$", "million")),
        ({1: "£000 | 2019 | 2018\nCosts | 1,655 | 389"}, {}, ("£", "thousand")),
        ({1: " | $bn | $bn\nCosts | 1,655 | 389"}, {}, ("$", "billion")),
        ({1: "€ M&A deals\n | 2019 | 2018\nCosts | 1,655 | 389"}, {}, ("", "")),  # no heading unit
        ({1: "(in millions)\n | 2019 | 2018\nTotal | $ 9 | $ 8\nEmployees | 1,655 | 389"}, {}, ("", "")),  # a count
        ({1: "Intro\fmore\nCosts | $1,655 | $389"}, {}, ("$", "")),  # lines counted at "\n" only
        (  # a caption far below the table, or under another table, is not this table's
            {1: " | 2019 | 2018\nCosts | 1,655 | 389\n\nText.\nMore text.\nEven more.\nLeases (in thousands):"},
            {},
            ("", ""),
        ),
    ],
)
def test_an_amount_carries_the_currency_and_scale_its_operands_are_written_in(
    passages: dict[int, str], documents: dict[int, str], unit: tuple[str, str]
) -> None:
    assert amount_unit(_checked("1,655 - 389", passages), passages, documents) == unit


@pytest.mark.parametrize("expression", ["(1,655 - 389) / 389 * 100", "1,655 / 389", "count(1,655 > 433, 389 > 433)"])
def test_a_percentage_a_ratio_or_a_count_carries_no_unit(expression: str) -> None:
    passages = {1: FINANCING}
    assert amount_unit(_checked(expression, passages), passages, {}) == ("", "")


@pytest.mark.parametrize(
    "sentence",
    [
        "Net financing costs were €1.3 billion in 2019.",  # names no change
        "Revenue increased by €1.3 billion.",  # names no row of the question
        "Net financing costs increased by €1 billion.",  # too coarse to agree with anything
        "Net financing costs increased by €1.5 billion.",  # another figure
        "Net financing costs increased by 1.3%.",  # a percent, not an amount
        "| Net financing costs increased | €1.3 billion",  # a table's cell, not a sentence
        "The Group's net financing costs were €1.3 billion.",  # "up" in "Group" names no change
        "Net financing costs increased by €1.3 billion in 2015.",  # another period
        "Operating costs increased by €1.3 billion.",  # another row: one word of the question's
        "Net financing costs were €1,655 million. Revenue increased by €1.3 billion.",  # another sentence's
        "Net financing costs decreased by €1.3 billion.",  # the opposite direction to the question's
        "Net financing costs increased to €1.3 billion.",  # where they got, not by how much
    ],
)
def test_only_a_sentence_naming_the_row_and_operation_with_the_result_rounded_is_its_statement(sentence: str) -> None:
    passages = {1: FINANCING, 2: sentence}
    done = _checked("1,655 - 389", passages)
    assert stated_as(done, "million", {1: FINANCING, 2: STATEMENT}, QUESTION, {1: "a.pdf", 2: "a.pdf"}) is not None
    assert stated_as(done, "million", passages, QUESTION, {1: "a.pdf", 2: "a.pdf"}) is None


_FACTORS = {"": 1, "thousand": 10**3, "million": 10**6, "billion": 10**9}


@settings(max_examples=300, deadline=None)
@given(
    st.integers(2, 999_999),
    st.integers(2, 999_999),
    st.sampled_from(["", "thousand", "million", "billion"]),
    st.integers(0, 2),
    st.integers(-3, 3),
)
def test_a_statement_kb_accepts_is_the_result_rounded_as_written(
    new: int, old: int, scale: str, decimals: int, off: int
) -> None:
    """A sentence's figure is the report's statement of the result exactly when it is the result rounded at its
    own scale and decimals (``off`` units of its last digit away: another figure)."""
    factor = _FACTORS[scale]
    change = Fraction(abs(new - old) * 10**6, factor)  # the change, in millions, at the sentence's scale
    units = round(change * 10**decimals) + off
    assume(units > 0)
    whole, part = divmod(units, 10**decimals)
    written = f"{whole:,}.{part:0{decimals}d}" if decimals else f"{whole:,}"
    passages = {1: f" | 2019 | 2018\nNet costs | {new:,} | {old:,}", 2: f"Net costs increased by {written} {scale}."}
    done = check_computation(f"{new:,} - {old:,}", passages)
    assume(isinstance(done, Computation) and new != old)  # 100 is a constant of a formula, not an operand
    assert isinstance(done, Computation)
    found = stated_as(done, "million", passages, "By how much did net costs increase?", {})
    significant = sum(ch.isdigit() for ch in written.lstrip("0.,")) >= 2
    if found is not None:
        factors = [1, 10**6] if not found.number.scale else [_FACTORS[found.number.scale]]
        half = Fraction(1, 2 * 10**found.number.decimals)
        assert any(abs(abs(found.number.value) * f - abs(done.result) * 10**6) <= half * f for f in factors)
    elif (
        off == 0
        and significant
        and not any(
            abs(units * g - v * 10**6 * 10**decimals) * 2 <= g
            for v in (new, old)
            for g in ([factor] if scale else [1, 10**6])
        )
    ):
        # (a figure that rounds an operand as well says nothing of the result: rightly not taken)
        raise AssertionError(f"{written} {scale} states {done.result} million, rounded, but was not taken for it")


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300), st.text(max_size=120))
def test_any_passage_text_gives_a_unit_and_a_statement_or_none_never_an_exception(text: str, question: str) -> None:
    passages = {1: f" | 2019 | 2018\nCosts | 1,655 | 389\n{text}", 2: text}
    done = _checked("1,655 - 389", passages)
    currency, scale = amount_unit(done, passages, {1: "a", 2: "a"})
    assert currency in ("", "$", "€", "£", "¥") and scale in ("", "thousand", "million", "billion")
    stated_as(done, scale, passages, question, {1: "a", 2: "b"})


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StoreOfRecord]:
    db = StoreOfRecord(tmp_path / "kb")
    yield db
    db.close()


TABLE_CHUNK = Chunk("fin.pdf#0", "fin.pdf", 0, FINANCING, "h0", 1, 5, ("Financing",))
STATEMENT_CHUNK = Chunk("fin.pdf#1", "fin.pdf", 1, STATEMENT, "h1", 6, 6, ("Financing",))


def _ask(
    store: StoreOfRecord,
    chunks: list[Chunk],
    hits: list[Chunk],
    reply: str,
    most: int = 10,
    replies: Callable[[], str] | None = None,
) -> Answer:
    """QUESTION over ``chunks`` (stored by document), retrieved as ``hits`` in that order, ``most`` packed, the
    model replying ``reply`` to every request (or each of ``replies()`` in turn)."""
    with store.transaction():
        for path in dict.fromkeys(c.doc_path for c in chunks):
            own = [c for c in chunks if c.doc_path == path]
            store.replace_document(Document(path, f"hash-{path}", 10, path, "text", "docs"), own)
    config = load_config(
        kb_dir=store.kb_dir, overrides={"rag.max_chunks": most, "rag.min_relative_score": 0.0}, environ={}
    )
    found = [Hit(c.chunk_id, c.doc_path, 0.9 - i / 10, i + 1, c.citation, c.heading_path) for i, c in enumerate(hits)]
    llm = ScriptedLanguageModel(lambda request: [replies() if replies else reply])

    def retrieve(query: SearchQuery) -> list[Hit]:
        return found

    pipeline = RagPipeline(config, store, retrieve, lambda: llm, lambda: ModelRef("embedder", "onnx", 384))
    return pipeline.ask(QUESTION, AskOptions(explain=True))


def test_a_computed_change_is_said_with_its_unit_and_the_reports_rounded_figure_cited(store: StoreOfRecord) -> None:
    chunks = [TABLE_CHUNK, STATEMENT_CHUNK]
    answer = _ask(store, chunks, chunks, "CALC: 1,655 - 389 [#1]")
    assert answer.grounded, answer.note
    assert answer.answer == "€1,266 million (1,655 - 389) [#1], stated as €1.3 billion [#2]"
    assert [(c.marker, c.citation.start_line) for c in answer.citations] == [(1, 1), (2, 6)]
    stated = answer.computation.stated if answer.computation else None
    assert stated is not None and (stated.literal, stated.marker, stated.line) == ("€1.3 billion", 2, 1)
    jsonschema.validate(envelope("answer.v1", answer), schema("answer.v1"))
    shown = computation_part(envelope("answer.v1", answer))
    assert "The passage states it as `€1.3 billion`: [[2]][kb-2], line 1" in shown


def test_the_reports_statement_is_read_even_when_the_model_was_not_given_it(store: StoreOfRecord) -> None:
    """Retrieval ranks the statement first; the computation reads the table (one passage): kb reads the statement
    beside it, and cites it as a passage the model did not read (0 tokens)."""
    answer = _ask(store, [TABLE_CHUNK, STATEMENT_CHUNK], [STATEMENT_CHUNK, TABLE_CHUNK], "CALC: 1,655 - 389 [#1]", 1)
    assert answer.answer == "€1,266 million (1,655 - 389) [#1], stated as €1.3 billion [#2]", answer.note
    assert [(p.marker, p.chunk_id, p.tokens) for p in answer.packed][1:] == [(2, "fin.pdf#1", 0)]
    assert [(c.marker, c.citation.start_line) for c in answer.citations] == [(1, 1), (2, 6)]
    assert answer.prompt is not None and "€1.3 billion" not in answer.prompt.user
    silent = attrs.evolve(STATEMENT_CHUNK, text="Net financing costs rose on mark-to-market losses.")
    alone = _ask(store, [TABLE_CHUNK, silent], [silent, TABLE_CHUNK], "CALC: 1,655 - 389 [#1]", 1)
    assert alone.answer == "€1,266 million (1,655 - 389) [#1]", alone.note
    assert [p.marker for p in alone.packed] == [1]  # the passage beside it states nothing: not listed


def test_a_refused_computation_is_answered_in_words_from_the_passages_any_question_reads(
    store: StoreOfRecord,
) -> None:
    """Retrieval ranks the statement first, the computation reads the table; its computation refused, the answer
    in words reads retrieval's passage (the model's second reply cites it as [#1])."""
    replies = iter(["CALC: 999 - 1 [#1]", "Net financing costs increased by €1.3 billion [#1]."])
    chunks = [TABLE_CHUNK, STATEMENT_CHUNK]
    answer = _ask(store, chunks, [STATEMENT_CHUNK, TABLE_CHUNK], "", 1, replies=lambda: next(replies))
    assert answer.grounded, answer.note
    assert [p.chunk_id for p in answer.packed] == ["fin.pdf#1"] and answer.computation is None


def test_another_reports_sentence_is_no_statement_of_the_result(store: StoreOfRecord) -> None:
    review = Chunk("review.md#0", "review.md", 0, STATEMENT, "h1", 1, 1, ("Review",))
    answer = _ask(store, [TABLE_CHUNK, review], [TABLE_CHUNK, review], "CALC: 1,655 - 389 [#1]")
    assert answer.grounded and answer.answer == "€1,266 million (1,655 - 389) [#1]"
    assert answer.computation is not None and answer.computation.stated is None
