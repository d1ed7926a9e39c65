"""The analysis chain: CJK bigrams, stemming, query terms and snippets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kb_tantivy import analysis


def test_cjk_runs_become_bigrams_and_latin_text_is_untouched() -> None:
    spread = analysis.spread_cjk("서울특별시의 인구는 iPhone手机")
    assert spread.split() == ["서울", "울특", "특별", "별시", "시의", "인구", "구는", "iPhone", "手机"]


def test_single_cjk_character_stays_a_token() -> None:
    assert analysis.query_terms("猫") == ["猫"]


def test_query_terms_are_stemmed_lowercased_and_distinct() -> None:
    assert analysis.query_terms("Running RUNS runners 北京北京") == ["run", "runner", "北京", "京北"]


def test_query_syntax_characters_are_plain_separators() -> None:
    assert analysis.query_terms('title:foo AND (bar OR "baz" -qux 🎉') == ["titl", "foo", "bar", "baz", "qux"]


def test_stopwords_are_dropped_unless_nothing_else_is_left() -> None:
    assert analysis.query_terms("How do I descale the machine?") == ["descal", "machin"]
    assert analysis.query_terms("to be or not to be") == ["to", "be", "or", "not"]


def test_snippet_is_short_and_centred_on_the_matches() -> None:
    text = "Filler sentence without the words. " * 20 + "Dogs were running in the park. " + "More filler here. " * 20
    snippet = analysis.make_snippet(text, analysis.query_terms("running dog"), width=120)
    assert "Dogs were running" in snippet
    assert len(snippet) <= 122
    assert snippet.startswith("…") and snippet.endswith("…")


def test_snippet_finds_a_word_inside_a_cjk_run() -> None:
    text = "다른 내용입니다. " * 30 + "서울특별시의 인구는 약 950만 명이다." + " 끝." * 30
    assert "인구는" in analysis.make_snippet(text, analysis.query_terms("인구"))


def test_snippet_without_a_match_is_the_beginning() -> None:
    assert analysis.make_snippet("Alpha beta gamma.", ["zzz"]) == "Alpha beta gamma."


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=600), query=st.text(max_size=40))
def test_snippet_never_raises_and_stays_bounded(text: str, query: str) -> None:
    snippet = analysis.make_snippet(text, analysis.query_terms(query), width=100)
    assert len(snippet) <= 102
    assert "\n" not in snippet
