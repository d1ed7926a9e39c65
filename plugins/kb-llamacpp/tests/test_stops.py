"""The stop-string scanner: whatever the split into pieces, output is the text before the first stop."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kb_llamacpp.stops import StopScanner

ALPHABET = "ab\n[#질"


def _expected(text: str, stops: list[str]) -> tuple[str, bool]:
    hits = [text.find(s) for s in stops if s and s in text]
    return (text[: min(hits)], True) if hits else (text, False)


def _run(pieces: list[str], stops: list[str]) -> tuple[str, bool]:
    scanner = StopScanner(tuple(stops))
    out = "".join(scanner.feed(p) for p in pieces) + scanner.flush()
    return out, scanner.stopped


@given(st.lists(st.text(ALPHABET, max_size=6), max_size=12), st.lists(st.text(ALPHABET, max_size=4), max_size=3))
def test_output_is_text_before_first_stop(pieces: list[str], stops: list[str]) -> None:
    assert _run(pieces, stops) == _expected("".join(pieces), stops)


@given(
    st.lists(st.text(ALPHABET, max_size=6), max_size=12),
    st.lists(st.text(ALPHABET, min_size=1, max_size=4), max_size=3),
)
def test_released_text_never_contains_a_stop(pieces: list[str], stops: list[str]) -> None:
    scanner = StopScanner(tuple(stops))
    released = ""
    for piece in pieces:
        released += scanner.feed(piece)
        assert not any(s in released for s in stops)


def test_holds_back_a_partial_stop_then_releases_it() -> None:
    scanner = StopScanner(("\n\n[질문]",))
    assert scanner.feed("answer [#1]\n") == "answer [#1]"
    assert scanner.feed("\n[") == ""
    assert scanner.feed("x") == "\n\n[x"
    assert not scanner.stopped


def test_stop_spanning_pieces_ends_the_stream() -> None:
    scanner = StopScanner(("END",))
    assert scanner.feed("done E") == "done "
    assert scanner.feed("ND and more") == ""
    assert scanner.stopped
    assert scanner.feed("ignored") == "" and scanner.flush() == ""
