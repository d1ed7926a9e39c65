"""Running headers and footers are dropped; body lines that merely repeat are kept."""

from __future__ import annotations

from kb_documents.layout import Line
from kb_documents.running import drop_running_lines


def _page(number: int, footer: str, gap: float = 40.0) -> list[Line]:
    body = [Line(f"body line {number}-{i}", 10.0, 700.0 - 14 * i, 690.0 - 14 * i, 50.0) for i in range(5)]
    last = body[-1].bottom
    return [*body, Line(footer.format(n=number), 8.0, last - gap, last - gap - 9, 250.0)]


def test_a_set_apart_footer_on_every_page_is_dropped() -> None:
    pages, dropped = drop_running_lines([_page(n, "Page {n} of 4") for n in range(1, 5)], body=10.0)
    assert dropped == 4
    assert all(all("of 4" not in line.text for line in page) for page in pages)
    assert all(len(page) == 5 for page in pages)


def test_a_footer_too_close_to_the_body_is_kept() -> None:
    pages, dropped = drop_running_lines([_page(n, "Page {n} of 4", gap=2.0) for n in range(1, 5)], body=10.0)
    assert dropped == 0 and all(len(page) == 6 for page in pages)


def test_two_pages_are_too_few_to_tell() -> None:
    _, dropped = drop_running_lines([_page(n, "Page {n} of 2") for n in range(1, 3)], body=10.0)
    assert dropped == 0


def test_a_line_on_a_minority_of_pages_is_kept() -> None:
    pages = [_page(1, "Draft"), _page(2, "Final"), _page(3, "Other"), _page(4, "Draft")]
    _, dropped = drop_running_lines(pages, body=10.0)
    assert dropped == 0
