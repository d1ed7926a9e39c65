"""E-books (.epub) chapter by chapter, and OpenDocument text (.odt) and sheets (.ods)."""

from __future__ import annotations

import io
import zipfile

import pytest
from part_formats import epub, odf, xhtml, zipped

from kb_core import KbError
from kb_documents.assemble import page_of_line, parsed_text
from kb_documents.epub import EpubParser, decode
from kb_documents.limits import Limits
from kb_documents.odf import OdfParser

HARBOUR = xhtml(
    "The Harbour",
    "<h1>The Harbour</h1>\n<p>The ferry left at dawn.</p>\n<h2>The Keeper</h2>\n"
    "<p>The lighthouse keeper, Ada Lindqvist, logged every ship by hand.</p>\n"
    "<table><tr><th>Ship</th><th>Tonnage</th></tr><tr><td>Marta</td><td>1200</td></tr></table>",
)
STORM = xhtml("Storm", "<p>No heading here: the storm came from the west in the night.</p>")
BOOK = epub([("harbour.xhtml", HARBOUR), ("text/storm%20night.xhtml", STORM)], title="Coast Stories")


def test_each_spine_document_with_text_is_a_chapter() -> None:
    # (the second chapter's href is percent-escaped: the file is "text/storm night.xhtml")
    book = epub([("harbour.xhtml", HARBOUR), ("storm night.xhtml", STORM)], title="Coast Stories")
    book = book.replace(b'href="storm night.xhtml"', b'href="storm%20night.xhtml"')
    doc = EpubParser().parse_bytes(book, "coast.epub")
    assert doc.title == "Coast Stories"
    assert parsed_text(doc.blocks).split("\n") == [
        "Chapter 1",  # the cover holds no text: it is no chapter
        "The Harbour",
        "The ferry left at dawn.",
        "The Keeper",
        "The lighthouse keeper, Ada Lindqvist, logged every ship by hand.",
        "Ship | Tonnage",
        "Marta | 1200",
        "Chapter 2",
        "No heading here: the storm came from the west in the night.",
    ]
    assert doc.metadata["page_lines"] == [1, 8] and doc.metadata["page_unit"] == "chapter"
    keeper = next(b for b in doc.blocks if "Lindqvist" in b.text)
    assert keeper.heading_path == ("Chapter 1", "The Harbour", "The Keeper")
    storm = doc.blocks[-1]
    assert storm.heading_path == ("Chapter 2",)  # the first chapter's headings stay in it
    assert page_of_line(doc.metadata["page_lines"], storm.start_line) == 2
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.text.split("\n")[0] == "Ship | Tonnage"


def test_a_chapter_the_spine_lists_but_the_book_lacks_is_a_warning() -> None:
    doc = EpubParser().parse_bytes(BOOK, "coast.epub")  # (storm%20night names "text/storm night.xhtml": absent)
    assert any("left out OEBPS/text/storm night.xhtml" in w for w in doc.warnings)
    assert doc.metadata["chapters"] == 1


ENCRYPTION = (
    '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
    'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
    '<enc:EncryptionMethod Algorithm="{}"/><enc:CipherData><enc:CipherReference URI="{}"/>'
    "</enc:CipherData></enc:EncryptedData></encryption>"
)


def test_a_book_with_drm_is_refused_but_obfuscated_fonts_are_not() -> None:
    locked = ENCRYPTION.format("http://www.w3.org/2001/04/xmlenc#aes128-cbc", "OEBPS/harbour.xhtml")
    with pytest.raises(KbError, match=r"the .epub is DRM protected \(1 of its 2 chapters"):
        EpubParser().parse_bytes(epub([("harbour.xhtml", HARBOUR)], encryption=locked), "drm.epub")
    fonts = ENCRYPTION.format("http://www.idpf.org/2008/embedding", "OEBPS/harbour.xhtml")
    assert EpubParser().parse_bytes(epub([("harbour.xhtml", HARBOUR)], encryption=fonts), "f.epub").blocks


def test_a_zip_bomb_chapter_is_refused_before_it_is_inflated() -> None:
    bomb = xhtml("Bomb", "<p>" + "a" * 3_000_000 + "</p>")
    with pytest.raises(KbError, match="OEBPS/bomb.xhtml in the .epub would inflate [0-9]+ times") as caught:
        EpubParser().parse_bytes(epub([("bomb.xhtml", bomb)]), "bomb.epub")
    assert "zip bomb" in str(caught.value)
    with pytest.raises(KbError, match="parts, over the limit of 3"):
        EpubParser(Limits(max_docx_entries=3)).parse_bytes(BOOK, "many.epub")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not a valid .epub"),
        (BOOK[: len(BOOK) // 2], "not a valid .epub"),
        (zipped({"mimetype": "application/epub+zip"}), "not an EPUB book"),
        (zipped({"META-INF/container.xml": "<container/>"}), "names no package file"),
        (epub([]), "the .epub has no text"),
        (epub([("x.xhtml", HARBOUR)], extra={"OEBPS/content.opf": b"<package><<"}), "content.opf .*not well-formed"),
    ],
)
def test_bad_books_are_one_line(data: bytes, message: str) -> None:
    with pytest.raises(KbError, match=message) as caught:
        EpubParser().parse_bytes(data, "bad.epub")
    assert "\n" not in str(caught.value)


