"""E-books (.epub) read with zipfile, defusedxml for the package files and kb's own HTML parser for chapters.

``META-INF/container.xml`` names the package (OPF) file; its spine lists the book's XHTML
documents in reading order. Each spine document with text is a chapter: a part
(:mod:`kb_documents.parts`) whose first line is ``Chapter N`` (N counts the chapters with text,
in reading order, so a cover image is no chapter) and whose headings are the document's own
``<h1>``-``<h6>``, read by :class:`kb_core.plugin.containers.HtmlParser` (tables as ``cell | cell``
rows, lists, ``<pre>`` code). A citation ``book.epub#chapter=3&L40-L52`` names chapter 3 and the
lines; the heading path (``Chapter 3 > The Harbour``) names it by its title.

Every package file and chapter is checked before it is inflated, as a .docx's parts are
(:mod:`kb_documents.office`); images, fonts and styles are never read. A book whose chapters are
listed in ``META-INF/encryption.xml`` (DRM; font obfuscation does not count) is refused.
ebooklib is AGPL, so it is not used.
"""

from __future__ import annotations

import codecs
import posixpath
import re
from collections.abc import Iterator, Sequence
from urllib.parse import unquote
from xml.etree.ElementTree import Element

from kb_core import KbError
from kb_core.plugin import Block, ParsedDocument
from kb_core.plugin.containers import HtmlParser
from kb_documents.assemble import Content, Heading, Page
from kb_documents.binary import BinaryParser
from kb_documents.limits import Limits
from kb_documents.office import Parts, check_archive, damaged, open_zip
from kb_documents.parts import check_part_count, parted_document

CONTAINER = "META-INF/container.xml"
ENCRYPTION = "META-INF/encryption.xml"
OCF = "{urn:oasis:names:tc:opendocument:xmlns:container}"
OPF = "{http://www.idpf.org/2007/opf}"
DC = "{http://purl.org/dc/elements/1.1/}"
ENC = "{http://www.w3.org/2001/04/xmlenc#}"
SAVE_HINT = "convert it again to EPUB (for example with Calibre) and ingest that"
_HTML_TYPES = frozenset({"application/xhtml+xml", "text/html"})
_READ = (".xml", ".opf", ".xhtml", ".html", ".htm", ".ncx")
_FONT_OBFUSCATION = frozenset({"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"})
_DECLARED = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]{1,40})["']""")


def _inside(folder: str, href: str) -> str:
    """The archive name of ``href`` (percent-escaped, perhaps with a fragment) relative to ``folder``."""
    target = unquote(href.split("#", 1)[0])
    return posixpath.normpath(posixpath.join(folder, target)).lstrip("/")


def decode(data: bytes) -> str:
    """A chapter's text: its byte-order mark, else its XML declaration's encoding, else UTF-8 (bad bytes replaced)."""
    for bom, name in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            return data.decode(name, errors="replace").lstrip("\ufeff")
    declared = _DECLARED.match(data[:256])
    name = declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        codecs.lookup(name)
    except LookupError:
        name = "utf-8"
    return data.decode(name, errors="replace")


def html_items(blocks: Sequence[Block]) -> Iterator[Heading | Content]:
    """kb's HTML blocks (headings folded into them) back into headings and content."""
    path: tuple[str, ...] = ()
    for block in blocks:
        shared = 0
        while shared < min(len(path), len(block.heading_path)) and path[shared] == block.heading_path[shared]:
            shared += 1
        if shared == len(block.heading_path) and len(block.heading_path) < len(path):
            shared -= 1  # back to an outer heading of the same text
        lines = block.text.split("\n")
        for level, title in enumerate(block.heading_path[shared:], start=shared + 1):
            yield Heading(level, title)
            if lines and " ".join(lines[0].split()) == " ".join(title.split()):
                lines = lines[1:]  # the heading's own line, folded into the block
        path = block.heading_path
        if lines and block.kind != "heading":
            yield Content(block.kind, tuple(lines))


