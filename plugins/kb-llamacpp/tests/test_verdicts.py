"""OpenWithVerdict on made-up scores: which first token it leaves on top, and only for the first token."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kb_core.plugin import VerdictOpening
from kb_llamacpp.verdicts import OpenWithVerdict, spellings

YES, NO, OTHER = 1, 2, 3


def test_spellings_cover_case_and_a_leading_space() -> None:
    assert spellings("Yes") == ("Yes", "yes", "YES", " Yes", " yes")
    assert spellings("예") == ("예", " 예")


@given(
    st.floats(-5, 5),
    st.floats(-5, 5),
    st.floats(-5, 5),
    st.floats(0.01, 0.99, exclude_min=False),
    st.integers(0, 3),
    st.sampled_from([None, set(), {OTHER}]),
)
def test_the_first_token_is_decided_by_the_share_of_no(
    yes: float, no: float, other: float, share: float, calls: int, alternatives: set[int] | None
) -> None:
    scores = np.array([-10.0, yes, no, other], dtype=np.float32)
    opening = OpenWithVerdict(VerdictOpening("Yes", "No", share), {YES}, {NO}, alternatives)
    decided = opening(None, scores.copy())
    winner = int(np.argmax(decided))
    if int(np.argmax(scores)) == OTHER and (alternatives is None or OTHER in alternatives):
        assert np.array_equal(decided, scores) and opening.chosen is None  # an allowed other opening
    else:  # a verdict, or an opening that is neither a verdict nor allowed: the verdict replaces it
        p_no = float(np.exp(no) / (np.exp(yes) + np.exp(no)))
        assert winner == (NO if p_no >= share else YES)
        assert opening.chosen == ("no" if winner == NO else "yes")
        assert np.array_equal(np.delete(decided, winner), np.delete(scores, winner))  # only the verdict moved
    for _ in range(calls):  # every later token is the model's own
        assert np.array_equal(opening(None, scores.copy()), scores)


def test_without_tokens_for_a_word_nothing_is_decided() -> None:
    for alternatives in (None, set()):
        opening = OpenWithVerdict(VerdictOpening("Yes", "No", 0.1), {YES}, set(), alternatives)
        scores = np.array([0.0, 1.0, 1.0, 3.0], dtype=np.float32)
        assert np.array_equal(opening(None, scores.copy()), scores) and opening.chosen is None
