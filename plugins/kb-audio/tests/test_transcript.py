"""Transcript lines: a line per sentence, its stamp written and read back, lines mapped to the moment they cite."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kb_audio.transcript import MAX_WORDS, Word, lines, moments, read_stamp, stamp

words_st = st.lists(
    st.tuples(st.text(st.characters(categories=("L", "N", "P")), min_size=1, max_size=8), st.floats(0, 1e5)),
    max_size=120,
)


@given(st.floats(0, 1e7, allow_nan=False))
def test_a_stamp_reads_back_as_its_whole_seconds(seconds: float) -> None:
    assert read_stamp(f"[{stamp(seconds)}] words") == int(seconds)


@given(st.text(max_size=30))
def test_a_line_without_a_stamp_reads_as_none(text: str) -> None:
    if not (text.startswith("[") and "] " in text):
        assert read_stamp(text) is None


def test_stamps_are_hours_minutes_seconds() -> None:
    assert stamp(0) == "00:00:00" and stamp(723.9) == "00:12:03" and stamp(3600 * 101 + 61) == "101:01:01"
    assert read_stamp("[00:12:03] The budget.") == 723 and read_stamp("[00:61:00] no") is None


@given(words_st)
def test_lines_keep_every_word_in_order_and_end_at_sentence_ends(raw: list[tuple[str, float]]) -> None:
    ordered = sorted(raw, key=lambda w: w[1])
    words = [Word(" " + text, at, at + 0.1) for text, at in ordered]
    out = lines(words)
    assert " ".join(line.text for line in out).split() == [w.text.strip() for w in words]
    for line in out[:-1]:  # every line but the last ends a sentence or is full
        assert line.text.endswith((".", "?", "!", "…")) or len(line.text.split()) >= MAX_WORDS
    assert all(len(line.text.split()) <= MAX_WORDS for line in out)
    assert [line.start for line in out] == sorted(line.start for line in out)
    assert all(line.start <= line.end for line in out)


def test_a_sentence_is_a_line_stamped_with_its_first_word() -> None:
    words = [
        Word(" The", 723.4, 723.6),
        Word(" budget.", 723.6, 724.0),
        Word(" It", 730.2, 730.3),
        Word(" rose", 731, 732),
    ]
    out = lines(words)
    assert [line.written() for line in out] == ["[00:12:03] The budget.", "[00:12:10] It rose"]


def test_cited_lines_map_to_the_moment_from_their_first_stamp_to_the_next_line() -> None:
    written = ["[00:00:01] One.", "[00:12:03] Two.", "[00:12:41] Three."]
    assert moments(written, 2, 2) == (723, 761)
    assert moments(written, 1, 2) == (1, 761)
    assert moments(written, 3, 3, duration=770.2) == (761, 771)
    assert moments(written, 3, 3) == (761, None)
