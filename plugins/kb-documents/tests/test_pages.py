"""Citations to page links: ``report.pdf#L8-L15`` -> ``report.pdf#page=2&L8-L15``."""

from __future__ import annotations

import pytest

from kb_core import Citation, KbError
from kb_documents.cli import page_link, parse_citation


def test_a_citation_in_either_form_parses_to_the_same_lines() -> None:
    assert parse_citation("report.pdf#L8-L15") == Citation("report.pdf", 8, 15)
    assert parse_citation("report.pdf#page=2&L8-L15") == Citation("report.pdf", 8, 15)
    assert parse_citation("odd#name.pdf#L1-L2") == Citation("odd#name.pdf", 1, 2)


@pytest.mark.parametrize("text", ["report.pdf", "report.pdf#page=2", "report.pdf#Lx-L2", ""])
def test_anything_else_is_one_clear_error(text: str) -> None:
    with pytest.raises(KbError, match="not a citation"):
        parse_citation(text)


def test_page_links() -> None:
    pages = [1, 8, 16]
    inside = page_link(Citation("report.pdf", 9, 15), pages)
    assert (inside.link, inside.first_page, inside.last_page) == ("report.pdf#page=2&L9-L15", 2, 2)
    across = page_link(Citation("report.pdf", 5, 9), pages)
    assert (across.first_page, across.last_page) == (1, 2)
    no_pages = page_link(Citation("handbook.docx", 3, 4), [])
    assert (no_pages.link, no_pages.first_page) == ("handbook.docx#L3-L4", None)
