"""Documents made of numbered parts: a deck's slides, an e-book's chapters, a notebook's cells.

Each part is a :class:`kb_documents.assemble.Page` named by its unit, so its first line in the
parsed text is ``Slide 7`` (``Chapter 3``, ``Cell 12``), the heading path of every block in it
starts with that line, and a chunk never spans two parts. ``metadata["page_lines"]`` lists the
line of each part's first line (as for a PDF's pages: ``kb pages`` and kb's page counts read it)
and ``metadata["page_unit"]`` names the unit (``slide``, ``chapter``, ``cell``), so ``kb pages``
writes ``deck.pptx#slide=7&L40-L52`` and kb's citation parser checks ``slide=7`` against the
deck's slide count.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

import attrs

from kb_core import KbError
from kb_core.plugin import ParsedDocument
from kb_documents.assemble import Content, Heading, Page, assemble

#: The heading that marks a slide's speaker notes (under the slide's title).
NOTES_HEADING = "Speaker notes"


@attrs.frozen
class Slide:
    """What a slide says: its title, its text frames and tables in order, and its speaker notes."""

    title: str
    items: tuple[Content, ...]
    notes: tuple[str, ...] = ()


def slide_page(number: int, slide: Slide) -> Page:
    """A slide as a page of its own: ``Slide N``, its title as the heading, then the notes under ``Speaker notes``."""
    items: list[Heading | Content] = [Heading(1, slide.title)] if slide.title.strip() else []
    items.extend(slide.items)
    if any(line.strip() for line in slide.notes):
        items.extend([Heading(2, NOTES_HEADING), Content("paragraph", slide.notes)])
    return Page(number, tuple(items), unit="Slide", fresh=True)


def parted_document(
    pages: Sequence[Page], path: str, title: str, fmt: str, unit: str, warnings: Sequence[str] = ()
) -> ParsedDocument:
    """The document of ``pages`` (numbered parts), or a KbError when none holds text."""
    assembled = assemble(pages)
    if assembled.line_count <= len(assembled.page_lines):  # nothing but the parts' own first lines
        raise KbError(f"the .{fmt} has no text", hint="nothing to index; remove it or add it to .kbignore")
    metadata: dict[str, Any] = {
        "format": fmt,
        f"{unit}s": len(pages),
        "lines": assembled.line_count,
        "page_lines": list(assembled.page_lines),
        "page_unit": unit,
    }
    name = " ".join(title.split()) or PurePosixPath(path.replace("\\", "/")).name or path
    return ParsedDocument(name[:200], assembled.blocks, metadata, tuple(warnings))


def check_part_count(count: int, limit: int, kind: str, unit: str) -> None:
    """A KbError when a file has more parts than ``max_pages`` allows."""
    if count > limit:
        raise KbError(
            f"the {kind} has {count} {unit}s, over the limit of {limit}",
            hint="raise [backends.documents] max_pages to read it",
        )
