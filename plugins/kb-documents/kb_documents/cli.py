"""``kb pages CITATION...``: the page a citation lies on, as a link a PDF viewer opens there.

kb cites ``report.pdf#L8-L15`` (lines of the parsed text). For a PDF, this command prints
``report.pdf#page=2&L8-L15``: ``#page=2`` is the standard PDF open parameter (RFC 8118) that
browsers and PDF viewers honour, and the line span stays as it was, so the link still names the
exact lines. Documents without pages (DOCX, Markdown) keep their citation unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import attrs
import click

from kb_core import Citation, KbError, NotFoundError
from kb_core.commands import Session, emit, json_option, pass_session
from kb_documents.assemble import page_of_line

SCHEMA = "page_citations.v1"
_PAGE_PREFIX = re.compile(r"#page=\d+&L")


@attrs.frozen
class PageCitation:
    """A citation with the pages its first and last line lie on (None: the document has no pages)."""

    citation: str
    path: str
    start_line: int
    end_line: int
    first_page: int | None
    last_page: int | None
    link: str


def parse_citation(text: str) -> Citation:
    """``path#L8-L15`` or ``path#page=2&L8-L15``; a KbError for anything else."""
    try:
        return Citation.parse(_PAGE_PREFIX.sub("#L", text.strip(), count=1))
    except ValueError:
        raise KbError(f"not a citation: {text!r}", hint="give one as kb prints them, like report.pdf#L8-L15") from None


def page_link(citation: Citation, page_lines: Sequence[int]) -> PageCitation:
    """The pages of ``citation`` given the document's ``page_lines`` (empty for a document without pages)."""
    first = page_of_line(page_lines, citation.start_line) if page_lines else None
    last = page_of_line(page_lines, citation.end_line) if page_lines else None
    span = f"L{citation.start_line}-L{citation.end_line}"
    link = f"{citation.path}#page={first}&{span}" if first is not None else str(citation)
    return PageCitation(str(citation), citation.path, citation.start_line, citation.end_line, first, last, link)


def resolve(store: Any, texts: Sequence[str]) -> list[PageCitation]:
    """Page citations for ``texts`` from the documents in ``store`` (the store of record)."""
    found = []
    for text in texts:
        citation = parse_citation(text)
        document = store.get_document(citation.path)
        if document is None:
            raise NotFoundError(f"no document at {citation.path!r}", hint="see 'kb list' for the stored paths")
        page_lines = document.metadata.get("page_lines") or []
        if not isinstance(page_lines, list) or not all(isinstance(n, int) for n in page_lines):
            page_lines = []
        found.append(page_link(citation, page_lines))
    return found


def _human(found: Sequence[PageCitation]) -> None:
    for item in found:
        if item.first_page is None:
            click.echo(f"{item.link}  (no pages)")
        elif item.first_page == item.last_page:
            click.echo(f"{item.link}  (page {item.first_page})")
        else:
            click.echo(f"{item.link}  (pages {item.first_page}-{item.last_page})")


@click.command("pages")
@click.argument("citations", nargs=-1, required=True)
@json_option
@pass_session
def pages_command(session: Session, citations: tuple[str, ...], as_json: bool) -> None:
    """Show the page of each citation, as a link that opens the PDF there (report.pdf#page=2&L8-L15)."""
    found = resolve(session.kb().store, citations)
    emit(as_json, SCHEMA, {"citations": [attrs.asdict(item) for item in found]}, lambda: _human(found))
