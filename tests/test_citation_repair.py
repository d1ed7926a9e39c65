"""Citation repair: the loose forms small models write become [#n] only when unambiguous."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb_core.answers.citations import CitableSource, find_markers, repair_citations

SOURCES = [
    CitableSource(1, "notes/CHANGELOG.txt", ("Changelog", "Heliograph 2.0")),
    CitableSource(2, "notes/release-process.md", ("Release process",)),
    CitableSource(3, "notes/release-process.md", ("Rollback",)),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Released in 2024 [1].", "Released in 2024 [#1]."),
        ("Released [#1, #2].", "Released [#1][#2]."),
        ("Released [1, 2].", "Released [#1][#2]."),
        ("Released [1][2].", "Released [#1][#2]."),
        ("Released [#1][#2].", "Released [#1][#2]."),
        ("Released (#2).", "Released [#2]."),
        ("Released [ #1 ].", "Released [#1]."),
        ("Released 【1】.", "Released [#1]."),
        ("Released [CHANGELOG.txt].", "Released [#1]."),
        ("Released [notes/CHANGELOG.txt].", "Released [#1]."),
        ("Released [doc=notes/CHANGELOG.txt].", "Released [#1]."),
        ("Rolled back [Rollback].", "Rolled back [#3]."),
        ("Copied [#2 doc=notes/release-process.md heading=Release process span=L1-L9].", "Copied [#2]."),
        ("明长城的总长度为8851.8公里。#1", "明长城的总长度为8851.8公里。[#1]"),
        ("It is 45 cm. #2", "It is 45 cm. [#2]"),
    ],
)
def test_unambiguous_loose_forms_become_markers(text: str, expected: str) -> None:
    assert repair_citations(text, SOURCES) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Two chunks of one file [release-process.md].",  # markers 2 and 3 share that document: ambiguous
        "A footnote [7].",  # not packed
        "Mixed [1, 7].",  # one of them not packed
        "A list item (1) and (2).",  # parentheses without # are prose
        "Code vec![1] and arr[1].",
        "A reference link [label][1] and [the docs](https://example.org).",
        "An unknown name [README.md].",
        "A strict marker that was not packed [#9] stays as it is.",
        "See issue #1 for details.",  # a bare number inside a sentence is prose
        "Done. #12",  # not packed
    ],
)
def test_ambiguous_or_unknown_forms_stay_as_they_are(text: str) -> None:
    assert repair_citations(text, SOURCES) == text


LOOSE_PIECES = [
    "[1]",
    "[2]",
    "[3]",
    "[7]",
    "[#1, #2]",
    "(#3)",
    "[CHANGELOG.txt]",
    "[release-process.md]",
    "[Rollback]",
    "[label]",
    "(1)",
    "[#9]",
    "[#2]",
    "vec!",
    "]",
    "[",
    "#",
    " ",
    "x",
    "\n",
    "。",
    "가",
]


@settings(max_examples=400)
@given(st.lists(st.sampled_from(LOOSE_PIECES), max_size=14), st.lists(st.integers(1, 5), min_size=0, max_size=4))
def test_repair_only_ever_adds_packed_markers_and_is_idempotent(pieces: list[str], packed: list[int]) -> None:
    sources = [s for s in SOURCES if s.marker in packed] or SOURCES[:1]
    allowed = {s.marker for s in sources}
    text = "".join(pieces)
    repaired = repair_citations(text, sources)
    before, after = find_markers(text), find_markers(repaired)
    new = list(after)
    for marker in before:  # every strict marker survives
        new.remove(marker)
    assert all(m in allowed for m in new)
    assert repair_citations(repaired, sources) == repaired


@settings(max_examples=300)
@given(st.text(max_size=200))
def test_repair_never_raises_and_leaves_bracketless_text_alone(text: str) -> None:
    repaired = repair_citations(text, SOURCES)
    if not any(c in text for c in "[(［【"):
        assert repaired == text
