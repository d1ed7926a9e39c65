"""Saved answers stay true: a citation is kept, re-anchored or marked stale, never anything else."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kb_core.storage.freshness import CitedText, fingerprint, normalised, recheck, span_lines

LINE = st.text(alphabet="abcxyz 0123456789.", min_size=0, max_size=12).map(str.rstrip)


@st.composite
def edited_documents(draw: st.DrawFn) -> tuple[list[str], CitedText, list[str]]:
    """A document, a citation of some of its lines, and the document after random edits."""
    before = draw(st.lists(LINE, min_size=1, max_size=30))
    start = draw(st.integers(1, len(before)))
    end = draw(st.integers(start, min(len(before), start + 4)))
    cited = CitedText("a.md", start, end, "\n".join(before[start - 1 : end]))
    after = list(before)
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "change", "move"]))
        where = draw(st.integers(0, len(after)))
        if kind == "insert":
            after[where:where] = draw(st.lists(LINE, min_size=1, max_size=3))
        elif kind == "delete" and after:
            del after[min(where, len(after) - 1)]
        elif kind == "change" and after:
            after[min(where, len(after) - 1)] = draw(LINE)
        elif kind == "move" and len(after) > 2:
            section = after[: draw(st.integers(1, len(after) - 1))]
            after = after[len(section) :] + section
    return before, cited, after


@given(edited_documents())
def test_a_citation_is_kept_reanchored_to_its_exact_text_or_stale(case: tuple[list[str], CitedText, list[str]]) -> None:
    _before, cited, after = case
    outcome = recheck(cited, after)
    span = cited.end_line - cited.start_line + 1
    wanted = normalised(cited.text)
    at_its_lines = "\n".join(after[cited.start_line - 1 : cited.end_line]) if cited.end_line <= len(after) else None
    if at_its_lines is not None and normalised(at_its_lines) == wanted:
        assert outcome.state == "valid" and (outcome.start_line, outcome.end_line) == (cited.start_line, cited.end_line)
        return
    places = [
        p for p in range(1, len(after) - span + 2) if normalised("\n".join(after[p - 1 : p - 1 + span])) == wanted
    ]
    if len(places) == 1:
        assert outcome.state == "reanchored"
        assert normalised("\n".join(after[outcome.start_line - 1 : outcome.end_line])) == wanted
        assert outcome.end_line - outcome.start_line + 1 == span
    else:
        assert outcome.state == "stale"
        assert outcome.reason == ("ambiguous" if places else "changed")


def test_a_line_added_above_reanchors() -> None:
    before = ["# Heliograph", "", "The daemon listens on port 8080.", "It logs to syslog."]
    cited = CitedText("h.md", 3, 4, "\n".join(before[2:4]))
    outcome = recheck(cited, ["# Heliograph", "", "A new introduction.", "", *before[2:]])
    assert (outcome.state, outcome.start_line, outcome.end_line) == ("reanchored", 5, 6)


def test_a_changed_number_is_stale_with_both_wordings() -> None:
    cited = CitedText("h.md", 1, 1, "The daemon listens on port 8080.")
    outcome = recheck(cited, ["The daemon listens on port 9090."])
    assert (outcome.state, outcome.reason) == ("stale", "changed")
    assert outcome.now == "The daemon listens on port 9090."


def test_a_deleted_file_is_stale() -> None:
    assert recheck(CitedText("h.md", 1, 1, "x"), None).reason == "removed"


def test_text_that_now_stands_twice_is_stale_not_guessed() -> None:
    cited = CitedText("h.md", 1, 1, "Backups run nightly.")
    outcome = recheck(cited, ["Intro.", "Backups run nightly.", "Backups run nightly."])
    assert (outcome.state, outcome.reason) == ("stale", "ambiguous")


def test_unknown_lines_never_match() -> None:
    cited = CitedText("h.md", 1, 2, "A\nB")
    assert recheck(cited, ["A", None]).state == "stale"


def test_line_endings_and_trailing_blanks_do_not_matter() -> None:
    assert fingerprint("A  \r\nB  ") == fingerprint("A\nB")
    assert recheck(CitedText("h.md", 1, 2, "A\r\nB  "), ["A", "B"]).state == "valid"


def test_a_table_chunk_is_checked_by_its_rows_not_its_repeated_header() -> None:
    """A chunk that continues a table opens with the header row, which lies outside its span."""
    before = ["Item | Price", "apple | 1", "pear | 2", "plum | 3"]
    cited = CitedText("t.csv", 3, 4, "Item | Price\npear | 2\nplum | 3")
    assert recheck(cited, before).state == "valid"
    moved = recheck(cited, ["Prices", *before])
    assert (moved.state, moved.start_line, moved.end_line) == ("reanchored", 4, 5)
    changed = recheck(cited, ["Item | Price", "apple | 1", "pear | 9", "plum | 3"])
    assert (changed.state, changed.now) == ("stale", "pear | 9\nplum | 3")


def test_span_lines_drops_only_a_repeated_header() -> None:
    assert span_lines(["A | B", "r2", "r3"], 2, {"A | B"}) == ["r2", "r3"]
    assert span_lines(["A | B", "r2", "r3"], 2, {"other"}) == ["A | B", "r2", "r3"]  # not a line of the document
    assert span_lines(["Note", "See below"], 1, {"Note"}) == ["Note", "See below"]  # a line, but not a table row
    assert span_lines(["para", "", "code"], 2, {"para"}) == ["para", "", "code"]  # blocks joined by a blank line
    assert span_lines(["r2", "r3"], 2, {"r2"}) == ["r2", "r3"]
