"""A stored document's text put back from its chunks (``kb_core.commands.stored_lines``), as kb serve and
kb mcp show it."""

from __future__ import annotations

from kb_core import Chunk
from kb_core.commands import stored_lines
from kb_core.storage.lines import MAX_LINES


def chunk(ordinal: int, start: int, end: int, text: str) -> Chunk:
    return Chunk(f"d#{ordinal}", "d", ordinal, text, "h", start, end)


def test_lines_are_put_back_from_chunks_exactly_or_fitted_into_their_range() -> None:
    exact = [chunk(0, 2, 4, "a\nb\nc"), chunk(1, 4, 6, "c\nd\ne"), chunk(2, 9, 9, "z")]  # overlap, gap
    assert stored_lines(exact) == ([None, "a", "b", "c", "d", "e", None, None, "z"], True)
    joined = [chunk(0, 1, 2, "Title\n\n\nbody text\nmore")]  # more text lines than its range
    assert stored_lines(joined) == (["Title", "body text more"], False)
    blocks = [chunk(0, 1, 3, "Page 2\n\nResults\n\nOutput")]  # only the joiners' blank lines are extra
    assert stored_lines(blocks) == (["Page 2", "Results", "Output"], True)
    short = [chunk(0, 1, 4, "one\ntwo")]  # fewer (HTML)
    assert stored_lines(short) == (["one", "two", "", ""], False)
    assert stored_lines([chunk(0, 0, 3, "bad"), chunk(1, 5, 4, "bad")]) == ([], True)
    assert len(stored_lines([chunk(0, MAX_LINES + 5, MAX_LINES + 5, "far")])[0]) == MAX_LINES
    assert stored_lines([chunk(0, 1, 1, "crlf\r")]) == (["crlf"], True)


def test_a_table_header_repeated_where_a_chunk_continues_the_table_is_not_a_line_again() -> None:
    table = [
        chunk(0, 1, 3, "Year | Sales\n2022 | 5\n2023 | 7"),
        chunk(1, 4, 5, "Year | Sales\n2024 | 9\n2025 | 11"),  # the header, outside the span
    ]
    assert stored_lines(table) == (["Year | Sales", "2022 | 5", "2023 | 7", "2024 | 9", "2025 | 11"], True)
    not_a_header = [chunk(0, 1, 1, "Intro"), chunk(1, 2, 3, "Other\n2024 | 9\n2025 | 11")]
    assert stored_lines(not_a_header) == (["Intro", "Other", "2024 | 9 2025 | 11"], False)
