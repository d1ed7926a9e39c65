"""Sentence splitting in every script, content units, and sentence-level attribution."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb_core.answers.attribution import attribute, content_units, split_sentences
from kb_core.answers.citations import CitableSource

CHANGELOG = "Heliograph 2.0 was released on 18 June 2024. It adds TLS support and a new config format."
PROCESS = "Releases are cut on Tuesdays. Every release is signed by two maintainers."
PASSAGES = {1: CHANGELOG, 2: PROCESS}
SOURCES = [CitableSource(1, "notes/CHANGELOG.txt", ("Changelog",)), CitableSource(2, "notes/release-process.md", ())]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("One. Two! Three?", ["One.", "Two!", "Three?"]),
        ("Version 2.5 is out [#1]. It is fast [#2].", ["Version 2.5 is out [#1].", "It is fast [#2]."]),
        ("Released in 2024. [#1] Signed by two. [#2]", ["Released in 2024. [#1]", "Signed by two. [#2]"]),
        ("Dr. Kim wrote it. E.g. this one.", ["Dr. Kim wrote it.", "E.g. this one."]),
        ("서울은 수도이다. 인구가 많다.", ["서울은 수도이다.", "인구가 많다."]),
        ("长城很长。它在中国[#1]。", ["长城很长。", "它在中国[#1]。"]),
        ("東京は首都です。人口が多い！", ["東京は首都です。", "人口が多い！"]),
        ("- first item\n- second item", ["- first item", "- second item"]),
    ],
)
def test_sentences_split_in_every_script(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@settings(max_examples=300)
@given(st.text(max_size=300))
def test_splitting_loses_nothing_but_white_space(text: str) -> None:
    joined = "".join(split_sentences(text))
    assert "".join(joined.split()) == "".join(text.split())


def test_content_units_are_words_numbers_and_cjk_bigrams() -> None:
    assert {"2024", "relea", "tl"} <= content_units("Released in 2024 with TLS [#1].")
    assert "the" not in content_units("the answer")
    assert {"서울", "울은"} <= content_units("서울은")
    assert {"长城"} <= content_units("长城")


def test_a_cited_supported_claim_keeps_its_citation() -> None:
    [s] = attribute("It was released on 18 June 2024 [#1].", "When was Heliograph 2.0 released?", PASSAGES, SOURCES)
    assert (s.kind, s.cited, s.supported_by, s.attributed) == ("claim", (1,), (1,), False)
    assert s.supported


def test_an_uncited_claim_gets_the_passage_that_supports_it() -> None:
    [s] = attribute("It was released on 18 June 2024.", "When was Heliograph 2.0 released?", PASSAGES, SOURCES)
    assert (s.cited, s.supported_by, s.attributed) == ((), (1,), True)


def test_a_wrongly_cited_claim_is_attributed_to_the_right_passage() -> None:
    [s] = attribute("Releases are signed by two maintainers [#1].", "Who signs releases?", PASSAGES, SOURCES)
    assert s.cited == (1,) and s.supported_by == (2,) and s.attributed


def test_a_sentence_about_the_sources_is_not_a_claim() -> None:
    sentences = attribute(
        "Heliograph 2.0 was released on 18 June 2024 [#1]. This information is found in the [CHANGELOG.txt] entry "
        "[#1] and the release-process.md entry [#2].",
        "When was Heliograph 2.0 released?",
        PASSAGES,
        SOURCES,
    )
    assert [s.kind for s in sentences] == ["claim", "about_sources"]
    assert all(s.supported for s in sentences)


def test_an_invented_number_is_never_supported() -> None:
    [s] = attribute(
        "Heliograph 2.0 was released on 18 June 2023 [#1].", "When was Heliograph 2.0 released?", PASSAGES, SOURCES
    )
    assert s.kind == "claim" and not s.supported and s.supported_by == ()


def test_restating_the_question_adds_no_claim() -> None:
    [s] = attribute("Heliograph 2.0 was released [#1].", "When was Heliograph 2.0 released?", PASSAGES, SOURCES)
    assert s.kind == "no_new_content"


def test_korean_and_chinese_claims_are_checked_by_bigrams() -> None:
    passages = {1: "김치찌개는 묵은지와 돼지고기로 끓인다.", 2: "长城始建于春秋战国时期。"}
    [ko] = attribute("묵은지와 돼지고기로 끓인다 [#1].", "김치찌개는 무엇으로 끓이나요?", passages)
    [zh] = attribute("长城始建于春秋战国时期。", "长城是什么时候建的？", passages)
    [bad] = attribute("长城建于明朝末年[#2]。", "长城是什么时候建的？", passages)
    assert ko.supported_by == (1,) and zh.supported_by == (2,) and not bad.supported


# -- support of an answer by the passages it cites ------------------------------------------------------


def test_a_hallucination_wearing_a_valid_citation_has_no_support() -> None:
    # what the real default model answered when the gate was disabled for an off-topic question
    answer = "The 2018 FIFA World Cup was won by [#1] Seoul, South Korea."
    evidence = ["## 교통\n\n서울 지하철은 1974년 8월 15일에 1호선이 처음 개통되었습니다."]
    [claim] = attribute(answer, "Who won the 2018 FIFA World Cup?", dict(enumerate(evidence, start=1)))
    assert claim.kind == "claim" and not claim.supported and claim.support == 0.0


@pytest.mark.parametrize(
    ("answer", "question", "evidence"),
    [
        (
            "The Heliograph daemon listens on TCP port 7341 by default. [#1]",
            "What TCP port does the Heliograph daemon listen on?",
            "The configuration lives in `heliograph.toml`. The daemon listens on TCP port 7341 by default.",
        ),
        (
            "According to the evidence, the centre should reach 55 to 65 °C within four days [#2].",
            "What temperature should the centre of a Berkeley compost pile reach?",
            "The centre of the pile should reach 55 to 65 °C within four days.",
        ),
        (
            "서울 지하철 1호선은 1974년 8월 15일에 개통되었습니다. [#1]",
            "서울 지하철 1호선은 언제 개통되었나요?",
            "서울 지하철은 1974년 8월 15일에 1호선이 처음 개통되었습니다.",
        ),
        (
            "明长城的总长度是8851.8公里。[#1]",
            "明长城的总长度是多少公里？",
            "根据2009年公布的调查结果，明长城的总长度为8851.8公里。",
        ),
    ],
)
def test_faithful_answers_are_supported(answer: str, question: str, evidence: str) -> None:
    sentences = attribute(answer, question, {1: evidence})
    assert [s.kind for s in sentences] == ["claim"]
    assert sentences[0].supported_by == (1,) and sentences[0].support is not None and sentences[0].support >= 0.75


def test_an_answer_that_only_restates_the_question_adds_nothing_to_check() -> None:
    [sentence] = attribute("The daemon port [#1]", "What is the daemon port?", {1: "unrelated"})
    assert sentence.kind == "no_new_content" and sentence.supported


def test_content_units_split_words_numbers_and_cjk_bigrams() -> None:
    assert content_units("The motor draws 4.5 amperes [#3]") == {"motor", "draw", "4.5", "amper"}
    assert content_units("서울은 수도") == {"서울", "울은", "수도"}
    assert content_units("according to the evidence") == set()


@settings(max_examples=200)
@given(st.text(), st.text(), st.lists(st.text(), max_size=3))
def test_attribution_never_raises_and_support_is_a_share(answer: str, question: str, evidence: list[str]) -> None:
    for sentence in attribute(answer, question, dict(enumerate(evidence, start=1))):
        assert sentence.support is None or 0.0 <= sentence.support <= 1.0
        assert set(sentence.supported_by) <= set(range(1, len(evidence) + 1))
    for sentence in attribute(answer, question, {1: answer}):
        assert sentence.supported


def test_a_number_shared_with_the_question_must_be_in_the_supporting_passage() -> None:
    question = "When did line 2 of the metro open?"
    passages = {1: "Line 1 of the metro opened on 12 March 1987.", 2: "The metro's line 2 opened in 1991."}
    copied, right = (
        attribute("Line 2 of the metro opened on 12 March 1987 [#1].", question, passages),
        attribute("Line 2 opened in 1991 [#2].", question, passages),
    )
    assert copied[0].supported_by == ()  # the sibling about line 1 does not support a claim about line 2
    assert right[0].supported_by == (2,)


def test_the_named_number_may_be_in_the_passage_headings_or_path() -> None:
    sources = [CitableSource(1, "metro/line-2.md", ("Line 2", "History"))]
    supports = attribute(
        "It opened in 1991 on line 2 [#1].", "When did line 2 open?", {1: "It opened in 1991."}, sources
    )
    assert supports[0].supported_by == (1,)


def test_korean_units_glued_to_particles_and_polite_endings() -> None:
    passage = {1: "솔뫼산성의 둘레는 5.87km로 가장 크다. 별섬의 면적은 7.9㎢이고 약 640명이 산다."}
    assert attribute("5.87km [#1].", "솔뫼산성의 둘레는 몇 km인가요?", passage)[0].supported_by == (1,)
    assert attribute("별섬의 면적은 7.9㎢입니다 [#1].", "별섬의 면적은 얼마인가요?", passage)[0].supported_by == (1,)
