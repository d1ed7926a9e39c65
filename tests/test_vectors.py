"""The score mapping and snippet every vector index shares (kb_core.retrieval.vectors)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kb_core.plugin import make_snippet, score_mapping, similarity_to_score
from kb_core.testing import HashingEmbedder


@given(st.floats(-1.0, 1.0), st.floats(-1.0, 1.0), st.floats(0.0, 0.95))
def test_score_mapping_is_in_range_and_monotonic(a: float, b: float, floor: float) -> None:
    low, high = sorted((a, b))
    assert 0.0 <= similarity_to_score(low, floor) <= similarity_to_score(high, floor) <= 1.0
    assert similarity_to_score(1.0, floor) == 1.0
    assert similarity_to_score(floor, floor) == 0.0


def test_an_embedder_that_declares_no_scripts_models_every_query() -> None:
    assert score_mapping(HashingEmbedder(), "서울 지하철은 언제 개통되었나요?") == (0.0, True)


@given(st.text(max_size=600))
def test_a_snippet_is_the_start_of_the_text_with_whitespace_collapsed(text: str) -> None:
    snippet = make_snippet(text)
    flat = " ".join(text.split())
    assert snippet == flat or (snippet.endswith("…") and flat.startswith(snippet[:-1]) and len(snippet) <= 301)
