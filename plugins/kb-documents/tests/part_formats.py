"""Builders of the part formats for the tests: decks, OpenDocument files, EPUB books and notebooks, by hand.

Each writes the few parts a reader needs, as the programs that make these files write them.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape

A = "http://schemas.openxmlformats.org/drawingml/2006/main"
P = "http://schemas.openxmlformats.org/presentationml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PR = "http://schemas.openxmlformats.org/package/2006/relationships"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
NS = f'xmlns:a="{A}" xmlns:p="{P}" xmlns:r="{R}"'


def zipped(members: Mapping[str, str | bytes], stored: Sequence[str] = ("mimetype",)) -> bytes:
    """A zip of ``members`` (deflated, but those named in ``stored``)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data, zipfile.ZIP_STORED if name in stored else zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _paragraphs(lines: Sequence[str]) -> str:
    return "".join(f"<a:p><a:r><a:t>{escape(line)}</a:t></a:r></a:p>" for line in lines)


def _shape(lines: Sequence[str], placeholder: str = "") -> str:
    ph = f"<p:nvPr><p:ph {placeholder}/></p:nvPr>" if placeholder else "<p:nvPr/>"
    return (
        f'<p:sp><p:nvSpPr><p:cNvPr id="2" name="s"/><p:cNvSpPr/>{ph}</p:nvSpPr><p:spPr/>'
        f"<p:txBody><a:bodyPr/>{_paragraphs(lines)}</p:txBody></p:sp>"
    )


def _table(rows: Sequence[Sequence[str]]) -> str:
    body = "".join(
        "<a:tr>" + "".join(f"<a:tc><a:txBody><a:bodyPr/>{_paragraphs([c])}</a:txBody></a:tc>" for c in row) + "</a:tr>"
        for row in rows
    )
    return (
        '<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="4" name="t"/><p:cNvGraphicFramePr/><p:nvPr/>'
        f'</p:nvGraphicFramePr><a:graphic><a:graphicData uri="{A}/table"><a:tbl>{body}</a:tbl></a:graphicData>'
        "</a:graphic></p:graphicFrame>"
    )


def slide_xml(
    title: str = "", texts: Sequence[Sequence[str]] = (), table: Sequence[Sequence[str]] = (), extra: str = ""
) -> str:
    """A slide: a title placeholder, text boxes, a table, a slide-number placeholder, and ``extra`` shapes."""
    shapes = _shape([title], 'type="title"') if title else ""
    shapes += "".join(_shape(lines) for lines in texts)
    shapes += _table(table) if table else ""
    shapes += _shape(["7"], 'type="sldNum" idx="12"') + extra
    return f'<?xml version="1.0" encoding="UTF-8"?><p:sld {NS}><p:cSld><p:spTree>{shapes}</p:spTree></p:cSld></p:sld>'


def notes_xml(lines: Sequence[str]) -> str:
    shapes = _shape([], 'type="sldImg"') + _shape(lines, 'type="body" idx="1"') + _shape(["3"], 'type="sldNum"')
    return f'<?xml version="1.0"?><p:notes {NS}><p:cSld><p:spTree>{shapes}</p:spTree></p:cSld></p:notes>'


def _rels(targets: Sequence[tuple[str, str, str]]) -> str:
    rows = "".join(f'<Relationship Id="{i}" Type="{REL}/{t}" Target="{target}"/>' for i, t, target in targets)
    return f'<?xml version="1.0"?><Relationships xmlns="{PR}">{rows}</Relationships>'


