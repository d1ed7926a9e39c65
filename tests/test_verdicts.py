"""Verdicts kb stands behind: a yes/no answer states "Yes."/"No." only when kb is confident."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_rag import Harness, make_chunk

from kb_core.answers.verdicts import agrees, opening_margin, verdict_confidence, withheld
from kb_core.evaluation.verdicts import plot_curve, verdict_figures
from kb_core.storage.store import StoreOfRecord
from kb_core.testing.language_models import ScriptedLanguageModel
from kb_core.types import Answer, Chunk, Document, Hit

UNSETTLED = "The passages do not settle whether the answer is yes or no."
FOUND = make_chunk("docs/trial.md", 0, "Aspirin lowered the risk of stroke by 20% in the trial.", (1, 1))
NOT_FOUND = make_chunk("docs/null.md", 0, "There was no significant difference in stroke risk.", (1, 1))


@pytest.fixture
def store(tmp_path: Path) -> StoreOfRecord:
    db = StoreOfRecord(tmp_path / "kb")
    with db.transaction():
        for chunk in (FOUND, NOT_FOUND):
            db.replace_document(Document(chunk.doc_path, "h", 10, chunk.doc_path, "text", "docs"), [chunk])
    yield db
    db.close()


def _hits(chunk: Chunk) -> list[Hit]:
    return [Hit(chunk.chunk_id, chunk.doc_path, 0.9, 1, chunk.citation, chunk.heading_path)]


def ask(store: StoreOfRecord, chunk: Chunk, reply: str, share: float | None, **overrides: object) -> Answer:
    model = ScriptedLanguageModel([reply], verdict_no_share=share)
    overrides = {"rag.answer_check": 0, **overrides}
    return Harness(store, _hits(chunk), model, overrides).ask("Does aspirin lower the risk of stroke?")


def test_a_confident_yes_the_passages_agree_with_is_stated(store: StoreOfRecord) -> None:
    answer = ask(store, FOUND, "Yes. Aspirin lowered the risk of stroke by 20% [#1].", 0.01)
    assert answer.grounded and answer.verdict == "yes" and not answer.verdict_withheld
    assert answer.verdict_confidence == pytest.approx(0.9)
    assert answer.answer.startswith("Yes.")


def test_a_yes_the_passages_contradict_is_withheld_and_the_rest_kept(store: StoreOfRecord) -> None:
    answer = ask(store, NOT_FOUND, "Yes. There was no significant difference in stroke risk [#1].", 0.01)
    assert answer.grounded and answer.verdict == "yes" and answer.verdict_withheld
    assert answer.verdict_confidence == 0.0
    assert answer.answer == f"{UNSETTLED} There was no significant difference in stroke risk [#1]."
    assert [c.chunk_id for c in answer.citations] == [NOT_FOUND.chunk_id]


def test_an_unsure_model_s_verdict_is_withheld(store: StoreOfRecord) -> None:
    answer = ask(store, FOUND, "Yes. Aspirin lowered the risk of stroke by 20% [#1].", 0.08)  # just under 0.1
    assert answer.verdict_withheld and answer.verdict_confidence == pytest.approx(0.2)
    assert answer.answer.startswith(UNSETTLED)


def test_without_token_probabilities_there_is_no_confidence_and_no_stated_verdict(store: StoreOfRecord) -> None:
    answer = ask(store, FOUND, "Yes. Aspirin lowered the risk of stroke by 20% [#1].", None)
    assert answer.verdict == "yes" and answer.verdict_confidence is None and answer.verdict_withheld


def test_a_zero_floor_states_every_verdict(store: StoreOfRecord) -> None:
    answer = ask(
        store, NOT_FOUND, "Yes. There was no significant difference [#1].", 0.01, **{"rag.verdict_confidence": 0}
    )
    assert not answer.verdict_withheld and answer.answer.startswith("Yes.")


def test_questions_that_are_not_yes_no_are_untouched(store: StoreOfRecord) -> None:
    model = ScriptedLanguageModel(["By 20% [#1]."], verdict_no_share=0.3)
    answer = Harness(store, _hits(FOUND), model, {"rag.answer_check": 0}).ask("By how much did aspirin lower the risk?")
    assert answer.answer == "By 20% [#1]." and answer.verdict is None and answer.verdict_confidence is None


def test_the_verdict_fields_are_in_answer_v1(store: StoreOfRecord) -> None:
    from kb_core.output import dumps

    data = json.loads(dumps("answer.v1", ask(store, FOUND, "Yes. Aspirin lowered the risk of stroke [#1].", 0.0)))
    assert (data["verdict"], data["verdict_confidence"], data["verdict_withheld"]) == ("yes", 1.0, False)


@pytest.mark.parametrize(
    ("verdict", "share", "margin"),
    [("yes", 0.0, 1.0), ("yes", 0.1, 0.0), ("no", 1.0, 1.0), ("no", 0.1, 0.0), ("yes", 0.5, 0.0), ("mixed", 0.3, None)],
)
def test_the_model_s_margin_is_0_at_the_threshold_and_1_at_certainty(
    verdict: str, share: float, margin: float | None
) -> None:
    assert opening_margin(verdict, share, 0.1) == margin


def test_a_no_needs_passages_that_report_a_negative_finding() -> None:
    assert agrees("no", "No. The risk did not change [#1].", ["The risk did not change."])
    assert not agrees("no", "No [#1].", ["Aspirin lowered the risk by 20%."])
    assert verdict_confidence("no", 0.55, 0.1, "No [#1].", ["Aspirin lowered the risk."]) == 0.0


@given(st.text(max_size=200))
def test_withholding_any_reply_opens_with_the_unsettled_sentence(reply: str) -> None:
    text = withheld(reply, UNSETTLED)
    assert text.startswith(UNSETTLED)
    assert not text[len(UNSETTLED) :].lstrip().lower().startswith(("yes.", "no."))


def test_the_risk_coverage_curve_replays_the_confidences(tmp_path: Path) -> None:
    import attrs

    @attrs.frozen
    class Result:
        grounded: bool
        verdict: str | None
        verdict_right: bool | None
        verdict_confidence: float | None
        verdict_withheld: bool

    results = [
        Result(True, "yes", True, 0.9, False),
        Result(True, "yes", False, 0.3, True),
        Result(True, "no", False, 0.1, True),
        Result(False, None, False, None, False),
    ]
    figures = verdict_figures(results)
    assert (figures.labelled, figures.stated, figures.right, figures.withheld) == (4, 1, 1, 2)
    assert (figures.precision, figures.coverage) == (1.0, 0.25)
    at = {p.threshold: p for p in figures.curve}
    assert (at[0.0].stated, at[0.0].precision) == (3, pytest.approx(0.3333, abs=1e-4))
    assert (at[0.5].stated, at[0.5].precision, at[0.5].coverage) == (1, 1.0, 0.25)
    plot = plot_curve(figures, tmp_path / "verdicts.png")
    if importlib.util.find_spec("matplotlib") is None:  # kb-core without the evaluation extra
        assert plot is None and not (tmp_path / "verdicts.png").exists()
    else:
        assert plot is not None and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
