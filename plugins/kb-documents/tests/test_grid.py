"""Table rows set on their columns: the empty cells a page does not draw, put back (kb_documents.grid)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from kb_documents.grid import ALIGN_EMS, align_tables, same_grid, table_columns
from kb_documents.layout import Glyph, make_runs, order_lines

COLUMN = 120.0  # points between the left edges of two columns
ROW = 14.0


def _glyphs(rows: Sequence[Sequence[str]], x: float = 50.0, top: float = 700.0, size: float = 10.0) -> list[Glyph]:
    """Glyphs of ``rows``, cell i of each row at column i (an empty cell draws nothing)."""
    width = 0.5 * size
    glyphs: list[Glyph] = []
    for r, cells in enumerate(rows):
        for c, text in enumerate(cells):
            left = x + c * COLUMN
            glyphs += [
                Glyph(ch, left + i * width, left + (i + 1) * width, top - r * ROW, size) for i, ch in enumerate(text)
            ]
    return glyphs


def _texts(rows: Sequence[Sequence[str]]) -> list[str]:
    return [line.text for line in align_tables(order_lines(make_runs(_glyphs(rows))))]


def test_a_header_over_a_column_of_labels_gets_its_empty_first_cell() -> None:
    rows = [("", "2019", "2018"), ("Sales", "5", "4"), ("Costs", "3", "2")]
    assert _texts(rows) == [" | 2019 | 2018", "Sales | 5 | 4", "Costs | 3 | 2"]


def test_a_value_missing_from_a_column_keeps_the_others_under_their_own() -> None:
    rows = [("Rate", "Domestic", "Abroad"), ("Discount", "4.0%", "1.9%"), ("Return", "", "3.4%")]
    assert _texts(rows)[2] == "Return |  | 3.4%"


def test_a_section_label_between_rows_is_a_row_of_the_table() -> None:
    rows = [
        ("", "2019", "2018"),
        ("Transport:", "", ""),
        ("Cars", "9", "8"),
        ("Industry:", "", ""),
        ("Pumps", "7", "6"),
    ]
    lines = align_tables(order_lines(make_runs(_glyphs(rows))))
    assert [line.text for line in lines] == [
        " | 2019 | 2018",
        "Transport: |  | ",
        "Cars | 9 | 8",
        "Industry: |  | ",
        "Pumps | 7 | 6",
    ]
    assert all(line.cells == 3 for line in lines)  # one table: the rows after a label keep the header


def test_one_cell_lines_before_or_after_a_table_stay_paragraphs() -> None:
    glyphs = _glyphs([("A note above the table",)], top=728)
    glyphs += _glyphs([("", "2019", "2018"), ("Sales", "5", "4")])
    glyphs += _glyphs([("A note below it",)], top=672)
    lines = align_tables(order_lines(make_runs(glyphs)))
    assert [(line.text, line.cells) for line in lines] == [
        ("A note above the table", 1),
        (" | 2019 | 2018", 3),
        ("Sales | 5 | 4", 3),
        ("A note below it", 1),
    ]


def test_a_long_line_between_two_tables_keeps_them_apart() -> None:
    glyphs = _glyphs([("Plant", "MWh", "Share"), ("Lake", "42", "41%")])
    glyphs += _glyphs(
        [("This sentence between the two tables is a paragraph of prose, not a label of a row.",)], top=672
    )
    glyphs += _glyphs([("Year", "Sum"), ("2019", "5")], top=658)
    texts = [line.text for line in align_tables(order_lines(make_runs(glyphs)))]
    assert texts[3:] == ["Year | Sum", "2019 | 5"]


def test_a_cell_wider_than_its_column_goes_to_the_column_it_covers_most() -> None:
    rows = [("", "2019", "2018"), ("", "(in millions)"), ("Rate", "4%", "3%")]
    assert _texts(rows) == [" | 2019 | 2018", " | (in millions) | ", "Rate | 4% | 3%"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["", "a", "12", "Total", "3.4%", "x y"]), min_size=1, max_size=5),
        min_size=1,
        max_size=8,
    )
)
def test_aligning_only_ever_adds_empty_cells(rows: list[list[str]]) -> None:
    lines = order_lines(make_runs(_glyphs(rows)))
    aligned = align_tables(lines)
    assert len(aligned) == len(lines)
    for before, after in zip(lines, aligned):
        assert after.sources == before.sources and after.top == before.top
        assert [c.text for c in after.spans if c.text] == [c.text for c in before.spans]
        assert after.text == " | ".join(c.text for c in after.spans) and after.cells == len(after.spans)
        assert after.cells >= before.cells


@st.composite
def grids(draw: st.DrawFn) -> tuple[tuple[float, float], ...]:
    """Columns as a page draws them: two or more x-ranges, left to right, an em (10 pt) or more apart."""
    columns = []
    left = draw(st.floats(0, 300))
    for _ in range(draw(st.integers(2, 6))):
        width = draw(st.floats(5, 120))
        columns.append((left, left + width))
        left += width + draw(st.floats(10, 80))
    return tuple(columns)


@settings(max_examples=200, deadline=None)
@given(above=grids(), below=grids(), shift=st.floats(-400, 400))
def test_columns_line_up_with_themselves_both_ways_and_not_once_moved_past_themselves(
    above: tuple[tuple[float, float], ...], below: tuple[tuple[float, float], ...], shift: float
) -> None:
    assert same_grid(above, above, 10.0)
    assert same_grid(above, below, 10.0) == same_grid(below, above, 10.0)
    moved = tuple((a + shift, b + shift) for a, b in above)
    if abs(shift) > max(b - a for a, b in above) + ALIGN_EMS * 10.0:
        assert not same_grid(above, moved, 10.0)  # no column is within half an em of itself any more
    if len(below) != len(above):
        assert not same_grid(above, below, 10.0)


def test_the_columns_of_a_table_are_those_its_rows_are_set_on() -> None:
    rows = [("", "2019", "2018"), ("Sales", "5", "4"), ("Costs", "3", "2")]
    columns = table_columns(align_tables(order_lines(make_runs(_glyphs(rows)))))
    assert [round(left) for left, _ in columns] == [50, 50 + COLUMN, 50 + 2 * COLUMN]
    assert table_columns([]) == ()
