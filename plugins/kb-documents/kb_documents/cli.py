"""``kb pages CITATION...``: the page a citation lies on, as a link a PDF viewer opens there.

kb cites ``report.pdf#L8-L15`` (lines of the parsed text). For a PDF, this command prints
``report.pdf#page=2&L8-L15``: ``#page=2`` is the standard PDF open parameter (RFC 8118) that
browsers and PDF viewers honour, and the line span stays as it was, so the link still names the
exact lines. Documents without pages (DOCX, Markdown) keep their citation unchanged. A deck, an
e-book or a notebook names its slide, chapter or cell the same way (``metadata["page_unit"]``,
:mod:`kb_documents.parts`): ``deck.pptx#slide=7&L40-L52``, ``book.epub#chapter=3&L9-L20``,
``analysis.ipynb#cell=4&L30-L41``.

A citation into a page read by OCR also names the region its lines cover on that page (the W3C
media fragment ``xywh``, in the page's units: points for a PDF, pixels for an image), from
``metadata["ocr"]["lines"]``: ``scan.pdf#page=3&xywh=72,96,432,31&L8-L15``, and for an image (page 1,
or a TIFF's frame) ``photo.jpg#page=1&xywh=10,10,100,20&L3-L4``: the syntax of every citation's
region in kb (``kb_core.types.Region``), and the very region ``kb ask`` names for it
(``kb_core.commands.region_of``: the box around the cited lines OCR read, on the first page they
reach). The ``--json`` output (``page_citations.v1``) gives the region as ``"region": {"page", "x",
"y", "w", "h"}`` (null without one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import click

from kb_core import Citation, NotFoundError
from kb_core.commands import Session, emit, json_option, pass_session, region_of
from kb_documents.assemble import page_of_line

SCHEMA = "page_citations.v1"


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
    region: dict[str, int] | None = None
    unit: str = "page"


def parse_citation(text: str, page_count: Callable[[str], int | None] | None = None) -> Citation:
    """``path#L8-L15``, ``path#page=2&L8-L15`` or ``path#page=2&xywh=x,y,w,h&L8-L15`` (kb_core's own
    parser, :meth:`kb_core.Citation.parse`: lines and pages in bounds, and, with ``page_count``, a page the
    document has); a KbError for anything else."""
    return Citation.parse(text.strip(), page_count)


def page_link(citation: Citation, page_lines: Sequence[int], ocr: object = None, unit: str = "page") -> PageCitation:
    """The pages of ``citation`` given the document's ``page_lines`` (empty for a document without pages),
    and the region of its lines when ``ocr`` (``metadata["ocr"]``) has their boxes.

    The region is the core's own (:func:`kb_core.commands.region_of`, what ``kb ask`` names): the
    box around the cited lines OCR read on the first page they reach. The link names that page with
    its ``xywh``; without a region, the page (``unit``: slide, chapter, cell) of the citation's first line."""
    first = page_of_line(page_lines, citation.start_line) if page_lines else None
    last = page_of_line(page_lines, citation.end_line) if page_lines else None
    found = region_of({"ocr": ocr}, citation.start_line, citation.end_line)
    parts = [] if first is None else [f"{unit}={first}"]
    region = None
    if found is not None:
        x, y, w, h = found.box
        region = {"page": found.page, "x": x, "y": y, "w": w, "h": h}
        parts = [found.fragment()]
    parts.append(f"L{citation.start_line}-L{citation.end_line}")
    link = f"{citation.path}#{'&'.join(parts)}"
    return PageCitation(
        str(citation), citation.path, citation.start_line, citation.end_line, first, last, link, region, unit
    )


def resolve(store: Any, texts: Sequence[str]) -> list[PageCitation]:
    """Page citations for ``texts`` from the documents in ``store`` (the store of record)."""
    found = []
    for text in texts:
        citation = parse_citation(text, lambda path: _page_count(store.get_document(path)))
        document = store.get_document(citation.path)
        if document is None:
            raise NotFoundError(f"no document at {citation.path!r}", hint="see 'kb list' for the stored paths")
        metadata = document.metadata
        found.append(page_link(citation, _page_lines(metadata), metadata.get("ocr"), _unit(metadata)))
    return found


def _page_lines(metadata: dict[str, Any]) -> list[int]:
    """The first line of each page (empty: the document has no pages, or they are malformed)."""
    page_lines = metadata.get("page_lines") or []
    if not isinstance(page_lines, list) or not all(type(n) is int for n in page_lines):
        return []
    return page_lines


def _unit(metadata: dict[str, Any]) -> str:
    """What the document's pages are: ``page``, or a deck's ``slide``, a book's ``chapter``, a notebook's ``cell``."""
    unit = metadata.get("page_unit")
    return unit if unit in ("slide", "chapter", "cell") else "page"


def _page_count(document: Any) -> int | None:
    """How many pages ``document`` has (None: there is no such document)."""
    return None if document is None else len(_page_lines(document.metadata))


def _human(found: Sequence[PageCitation]) -> None:
    for item in found:
        if item.first_page is None:
            click.echo(f"{item.link}  (no pages)")
        elif item.first_page == item.last_page:
            click.echo(f"{item.link}  ({item.unit} {item.first_page})")
        else:
            click.echo(f"{item.link}  ({item.unit}s {item.first_page}-{item.last_page})")


@click.command("pages")
@click.argument("citations", nargs=-1, required=True)
@json_option
@pass_session
def pages_command(session: Session, citations: tuple[str, ...], as_json: bool) -> None:
    """Show the page of each citation, as a link that opens the PDF there (report.pdf#page=2&L8-L15)."""
    found = resolve(session.kb().store, citations)
    emit(as_json, SCHEMA, {"citations": [attrs.asdict(item) for item in found]}, lambda: _human(found))
