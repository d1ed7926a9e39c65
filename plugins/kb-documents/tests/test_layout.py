"""Reading order from glyph geometry alone (no PDF library)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kb_documents.layout import Glyph, make_runs, order_lines


def _line(text: str, x: float, baseline: float, size: float = 10.0) -> list[Glyph]:
    width = 0.5 * size
    return [Glyph(c, x + i * width, x + (i + 1) * width, baseline, size) for i, c in enumerate(text)]


def test_interleaved_columns_are_read_column_by_column() -> None:
    glyphs: list[Glyph] = []
    for row in range(4):
        glyphs += _line(f"left column line number {row}", 50, 700 - 14 * row)
        glyphs += _line(f"right column line number {row}", 320, 700 - 14 * row)
    texts = [line.text for line in order_lines(make_runs(glyphs))]
    assert texts == [f"left column line number {r}" for r in range(4)] + [
        f"right column line number {r}" for r in range(4)
    ]


def test_a_full_width_title_above_columns_comes_first() -> None:
    glyphs = _line("A title that runs right across the whole width of the page text", 50, 760, 12)
    for row in range(3):
        glyphs += _line(f"left column line number {row}", 50, 700 - 14 * row)
        glyphs += _line(f"right column line number {row}", 320, 700 - 14 * row)
    texts = [line.text for line in order_lines(make_runs(glyphs))]
    assert texts[0].startswith("A title")
    assert texts[1:4] == [f"left column line number {r}" for r in range(3)]


def test_table_cells_stay_in_rows() -> None:
    glyphs: list[Glyph] = []
    for row, cells in enumerate((("Plant", "MWh", "Share"), ("Lakeside", "4210", "41%"), ("Ridgeback", "3875", "38%"))):
        for column, cell in enumerate(cells):
            glyphs += _line(cell, 50 + 150 * column, 700 - 20 * row)
    lines = order_lines(make_runs(glyphs))
    assert [line.text for line in lines] == ["Plant | MWh | Share", "Lakeside | 4210 | 41%", "Ridgeback | 3875 | 38%"]
    assert all(line.cells == 3 for line in lines)


def test_words_placed_one_by_one_in_any_order_make_one_line() -> None:
    words = ["gamma", "alpha", "beta"]
    positions = {"alpha": 50.0, "beta": 80.0, "gamma": 105.0}
    glyphs = [g for word in words for g in _line(word, positions[word], 700)]
    assert [line.text for line in order_lines(make_runs(glyphs))] == ["alpha beta gamma"]


def test_no_glyphs_no_lines() -> None:
    assert order_lines(make_runs([])) == []


def test_a_ligature_whose_letters_share_one_box_stays_in_its_word() -> None:
    glyphs = _line("de", 50, 700)
    glyphs += [Glyph("f", 60.0, 66.0, 700, 10.0), Glyph("i", 60.0, 66.0, 700, 10.0)]  # pdfium's "fi" ligature
    glyphs += _line("ned", 66, 700)
    assert [line.text for line in order_lines(make_runs(glyphs))] == ["defined"]


_GLYPHS = st.lists(
    st.builds(
        lambda c, x, w, y, s: Glyph(c, x, x + w, y, s),
        st.sampled_from("abcXYZ019.,"),
        st.floats(0, 600),
        st.floats(0, 20),
        st.floats(0, 800),
        st.floats(1, 30),
    ),
    max_size=300,
)


@settings(max_examples=200, deadline=None)
@given(_GLYPHS)
def test_every_glyph_is_read_exactly_once_whatever_the_geometry(glyphs: list[Glyph]) -> None:
    lines = order_lines(make_runs(glyphs))
    read = sorted("".join(line.text.replace(" | ", "") for line in lines).replace(" ", ""))
    assert read == sorted(g.char for g in glyphs)