def pptx(slides: Sequence[tuple[str, Sequence[str]]], title: str = "", order: Sequence[int] | None = None) -> bytes:
    """A deck of ``(slide xml, notes lines)``; ``order`` lists the slide files in the deck's order (default 1..N)."""
    members: dict[str, str | bytes] = {"[Content_Types].xml": "<Types/>"}
    order = list(order or range(1, len(slides) + 1))
    ids = "".join(f'<p:sldId id="{255 + n}" r:id="rId{n}"/>' for n in order)
    members["ppt/presentation.xml"] = f"<p:presentation {NS}><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>"
    members["ppt/_rels/presentation.xml.rels"] = _rels(
        [(f"rId{n}", "slide", f"slides/slide{n}.xml") for n in range(1, len(slides) + 1)]
    )
    for n, (xml, notes) in enumerate(slides, start=1):
        members[f"ppt/slides/slide{n}.xml"] = xml
        if notes:
            members[f"ppt/slides/_rels/slide{n}.xml.rels"] = _rels(
                [
                    ("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml"),
                    ("rId2", "notesSlide", f"../notesSlides/notesSlide{n}.xml"),
                ]
            )
            members[f"ppt/notesSlides/notesSlide{n}.xml"] = notes_xml(notes)
    if title:
        members["docProps/core.xml"] = (
            '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
            f'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{escape(title)}</dc:title></cp:coreProperties>'
        )
    return zipped(members)


ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"'
)
MIMETYPES = {
    "text": "application/vnd.oasis.opendocument.text",
    "spreadsheet": "application/vnd.oasis.opendocument.spreadsheet",
    "presentation": "application/vnd.oasis.opendocument.presentation",
}


def odf(kind: str, body: str, title: str = "", encrypted: bool = False) -> bytes:
    """An OpenDocument file of ``kind`` (text, spreadsheet, presentation) whose body holds ``body``."""
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ODF_NS} office:version="1.3">'
        f"<office:body><office:{kind}>{body}</office:{kind}></office:body></office:document-content>"
    )
    entry = "<manifest:encryption-data/>" if encrypted else ""
    manifest = (
        '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        f'<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">{entry}'
        "</manifest:file-entry></manifest:manifest>"
    )
    members: dict[str, str | bytes] = {
        "mimetype": MIMETYPES[kind],
        "content.xml": content.encode() if not encrypted else b"\x8f\x12 encrypted bytes \x00\xff",
        "META-INF/manifest.xml": manifest,
    }
    if title:
        members["meta.xml"] = (
            f'<office:document-meta {ODF_NS} xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f"<office:meta><dc:title>{escape(title)}</dc:title></office:meta></office:document-meta>"
        )
    return zipped(members)


def xhtml(title: str, body: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        f"<head><title>{escape(title)}</title></head>\n<body>\n{body}\n</body></html>"
    )


def epub(
    chapters: Sequence[tuple[str, str]], title: str = "", encryption: str = "", extra: dict[str, bytes] | None = None
) -> bytes:
    """A book of ``(file name, XHTML)`` chapters in spine order, with a cover image first (no text)."""
    items = '<item id="cover" href="cover.xhtml" media-type="application/xhtml+xml"/>'
    items += '<item id="css" href="style.css" media-type="text/css"/>'
    items += "".join(
        f'<item id="c{n}" href="{name}" media-type="application/xhtml+xml"/>' for n, (name, _) in enumerate(chapters)
    )
    spine = '<itemref idref="cover"/>' + "".join(f'<itemref idref="c{n}"/>' for n in range(len(chapters)))
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{escape(title)}</dc:title></metadata>'
        f"<manifest>{items}</manifest><spine>{spine}</spine></package>"
    )
    members: dict[str, str | bytes] = {
        "mimetype": "application/epub+zip",
        "META-INF/container.xml": (
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>"
        ),
        "OEBPS/content.opf": opf,
        "OEBPS/cover.xhtml": xhtml("Cover", '<div><img src="cover.jpg" alt=""/></div>'),
        "OEBPS/style.css": "body { margin: 0 }",
        **{f"OEBPS/{name}": body for name, body in chapters},
        **(extra or {}),
    }
    if encryption:
        members["META-INF/encryption.xml"] = encryption
    return zipped(members)


def notebook(cells: Sequence[dict[str, Any]], language: str = "python") -> bytes:
    """An nbformat 4 notebook of ``cells``."""
    document = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": language}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1).encode()


def markdown_cell(text: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": text.splitlines(keepends=True)}


def code_cell(code: str, *outputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "outputs": list(outputs),
        "source": code.splitlines(keepends=True),
    }


def stream(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text.splitlines(keepends=True)}