def test_chapters_are_decoded_by_their_mark_or_declaration() -> None:
    assert decode("<p>é</p>".encode("utf-16")) == "<p>é</p>"
    assert decode('<?xml version="1.0" encoding="iso-8859-1"?><p>\xe9</p>'.encode("latin-1")).endswith("<p>é</p>")
    assert decode(b'<?xml version="1.0" encoding="no-such-codec"?><p>\xff</p>').endswith("<p>\ufffd</p>")


ODT = odf(
    "text",
    '<text:h text:outline-level="1">Maintenance Manual</text:h>'
    "<text:p>Check the inverter <text:span>every</text:span><text:s/>month.</text:p>"
    '<text:h text:outline-level="2">Tools</text:h>'
    "<text:list><text:list-item><text:p>torque wrench</text:p></text:list-item>"
    "<text:list-item><text:p>multimeter</text:p><text:list><text:list-item><text:p>CAT III</text:p>"
    "</text:list-item></text:list></text:list-item></text:list>"
    "<text:tracked-changes><text:changed-region><text:deletion><text:p>deleted words</text:p>"
    "</text:deletion></text:changed-region></text:tracked-changes>"
    "<text:section><table:table><table:table-header-rows><table:table-row>"
    "<table:table-cell><text:p>Part</text:p></table:table-cell><table:table-cell><text:p>Interval</text:p>"
    "</table:table-cell></table:table-row></table:table-header-rows><table:table-row>"
    "<table:table-cell><text:p>Fan filter</text:p></table:table-cell><table:table-cell><text:p>6 months</text:p>"
    "</table:table-cell></table:table-row></table:table></text:section>"
    "<text:p>Footnote here<text:note><text:note-body><text:p>a note</text:p></text:note-body></text:note>.</text:p>",
    title="Manual",
)


def test_odt_headings_paragraphs_lists_and_tables() -> None:
    doc = OdfParser(".odt").parse_bytes(ODT, "manual.odt")
    assert doc.title == "Manual"
    assert parsed_text(doc.blocks).split("\n") == [
        "Maintenance Manual",
        "Check the inverter every month.",
        "Tools",
        "- torque wrench",
        "- multimeter",
        "- CAT III",
        "Part | Interval",
        "Fan filter | 6 months",
        "Footnote here.",
    ]
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.heading_path == ("Maintenance Manual", "Tools") and table.text.startswith("Part | Interval")


def test_ods_sheets_are_tables_and_repeats_cost_nothing() -> None:
    sheet = (
        '<table:table table:name="Budget"><table:table-row>'
        "<table:table-cell><text:p>Item</text:p></table:table-cell>"
        "<table:table-cell><text:p>Cost</text:p></table:table-cell>"
        '<table:table-cell table:number-columns-repeated="16382"/></table:table-row>'
        "<table:table-row><table:table-cell><text:p>Panels</text:p></table:table-cell>"
        '<table:table-cell office:value-type="float" office:value="900"><text:p>900</text:p></table:table-cell>'
        '</table:table-row><table:table-row table:number-rows-repeated="2">'
        "<table:table-cell><text:p>Same</text:p></table:table-cell></table:table-row>"
        '<table:table-row table:number-rows-repeated="1048570"><table:table-cell '
        'table:number-columns-repeated="16384"/></table:table-row></table:table>'
        '<table:table table:name="Empty"/>'
    )
    doc = OdfParser(".ods").parse_bytes(odf("spreadsheet", sheet), "budget.ods")
    assert parsed_text(doc.blocks).split("\n") == ["Sheet: Budget", "Item | Cost", "Panels | 900", "Same", "Same"]
    assert doc.metadata["sheets"] == 1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not a valid .odt"),
        (odf("text", "<text:p>secret</text:p>", encrypted=True), "the .odt is password protected"),
        (zipped({"mimetype": "x"}), "not an OpenDocument file"),
        (odf("text", ""), "the .odt has no text"),
        (odf("text", "<text:p>unclosed"), "not well-formed XML"),
        (odf("text", '<!DOCTYPE x [<!ENTITY a "b">]><text:p>&a;</text:p>'), "not well-formed|entities"),
    ],
)
def test_bad_opendocument_files_are_one_line(data: bytes, message: str) -> None:
    with pytest.raises(KbError, match=message) as caught:
        OdfParser(".odt").parse_bytes(data, "bad.odt")
    assert "\n" not in str(caught.value)


def test_entities_in_content_xml_are_refused() -> None:
    hostile = odf("text", "<text:p>&b;</text:p>")
    with zipfile.ZipFile(io.BytesIO(hostile)) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    dtd = b'<!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    content = members["content.xml"]
    members["content.xml"] = content[: content.index(b"?>") + 2] + dtd + content[content.index(b"?>") + 2 :]
    with pytest.raises(KbError, match="content.xml in the .odt uses XML entities or a DTD"):
        OdfParser(".odt").parse_bytes(zipped(members), "laughs.odt")
