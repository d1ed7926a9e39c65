"""PowerPoint decks (.pptx) read with the standard library's zipfile and defusedxml, as .docx files are.

Slides are read in the deck's order (``ppt/presentation.xml``'s slide list, through its
relationships); each is a part (:mod:`kb_documents.parts`): ``Slide N``, its title placeholder as
its heading, every other text frame (groups included) one paragraph of lines, every table one
``cell | cell`` row per line with its first row as the header, and its speaker notes (the notes
slide's body placeholder) under the heading ``Speaker notes``. Slide numbers, dates and footers
are left out. Charts, SmartArt and pictures carry no text kb reads.

Why not python-pptx (MIT): it pulls in lxml, and with lxml installed openpyxl parses every
workbook with lxml instead of defusedxml; a deck's parts are simple XML, read here with the same
zip-bomb checks and entity-refusing parser as a .docx (:mod:`kb_documents.office`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from xml.etree.ElementTree import Element

from kb_core import KbError
from kb_core.plugin import ParsedDocument
from kb_documents.assemble import Content
from kb_documents.binary import BinaryParser
from kb_documents.limits import Limits
from kb_documents.office import OLE_MAGIC, Parts, check_archive, damaged, open_zip
from kb_documents.parts import Slide, check_part_count, parted_document, slide_page

A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PR = "{http://schemas.openxmlformats.org/package/2006/relationships}"
MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
PRESENTATION = "ppt/presentation.xml"
CORE = "docProps/core.xml"
SAVE_HINT = "open and save it again in a presentation program as .pptx"
_TITLES = frozenset({"title", "ctrTitle"})
_SKIPPED = frozenset({"sldNum", "dt", "ftr", "hdr", "sldImg"})


def _read_part(name: str) -> bool:
    return name.endswith((".xml", ".rels"))


def relationships(parts: Parts, part: str) -> dict[str, tuple[str, str]]:
    """A part's relationships: id -> (type's last word, target part name), internal targets only."""
    folder, base = posixpath.split(part)
    tree = parts.xml(posixpath.join(folder, "_rels", f"{base}.rels"), SAVE_HINT)
    found: dict[str, tuple[str, str]] = {}
    for rel in tree.iter(f"{PR}Relationship") if tree is not None else ():
        target = rel.get("Target") or ""
        if rel.get("TargetMode") == "External" or not target:
            continue
        name = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
        found[rel.get("Id") or ""] = ((rel.get("Type") or "").rsplit("/", 1)[-1], name)
    return found


def paragraph_text(paragraph: Element) -> str:
    """The text of a DrawingML paragraph (runs, fields; a line break as a space)."""
    parts = []
    for node in paragraph.iter():
        if node.tag == f"{A}t" and node.text:
            parts.append(node.text)
        elif node.tag == f"{A}br":
            parts.append(" ")
    return "".join(parts)


def _lines(body: Element | None) -> tuple[str, ...]:
    return tuple(paragraph_text(p) for p in body.iter(f"{A}p")) if body is not None else ()


def _placeholder(shape: Element) -> str | None:
    """The placeholder type of a shape (``body`` for an untyped one), or None when it is no placeholder."""
    ph = shape.find(f"{P}nvSpPr/{P}nvPr/{P}ph")
    return None if ph is None else (ph.get("type") or "body")


def _table(frame: Element) -> Content | None:
    table = frame.find(f"{A}graphic/{A}graphicData/{A}tbl")
    if table is None:
        return None
    rows = []
    for row in table.iter(f"{A}tr"):
        rows.append(" | ".join(" ".join(_lines(cell.find(f"{A}txBody"))).strip() for cell in row.findall(f"{A}tc")))
    return Content("table", tuple(rows))


def _shapes(tree: Element, titles: list[str]) -> Iterator[Content]:
    """The text frames and tables of a shape tree in order (title placeholders' text into ``titles``)."""
    for shape in tree:
        if shape.tag == f"{P}sp":
            kind = _placeholder(shape)
            lines = _lines(shape.find(f"{P}txBody"))
            if kind in _TITLES:
                titles.append(" ".join(lines))
            elif kind not in _SKIPPED:
                yield Content("paragraph", lines)
        elif shape.tag == f"{P}graphicFrame":
            table = _table(shape)
            if table is not None:
                yield table
        elif shape.tag == f"{P}grpSp":
            yield from _shapes(shape, titles)
        elif shape.tag == f"{MC}AlternateContent":
            chosen = shape.find(f"{MC}Choice")
            chosen = chosen if chosen is not None else shape.find(f"{MC}Fallback")
            if chosen is not None:
                yield from _shapes(chosen, titles)


def _notes(parts: Parts, slide: str) -> tuple[str, ...]:
    for kind, target in relationships(parts, slide).values():
        if kind == "notesSlide":
            tree = parts.xml(target, SAVE_HINT)
            if tree is None:
                return ()
            shapes = [s for s in tree.iter(f"{P}sp") if _placeholder(s) == "body"]
            return tuple(line for shape in shapes for line in _lines(shape.find(f"{P}txBody")))
    return ()


def read_slide(parts: Parts, name: str) -> Slide:
    """One slide part as a :class:`Slide` (a missing part is an empty slide)."""
    tree = parts.xml(name, SAVE_HINT)
    spTree = tree.find(f"{P}cSld/{P}spTree") if tree is not None else None
    titles: list[str] = []
    items = tuple(_shapes(spTree, titles)) if spTree is not None else ()
    return Slide(" ".join(titles), items, _notes(parts, name))


def _core_title(core: Element | None) -> str:
    node = core.find("{http://purl.org/dc/elements/1.1/}title") if core is not None else None
    return (node.text or "").strip() if node is not None else ""


class PptxParser(BinaryParser):
    """PowerPoint .pptx decks: each slide a part (``Slide N``), with its tables and speaker notes."""

    kind = ".pptx"

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """Parse .pptx bytes; every failure is a KbError."""
        self.check_size(data, self.limits.max_bytes)
        return damaged(".pptx", SAVE_HINT, lambda: self._parse(data, path))

    def _parse(self, data: bytes, path: str) -> ParsedDocument:
        if data.startswith(OLE_MAGIC):
            raise KbError(
                "the .pptx is password protected (or an old .ppt file renamed): it is an OLE container, not a zip",
                hint="save an unprotected copy as .pptx and ingest that",
            )
        with open_zip(data, ".pptx", SAVE_HINT) as archive:
            infos = check_archive(
                archive,
                self.limits,
                ".pptx",
                main=PRESENTATION,
                missing="a PowerPoint deck",
                missing_hint="save it as .pptx; .ppt and other formats are not read",
                parts=_read_part,
            )
            parts = Parts(archive, infos, self.limits.max_docx_inflated_bytes, ".pptx")
            presentation = parts.xml(PRESENTATION, SAVE_HINT)
            targets = relationships(parts, PRESENTATION)
            ids = presentation.iter(f"{P}sldId") if presentation is not None else iter(())
            names = [targets[rid][1] for sid in ids if (rid := sid.get(f"{R}id") or "") in targets]
            check_part_count(len(names), self.limits.max_pages, ".pptx", "slide")
            slides = [read_slide(parts, name) for name in names]
            title = _core_title(parts.xml(CORE, SAVE_HINT))
        pages = [slide_page(number, slide) for number, slide in enumerate(slides, start=1)]
        first = next((s.title for s in slides if s.title.strip()), "")
        return parted_document(pages, path, title or first, "pptx", "slide")
