"""Citations that name a slide, chapter or notebook cell (issue 46): ``deck.pptx#slide=7&L40-L52``,
``book.epub#chapter=3&L9-L20``, ``nb.ipynb#cell=4&L8-L9``, read by the one parser, :meth:`kb_core.Citation.parse`,
held to the bounds of kb_core.bounds and to the parts the document has, as ``page=`` is."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core import KbError
from kb_core.bounds import CELL, CHAPTER, LINE, PAGE, SLIDE
from kb_core.types import Citation

UNITS = {"page": PAGE, "slide": SLIDE, "chapter": CHAPTER, "cell": CELL}
NUMBERS = (
    st.integers(-3, 12).map(str)
    | st.integers(999_998, 1_000_002).map(str)
    | st.integers(-(10**30), 10**30).map(str)
    | st.integers(1, 3000).map(lambda n: "9" * n)
    | st.integers(0, 25).map(lambda n: "0" * n + "4")
)


@st.composite
def part_citations(draw: st.DrawFn) -> str:
    """Text shaped like a citation naming a part: units known and not, numbers in and out of bounds, parts dropped."""
    unit = draw(st.sampled_from([*UNITS, "slides", "Slide", "chap", "", "cell=1&slide"]))
    parts = [f"{unit}={draw(NUMBERS)}"] if draw(st.booleans()) else []
    if draw(st.booleans()):
        parts.append("xywh=" + ",".join(draw(NUMBERS) for _ in range(4)))
    parts.append(f"L{draw(NUMBERS)}-L{draw(NUMBERS)}")
    return draw(st.sampled_from(["deck.pptx", "book.epub", "a#b.ipynb", ""])) + "#" + "&".join(parts)


@given(st.text() | part_citations(), st.none() | st.integers(0, 5))
def test_any_text_is_a_citation_in_bounds_or_one_kb_error(text: str, parts: int | None) -> None:
    try:
        citation = Citation.parse(text, lambda _path: parts)
    except KbError as error:
        assert "\n" not in error.message and len(error.message) < 400
        return
    assert citation.path and 1 <= citation.start_line <= citation.end_line <= LINE.high
    fragment = text[len(citation.path) + 1 :]
    for unit, bound in UNITS.items():
        if fragment.startswith(f"{unit}="):
            number = int(fragment[len(unit) + 1 :].split("&")[0])
            assert bound.holds(number) and (parts is None or number <= parts)


@given(
    st.sampled_from(sorted(UNITS)),
    st.text(min_size=1, max_size=20),
    st.integers(1, int(LINE.high)),
    st.integers(0, 1000),
    st.integers(1, 1_000_000),
)
def test_every_part_link_kb_prints_reads_back_to_its_lines(
    unit: str, path: str, start: int, length: int, n: int
) -> None:
    end = min(start + length, int(LINE.high))
    printed = f"{path}#{unit}={n}&L{start}-L{end}"
    assert Citation.parse(printed) == Citation(path, start, end)
    assert Citation.parse(printed, lambda _path: n) == Citation(path, start, end)  # the document has that part


@pytest.mark.parametrize(
    ("text", "parts", "words"),
    [
        ("deck.pptx#slide=8&L1-L3", 7, "slide=8 is not a slide of 'deck.pptx': it has 7 slides"),
        ("book.epub#chapter=2&L1-L3", 1, "chapter=2 is not a chapter of 'book.epub': it has 1 chapter"),
        ("nb.ipynb#cell=1&L1-L3", 0, "it has no cells"),
        ("deck.pptx#slide=0&L1-L3", None, "slide = 0 in"),
        (
            "book.epub#chapter=1000001&L1-L3",
            None,
            "chapter = 1000001 in 'book.epub#chapter=1000001&L1-L3' is not a whole number from 1 to 1,000,000",
        ),
        (f"nb.ipynb#cell={'7' * 500}&L1-L3", None, "cell = 77777777777777777777… (500 digits)"),
        ("deck.pptx#slide=1&chapter=1&L1-L3", None, "not a citation"),
        ("deck.pptx#slides=1&L1-L3", None, "not a citation"),
        ("deck.pptx#slide=1", None, "not a citation"),
    ],
)
def test_a_part_out_of_bounds_or_missing_is_refused_in_one_line(text: str, parts: int | None, words: str) -> None:
    with pytest.raises(KbError) as refused:
        Citation.parse(text, lambda _path: parts)
    assert words in refused.value.message and "\n" not in str(refused.value)
    if "is not a" in words and "whole" not in words:
        assert refused.value.hint is not None and "kb pages finds it" in refused.value.hint
