"""Word documents (.docx) read with the standard library's zipfile and defusedxml.

Each paragraph is one line of the parsed text (headings included; a table row is one line, its
cells joined by `` | ``), so ``path#L4-L9`` names paragraphs 4 to 9 of the body. Paragraphs in a
``Title`` or ``Heading N`` style (or with an outline level) make the heading path. The archive is
checked before anything is inflated (:func:`kb_documents.office.check_archive`: member count, each
part's declared size and compression ratio, and the total); every read is bounded, so a zip bomb
costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from xml.etree.ElementTree import Element

from kb_core import KbError
from kb_core.bounds import digits_value
from kb_core.plugin import ParsedDocument
from kb_documents.assemble import Content, Heading, Page, assemble
from kb_documents.binary import BinaryParser
from kb_documents.limits import Limits
from kb_documents.office import OLE_MAGIC, Parts, check_archive, damaged, open_zip

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
DOCUMENT = "word/document.xml"
STYLES = "word/styles.xml"
CORE = "docProps/core.xml"
_HEADING_NAME = re.compile(r"heading\s*(\d)", re.IGNORECASE)


def _heading_styles(styles: Element | None) -> dict[str, int]:
    """Heading level by style id: Title is 0, ``heading N`` (or outline level N-1) is N."""
    levels: dict[str, int] = {}
    if styles is None:
        return levels
    for style in styles.iter(f"{W}style"):
        style_id = style.get(f"{W}styleId") or ""
        name_el = style.find(f"{W}name")
        name = (name_el.get(f"{W}val") or "") if name_el is not None else ""
        outline = style.find(f"{W}pPr/{W}outlineLvl")
        match = _HEADING_NAME.fullmatch(name.strip())
        if name.strip().lower() == "title":
            levels[style_id] = 0
        elif match:
            levels[style_id] = int(match.group(1))
        elif outline is not None and (level := digits_value(outline.get(f"{W}val") or "", 2)) is not None:
            levels[style_id] = level + 1
    return levels


def _text(element: Element) -> str:
    parts: list[str] = []
    for node in element.iter():
        if node.tag == f"{W}t" and node.text:
            parts.append(node.text)
        elif node.tag in (f"{W}tab", f"{W}br", f"{W}cr"):
            parts.append(" ")
    return "".join(parts)


def _paragraph_level(paragraph: Element, styles: dict[str, int]) -> int | None:
    props = paragraph.find(f"{W}pPr")
    if props is None:
        return None
    outline = props.find(f"{W}outlineLvl")
    level = digits_value(outline.get(f"{W}val") or "", 2) if outline is not None else None
    if level is not None and level < 9:
        return level + 1
    style = props.find(f"{W}pStyle")
    return styles.get(style.get(f"{W}val") or "") if style is not None else None


def _row_text(row: Element) -> str:
    cells = []
    for cell in row.findall(f"{W}tc"):
        cells.append(" ".join(_text(p) for p in cell.iter(f"{W}p")).strip())
    return " | ".join(cells)


def _body_items(container: Element, styles: dict[str, int]) -> Iterator[Heading | Content]:
    for child in container:
        if child.tag == f"{W}p":
            text = _text(child)
            level = _paragraph_level(child, styles)
            if level is not None and text.strip():
                yield Heading(level, text)
            else:
                listed = child.find(f"{W}pPr/{W}numPr") is not None
                yield Content("paragraph", (("- " if listed and text.strip() else "") + text,))
        elif child.tag == f"{W}tbl":
            rows = tuple(_row_text(row) for row in child.iter(f"{W}tr"))
            yield Content("table", rows)
        elif child.tag in (f"{W}sdt", f"{W}sdtContent", f"{W}customXml", f"{W}smartTag"):
            content = child.find(f"{W}sdtContent") if child.tag == f"{W}sdt" else child
            if content is not None:
                yield from _body_items(content, styles)


def _core_title(core: Element | None) -> str:
    if core is None:
        return ""
    node = core.find("{http://purl.org/dc/elements/1.1/}title")
    return (node.text or "").strip() if node is not None else ""


class DocxParser(BinaryParser):
    """Word .docx files: paragraphs and table rows as lines, heading styles as the heading path."""

    kind = ".docx"

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """Parse .docx bytes; every failure is a KbError."""
        self.check_size(data, self.limits.max_bytes)
        return damaged(".docx", "open and save it again in a word processor", lambda: self._parse(data, path))

    def _parse(self, data: bytes, path: str) -> ParsedDocument:
        if data.startswith(OLE_MAGIC):
            raise KbError(
                "the .docx is password protected (or an old .doc file renamed): it is an OLE container, not a zip",
                hint="save an unprotected copy as .docx from a word processor and ingest that",
            )
        archive = open_zip(data, ".docx", "save it as .docx from a word processor and ingest it again")
        with archive:
            parts = check_archive(
                archive,
                self.limits,
                ".docx",
                main=DOCUMENT,
                missing="a Word document",
                missing_hint="save it as .docx from a word processor; .doc and other formats are not read",
                parts=(DOCUMENT, STYLES, CORE),
            )
            reader = Parts(archive, parts, self.limits.max_docx_inflated_bytes, ".docx")
            trees: dict[str, Element] = {}
            for name in parts:
                tree = reader.xml(name, "open and save the document again in a word processor")
                if tree is not None:
                    trees[name] = tree
        styles = _heading_styles(trees.get(STYLES))
        body = trees[DOCUMENT].find(f"{W}body")
        items = list(_body_items(body, styles)) if body is not None else []
        assembled = assemble([Page(None, tuple(items))])
        if not assembled.blocks:
            raise KbError("the .docx has no text", hint="nothing to index; remove it or add it to .kbignore")
        first_heading = next((i.text.strip() for i in items if isinstance(i, Heading)), "")
        title = _core_title(trees.get(CORE)) or first_heading or PurePosixPath(path).name
        metadata = {"format": "docx", "paragraphs": assembled.line_count}
        return ParsedDocument(title[:200], assembled.blocks, metadata)
