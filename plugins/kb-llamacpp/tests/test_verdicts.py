"""OpenWithVerdict on made-up scores: which first token it leaves on top, and only for the first token."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kb_core.types import VerdictOpening
from kb_llamacpp.verdicts import OpenWithVerdict, spellings

YES, NO, OTHER = 1, 2, 3


def _opening(share: float) -> OpenWithVerdict:
    return OpenWithVerdict(VerdictOpening("Yes", "No", share), {YES}, {NO})


def test_spellings_cover_case_and_a_leading_space() -> None:
    assert spellings("Yes") == ("Yes", "yes", "YES", " Yes", " yes")
    assert spellings("예") == ("예", " 예")


@given(
    st.floats(-5, 5), st.floats(-5, 5), st.floats(-5, 5), st.floats(0.01, 0.99, exclude_min=False), st.integers(0, 3)
)
def test_the_first_token_is_decided_by_the_share_of_no(
    yes: float, no: float, other: float, share: float, calls: int
) -> None:
    scores = np.array([-10.0, yes, no, other], dtype=np.float32)
    opening = _opening(share)
    decided = opening(None, scores.copy())
    winner = int(np.argmax(decided))
    if int(np.argmax(scores)) == OTHER:
        assert np.array_equal(decided, scores) and opening.chosen is None
    else:
        p_no = float(np.exp(no) / (np.exp(yes) + np.exp(no)))
        assert winner == (NO if p_no >= share else YES)
        assert opening.chosen == ("no" if winner == NO else "yes")
    for _ in range(calls):  # every later token is the model's own
        assert np.array_equal(opening(None, scores.copy()), scores)


def test_without_tokens_for_a_word_nothing_is_decided() -> None:
    opening = OpenWithVerdict(VerdictOpening("Yes", "No", 0.1), {YES}, set())
    scores = np.array([0.0, 3.0, 1.0, 0.0], dtype=np.float32)
    assert np.array_equal(opening(None, scores.copy()), scores) and opening.chosen is None
