"""OpenDocument text, sheets and slides (.odt, .ods, .odp) read with zipfile and defusedxml.

An OpenDocument file is a zip whose ``content.xml`` holds the whole body: kb reads that part (and
``meta.xml`` for the title) with the zip-bomb checks and entity-refusing parser of a .docx
(:mod:`kb_documents.office`). odfpy (Apache-2.0) would build its own tree of every part and add
nothing for reading text, so the standard library does it.

- **.odt**: ``text:h`` is a heading at its ``text:outline-level``; every paragraph one line;
  a list item one line starting ``- ``; a table one ``cell | cell`` row per line, header first.
  Tracked deletions, tables of contents, footnotes and comments are left out.
- **.ods**: each sheet is the heading ``Sheet: NAME`` and one table, as an .xlsx sheet is
  (:func:`kb_documents.xlsx.sheet_rows`); repeated rows and columns are expanded only when they
  hold text, within the same cell budget.
- **.odp**: each ``draw:page`` is a slide (:mod:`kb_documents.parts`): its title frame the
  heading, its text frames and tables in order, its notes page under ``Speaker notes``.

A file whose manifest says ``content.xml`` is encrypted is refused as password protected.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from xml.etree.ElementTree import Element

from kb_core import KbError
from kb_core.bounds import ROW_CELLS, digits_value
from kb_core.plugin import ParsedDocument
from kb_documents.assemble import Content, Heading, Page, assemble
from kb_documents.binary import BinaryParser
from kb_documents.limits import Limits
from kb_documents.office import Parts, check_archive, damaged, open_zip
from kb_documents.parts import Slide, check_part_count, parted_document, slide_page
from kb_documents.xlsx import MAX_CELLS, MAX_SHEETS, CellBudget, sheet_rows

OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
PRES = "{urn:oasis:names:tc:opendocument:xmlns:presentation:1.0}"
MANIFEST = "{urn:oasis:names:tc:opendocument:xmlns:manifest:1.0}"
CONTENT, META, MANIFEST_PART = "content.xml", "meta.xml", "META-INF/manifest.xml"
SAVE_HINT = "open and save it again in LibreOffice (or another OpenDocument program)"
#: Elements whose text is not the document's own: deletions, generated indexes, notes, comments, forms.
_LEFT_OUT = frozenset(
    {f"{TEXT}tracked-changes", f"{TEXT}table-of-content", f"{TEXT}alphabetical-index", f"{TEXT}bibliography"}
    | {f"{TEXT}illustration-index", f"{TEXT}table-index", f"{TEXT}object-index", f"{TEXT}user-index"}
    | {f"{TEXT}note", f"{OFFICE}annotation", f"{OFFICE}annotation-end", f"{OFFICE}forms", f"{TEXT}sequence-decls"}
    | {f"{DRAW}frame", f"{TEXT}soft-page-break"}
)
_SKIPPED_CLASSES = frozenset({"page-number", "date-time", "footer", "header"})
_ROW_GROUPS = frozenset({f"{TABLE}table-header-rows", f"{TABLE}table-rows", f"{TABLE}table-row-group"})


def text_of(element: Element) -> str:
    """The text of a paragraph or heading: spans and links read, ``text:s``/tabs/breaks as spaces."""
    parts = [element.text or ""]
    for child in element:
        if child.tag in (f"{TEXT}s", f"{TEXT}tab", f"{TEXT}line-break"):
            parts.append(" ")
        elif child.tag not in _LEFT_OUT:
            parts.append(text_of(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _repeat(element: Element, attribute: str) -> int:
    return max(1, digits_value(element.get(f"{TABLE}{attribute}") or "", 9) or 1)


def _rows(table: Element) -> Iterator[tuple[Element, int]]:
    """The rows of a table (in header, body and row groups) with their repeat counts."""
    for child in table:
        if child.tag == f"{TABLE}table-row":
            yield child, _repeat(child, "number-rows-repeated")
        elif child.tag in _ROW_GROUPS:
            yield from _rows(child)


def _cells(row: Element) -> tuple[str, ...]:
    """A row's cells as text, repeated cells expanded up to ``kb_core.bounds.ROW_CELLS``."""
    cells: list[str] = []
    for cell in row:
        if cell.tag not in (f"{TABLE}table-cell", f"{TABLE}covered-table-cell"):
            continue
        value = " ".join(text_of(p) for p in cell.iter() if p.tag in (f"{TEXT}p", f"{TEXT}h")).strip()
        room = int(ROW_CELLS.high) - len(cells)
        cells.extend([value] * min(_repeat(cell, "number-columns-repeated"), room))
        if room <= 1:
            break
    return tuple(cells)