def _package(parts: Parts) -> str:
    container = parts.xml(CONTAINER, SAVE_HINT)
    for rootfile in container.iter(f"{OCF}rootfile") if container is not None else ():
        if rootfile.get("full-path") and rootfile.get("media-type", "application/oebps-package+xml").endswith("xml"):
            return (rootfile.get("full-path") or "").lstrip("/")
    raise KbError("not a valid .epub (META-INF/container.xml names no package file)", hint=SAVE_HINT)


def _spine(opf: Element, folder: str) -> list[str]:
    """The archive names of the spine's XHTML documents, in reading order."""
    manifest = {
        item.get("id"): (item.get("href") or "", item.get("media-type") or "")
        for item in opf.iter(f"{OPF}item")
        if item.get("id")
    }
    names = []
    for ref in opf.iter(f"{OPF}itemref"):
        href, media = manifest.get(ref.get("idref"), ("", ""))
        if href and media in _HTML_TYPES:
            names.append(_inside(folder, href))
    return names


def _encrypted(parts: Parts, chapters: Sequence[str]) -> list[str]:
    """The chapters ``META-INF/encryption.xml`` lists as encrypted (fonts obfuscated do not count)."""
    tree = parts.xml(ENCRYPTION, SAVE_HINT)
    found = []
    for data in tree.iter(f"{ENC}EncryptedData") if tree is not None else ():
        method = data.find(f"{ENC}EncryptionMethod")
        if method is not None and method.get("Algorithm") in _FONT_OBFUSCATION:
            continue
        for ref in data.iter(f"{ENC}CipherReference"):
            name = _inside("", ref.get("URI") or "")
            if name in chapters:
                found.append(name)
    return found


class EpubParser(BinaryParser):
    """EPUB 2 and 3 books: each spine document with text a chapter (``Chapter N``)."""

    kind = ".epub"

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """Parse .epub bytes; every failure is a KbError."""
        self.check_size(data, self.limits.max_bytes)
        return damaged(".epub", SAVE_HINT, lambda: self._parse(data, path))

    def _parse(self, data: bytes, path: str) -> ParsedDocument:
        with open_zip(data, ".epub", SAVE_HINT) as archive:
            infos = check_archive(
                archive,
                self.limits,
                ".epub",
                main=CONTAINER,
                missing="an EPUB book",
                missing_hint="save it as EPUB; .mobi, .azw and other e-book formats are not read",
                parts=lambda name: name.lower().endswith(_READ),
            )
            parts = Parts(archive, infos, self.limits.max_docx_inflated_bytes, ".epub")
            package = _package(parts)
            opf = parts.xml(package, SAVE_HINT)
            if opf is None:
                raise KbError(f"not a valid .epub (its package file {package} is missing)", hint=SAVE_HINT)
            names = _spine(opf, posixpath.dirname(package))
            check_part_count(len(names), self.limits.max_pages, ".epub", "chapter")
            locked = _encrypted(parts, names)
            if locked:
                raise KbError(
                    f"the .epub is DRM protected ({len(locked)} of its {len(names)} chapters are encrypted)",
                    hint="kb reads only books without DRM",
                )
            pages: list[Page] = []
            warnings: list[str] = []
            for name in names:
                raw = parts.read(name)
                if raw is None:
                    warnings.append(f"left out {name}: the spine lists it but the book does not hold it")
                    continue
                items = tuple(html_items(HtmlParser().parse(decode(raw), name).blocks))
                if any(isinstance(item, Content) for item in items):
                    pages.append(Page(len(pages) + 1, items, unit="Chapter", fresh=True))
            title_node = opf.find(f"{OPF}metadata/{DC}title")
        title = (title_node.text or "") if title_node is not None else ""
        first = next((i.text for p in pages for i in p.items if isinstance(i, Heading)), "")
        return parted_document(pages, path, title.strip() or first, "epub", "chapter", warnings)
