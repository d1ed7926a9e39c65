"""Scores in [0, 1] that carry absolute evidence: the curve, and on-topic vs off-topic questions."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core import Chunk, Config, SearchQuery
from kb_core.plugin import IndexContext
from kb_core.testing import StoreOfRecord
from kb_tantivy import TantivyIndex, make_index, scoring


@given(raw=st.floats(allow_nan=True, allow_infinity=True), mass=st.floats(allow_nan=True, allow_infinity=True))
def test_normalize_is_always_in_the_unit_interval(raw: float, mass: float) -> None:
    assert 0.0 <= scoring.normalize(raw, mass) <= 1.0


@given(mass=st.floats(min_value=0.01, max_value=1e4), a=st.floats(0, 1e4), b=st.floats(0, 1e4))
def test_normalize_is_monotone_in_the_raw_score(mass: float, a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert scoring.normalize(low, mass) <= scoring.normalize(high, mass)


def test_normalize_reference_points() -> None:
    assert scoring.normalize(0.0, 5.0) == 0.0
    assert scoring.normalize(scoring.HALF * 5.0, 5.0) == pytest.approx(0.5)
    assert scoring.normalize(5.0, 5.0) == pytest.approx(1 / (1 + scoring.HALF**2))
    assert scoring.normalize(1.0, 0.0) == 0.0


def test_idf_matches_tantivy_bm25() -> None:
    assert scoring.idf(1, 10) == pytest.approx(math.log(1 + 9.5 / 1.5))
    assert scoring.evidence_mass([0, 10], 10) == pytest.approx(scoring.idf(0, 10) + scoring.idf(10, 10))


HANDBOOK = [
    "Descale the espresso machine every two months with a citric acid solution to remove limescale.",
    "Grind the coffee beans finely; an espresso shot needs about eighteen grams of ground coffee.",
    "Tamp the ground coffee evenly with about fifteen kilograms of pressure before brewing.",
    "The boiler heats water to ninety-three degrees; let the machine warm up for twenty minutes.",
    "Backflush the group head weekly with a blind basket and detergent to clean the shower screen.",
    "Steam milk to sixty degrees for a cappuccino; purge the steam wand before and after use.",
    "Store coffee beans in an airtight container away from light, heat and moisture.",
    "If the pump is loud and no water flows, the water tank is empty or the inlet is blocked.",
    "Replace the group gasket once a year when the portafilter starts leaking around the rim.",
    "A sour shot means under-extraction: grind finer or raise the brewing temperature.",
    "A bitter shot means over-extraction: grind coarser or shorten the shot time.",
    "Clean the drip tray and empty the knock box daily to prevent mould.",
]

ON_TOPIC = [
    "How often should I descale the espresso machine?",
    "Why does my espresso shot taste sour?",
    "How hot should the milk be for a cappuccino?",
    "What do I do when the pump is loud and no water comes out?",
    "How should coffee beans be stored?",
]

OFF_TOPIC = [
    "Who won the football world cup in 2018?",
    "What is the capital of France?",
    "How do I file my taxes online?",
    "How many moons does Jupiter have?",
    "What is a good recipe for vegetable lasagna?",
]


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TantivyIndex]:
    kb = tmp_path_factory.mktemp("handbook")
    store = StoreOfRecord(kb)
    index = make_index(IndexContext(Config(), name="tantivy", directory=Path(kb) / "indexes" / "tantivy", store=store))
    chunks = [
        Chunk(f"espresso.md:{i}", "espresso.md", i, text, hashlib.sha256(text.encode()).hexdigest(), i + 1, i + 1)
        for i, text in enumerate(HANDBOOK)
    ]
    index.upsert(chunks)
    index.commit()
    yield index
    index.close()
    store.close()


def top_score(index: TantivyIndex, question: str) -> float:
    hits = index.search(SearchQuery(question, k=3))
    return hits[0].score if hits else 0.0


def test_every_on_topic_question_outscores_every_off_topic_one(handbook: TantivyIndex) -> None:
    on = [top_score(handbook, q) for q in ON_TOPIC]
    off = [top_score(handbook, q) for q in OFF_TOPIC]
    assert min(on) > max(off), (on, off)


WELL_MATCHED = ["How often should I descale the espresso machine?", "How should coffee beans be stored?"]


def test_the_default_gate_passes_well_matched_questions_and_refuses_off_topic(handbook: TantivyIndex) -> None:
    gate = Config().rag.gate("lexical")
    assert all(top_score(handbook, q) >= gate for q in WELL_MATCHED)
    assert all(top_score(handbook, q) < gate for q in OFF_TOPIC)


def test_on_topic_top_hits_are_graded_not_pinned_to_one(handbook: TantivyIndex) -> None:
    scores = [top_score(handbook, q) for q in ON_TOPIC]
    assert all(0.0 < s < 1.0 for s in scores) and len(set(scores)) == len(scores)


def test_question_words_alone_are_no_evidence(handbook: TantivyIndex) -> None:
    assert top_score(handbook, "What is it and how do I do it?") < Config().rag.gate("lexical") / 2


def test_a_question_whose_words_are_absent_scores_nothing(handbook: TantivyIndex) -> None:
    assert handbook.search(SearchQuery("quantum chromodynamics lattice")) == []