def table_values(table: Element, budget: CellBudget) -> Iterator[tuple[str, ...]]:
    """A table's rows as cell tuples; a repeated row is given again only when it holds text."""
    for row, repeat in _rows(table):
        cells = _cells(row)
        times = min(repeat, max(budget.left // max(len(cells), 1), 1)) if any(cells) else 1
        for _ in range(times):
            yield cells


def _block_items(container: Element, budget: CellBudget, depth: int = 0) -> Iterator[Heading | Content]:
    """The headings, paragraphs, list items and tables of a text body, in order."""
    for child in container:
        tag = child.tag
        if tag == f"{TEXT}h":
            level = digits_value(child.get(f"{TEXT}outline-level") or "", 2) or 1
            yield Heading(level, text_of(child))
        elif tag == f"{TEXT}p":
            yield Content("paragraph", (text_of(child),))
        elif tag == f"{TEXT}list":
            yield Content("list", tuple(_list_lines(child)))
        elif tag == f"{TABLE}table":
            yield Content("table", tuple(sheet_rows(table_values(child, budget), "table", budget)))
        elif tag not in _LEFT_OUT and depth < 50:  # sections, text boxes' bodies, custom shapes
            yield from _block_items(child, budget, depth + 1)


def _list_lines(listing: Element, depth: int = 0) -> Iterator[str]:
    for item in listing:
        for child in item:
            if child.tag in (f"{TEXT}p", f"{TEXT}h") and text_of(child).strip():
                yield "- " + text_of(child)
            elif child.tag == f"{TEXT}list" and depth < 50:
                yield from _list_lines(child, depth + 1)


def _frame_items(shape: Element, budget: CellBudget) -> list[Content]:
    items = [i for i in _block_items(shape, budget) if isinstance(i, Content)]
    lines = tuple(line for i in items if i.kind != "table" for line in i.lines)
    tables = [i for i in items if i.kind == "table"]
    return [*([Content("paragraph", lines)] if lines else []), *tables]


def _slide_shapes(container: Element, budget: CellBudget, titles: list[str], depth: int = 0) -> Iterator[Content]:
    for shape in container:
        kind = shape.get(f"{PRES}class") or ""
        if shape.tag == f"{PRES}notes" or kind in _SKIPPED_CLASSES:
            continue
        if shape.tag == f"{DRAW}g" and depth < 50:
            yield from _slide_shapes(shape, budget, titles, depth + 1)
        elif kind == "title":
            titles.extend(line for item in _frame_items(shape, budget) for line in item.lines)
        else:
            yield from _frame_items(shape, budget)


def _slide(page: Element, budget: CellBudget) -> Slide:
    titles: list[str] = []
    items = tuple(_slide_shapes(page, budget, titles))
    notes = page.find(f"{PRES}notes")
    lines: tuple[str, ...] = ()
    if notes is not None:
        frames = [f for f in notes.iter(f"{DRAW}frame") if f.get(f"{PRES}class") == "notes"]
        lines = tuple(line for frame in frames for item in _frame_items(frame, budget) for line in item.lines)
    return Slide(" ".join(titles), items, lines)


def _encrypted(manifest: Element | None) -> bool:
    for entry in manifest.iter(f"{MANIFEST}file-entry") if manifest is not None else ():
        if entry.get(f"{MANIFEST}full-path") == CONTENT and entry.find(f"{MANIFEST}encryption-data") is not None:
            return True
    return False


def _meta_title(meta: Element | None) -> str:
    node = meta.find(f"{OFFICE}meta/{{http://purl.org/dc/elements/1.1/}}title") if meta is not None else None
    return " ".join((node.text or "").split()) if node is not None else ""


class OdfParser(BinaryParser):
    """OpenDocument text (.odt), spreadsheets (.ods) and presentations (.odp), by what the body holds."""

    def __init__(self, kind: str, limits: Limits | None = None) -> None:
        self.kind = kind
        self.limits = limits or Limits()

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """Parse OpenDocument bytes; every failure is a KbError."""
        self.check_size(data, self.limits.max_bytes)
        return damaged(self.kind, SAVE_HINT, lambda: self._parse(data, path))

    def _parse(self, data: bytes, path: str) -> ParsedDocument:
        with open_zip(data, self.kind, SAVE_HINT) as archive:
            infos = check_archive(
                archive,
                self.limits,
                self.kind,
                main=CONTENT,
                missing="an OpenDocument file",
                missing_hint="save it as .odt, .ods or .odp; other formats are not read",
                parts=(CONTENT, META, MANIFEST_PART),
            )
            parts = Parts(archive, infos, self.limits.max_docx_inflated_bytes, self.kind)
            if _encrypted(parts.xml(MANIFEST_PART, SAVE_HINT)):
                raise KbError(
                    f"the {self.kind} is password protected (its content is encrypted)",
                    hint="save an unprotected copy and ingest that",
                )
            content = parts.xml(CONTENT, SAVE_HINT)
            title = _meta_title(parts.xml(META, SAVE_HINT))
        body = content.find(f"{OFFICE}body") if content is not None else None
        for fmt, read in (("presentation", self._slides), ("spreadsheet", self._sheets), ("text", self._text)):
            found = body.find(f"{OFFICE}{fmt}") if body is not None else None
            if found is not None:
                return read(found, path, title)
        raise KbError(
            f"the {self.kind} has no text, sheets or slides", hint="nothing to index; remove it or .kbignore it"
        )

    def _text(self, body: Element, path: str, title: str) -> ParsedDocument:
        items = list(_block_items(body, CellBudget(MAX_CELLS)))
        assembled = assemble([Page(None, tuple(items))])
        if not assembled.blocks:
            raise KbError(f"the {self.kind} has no text", hint="nothing to index; remove it or add it to .kbignore")
        first = next((i.text.strip() for i in items if isinstance(i, Heading) and i.text.strip()), "")
        name = title or first or PurePosixPath(path.replace("\\", "/")).name
        return ParsedDocument(name[:200], assembled.blocks, {"format": "odt", "lines": assembled.line_count})

    def _sheets(self, body: Element, path: str, title: str) -> ParsedDocument:
        budget = CellBudget(MAX_CELLS)
        items: list[Heading | Content] = []
        sheets = body.findall(f"{TABLE}table")
        if len(sheets) > MAX_SHEETS:
            budget.warnings.append(f"read the first {MAX_SHEETS} of {len(sheets)} sheets")
        for sheet in sheets[:MAX_SHEETS]:
            if budget.left <= 0:
                break
            name = " ".join((sheet.get(f"{TABLE}name") or "").split())
            rows = sheet_rows(table_values(sheet, budget), name, budget)
            if rows:
                items.extend([Heading(1, f"Sheet: {name}"), Content("table", tuple(rows))])
        assembled = assemble([Page(None, tuple(items))])
        if not assembled.blocks:
            raise KbError(
                f"the {self.kind} has no cells with values", hint="nothing to index; remove it or .kbignore it"
            )
        metadata = {"format": "ods", "sheets": len(items) // 2, "lines": assembled.line_count}
        name = title or PurePosixPath(path.replace("\\", "/")).name
        return ParsedDocument(name[:200], assembled.blocks, metadata, tuple(budget.warnings))

    def _slides(self, body: Element, path: str, title: str) -> ParsedDocument:
        pages = body.findall(f"{DRAW}page")
        check_part_count(len(pages), self.limits.max_pages, self.kind, "slide")
        budget = CellBudget(MAX_CELLS)
        slides = [_slide(page, budget) for page in pages]
        parts = [slide_page(number, slide) for number, slide in enumerate(slides, start=1)]
        first = next((s.title for s in slides if s.title.strip()), "")
        return parted_document(parts, path, title or first, "odp", "slide", budget.warnings)
