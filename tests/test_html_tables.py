"""HTML tables: a row a line with every value under its column, and no page of colspans that makes
text many times its own size (``kb_core.builtin.parsers.html_tables``)."""

from __future__ import annotations

from kb_core.builtin.parsers import HtmlParser
from kb_core.builtin.parsers.html_tables import MAX_CELLS_PER_ROW, MAX_COLSPAN


def _table_text(html: str) -> str:
    return "\n".join(b.text for b in HtmlParser().parse(html, "t.html").blocks if b.kind == "table")


def test_a_colspan_keeps_the_values_under_their_columns() -> None:
    html = "<table><tr><th>Item<th>2022<th>2023</tr><tr><td colspan=2>Total<td>9</tr></table>"
    assert _table_text(html) == "Item | 2022 | 2023\nTotal |  | 9"


def test_colspans_cannot_blow_text_up() -> None:
    row = "<tr>" + "<td colspan=100000></td>" * 5000 + "<td>last</td></tr>"
    html = "<table>" + row * 4 + "</table>"
    text = _table_text(html)
    assert text.count("\n") == 3 and all(line.endswith("last") for line in text.splitlines())
    for line in text.splitlines():
        assert line.count(" | ") == MAX_CELLS_PER_ROW - 1
    assert len(text) < 4 * 3 * MAX_CELLS_PER_ROW + 100 < len(html)


def test_a_huge_colspan_spans_at_most_the_cap() -> None:
    text = _table_text("<table><tr><td colspan=999>a<td>b</tr></table>")
    assert text == "a" + " | " * MAX_COLSPAN + "b"
