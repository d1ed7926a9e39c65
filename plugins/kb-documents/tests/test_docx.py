"""The DOCX parser: paragraphs as lines, heading styles, tables as rows, hostile archives."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable

import pytest

from kb_core import KbError
from kb_documents.assemble import parsed_text
from kb_documents.docx import DocxParser
from kb_documents.limits import Limits

Fixture = Callable[[str], bytes]
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _docx(document_xml: str | bytes, extra: dict[str, bytes] | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", document_xml)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return out.getvalue()


def test_each_paragraph_is_one_line_and_headings_make_the_path(fixture_bytes: Fixture) -> None:
    doc = DocxParser().parse_bytes(fixture_bytes("handbook.docx"), "handbook.docx")
    lines = parsed_text(doc.blocks).split("\n")
    assert doc.title == "Operator Handbook"
    assert lines[:4] == [
        "Operator Handbook",
        "Safety",
        "Always isolate the string before opening a combiner box.",
        "Wear class 0 gloves when measuring open-circuit voltage.",
    ]
    lockout = next(b for b in doc.blocks if "DC isolator" in b.text)
    assert lockout.heading_path == ("Operator Handbook", "Safety", "Lockout procedure")
    assert lockout.text.split("\n")[0] == "Lockout procedure"  # the heading folds into its content
    pager = next(b for b in doc.blocks if "7788" in b.text)
    assert pager.heading_path == ("Operator Handbook", "Contacts")
    assert doc.metadata == {"format": "docx", "paragraphs": len(lines)}


def test_tables_become_rows(fixture_bytes: Fixture) -> None:
    doc = DocxParser().parse_bytes(fixture_bytes("handbook.docx"), "handbook.docx")
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.text.split("\n") == ["Role | Extension", "Control room | 2201", "Site manager | 2245"]
    assert table.end_line - table.start_line == 2


def test_zip_bomb_is_refused_before_inflating(fixture_bytes: Fixture) -> None:
    with pytest.raises(KbError, match="would inflate 10[0-9][0-9] times") as caught:
        DocxParser().parse_bytes(fixture_bytes("bomb.docx"), "bomb.docx")
    assert "zip bomb" in str(caught.value)


def test_total_inflated_size_and_part_count_are_limited(fixture_bytes: Fixture) -> None:
    data = fixture_bytes("handbook.docx")
    with pytest.raises(KbError, match="would inflate to .* over the limit of 1000"):
        DocxParser(Limits(max_docx_inflated_bytes=1000)).parse_bytes(data, "h.docx")
    with pytest.raises(KbError, match="parts, over the limit of 3"):
        DocxParser(Limits(max_docx_entries=3)).parse_bytes(data, "h.docx")


def test_a_part_that_lies_about_its_size_is_cut_off() -> None:
    body = f'<w:document xmlns:w="{W_NS}"><w:body><w:p><w:r><w:t>{"x" * 5000}</w:t></w:r></w:p></w:body></w:document>'
    data = bytearray(_docx(body))
    # Shrink the declared uncompressed size in the central directory to 10 bytes.
    central = data.rindex(b"PK\x01\x02")
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    with pytest.raises(KbError, match="damaged|inflates past"):
        DocxParser(Limits(max_docx_inflated_bytes=100, max_docx_ratio=10_000)).parse_bytes(bytes(data), "liar.docx")


def test_xml_entities_are_refused() -> None:
    body = (
        f'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
        f'<w:document xmlns:w="{W_NS}"><w:body><w:p><w:r><w:t>&b;</w:t></w:r></w:p></w:body></w:document>'
    )
    with pytest.raises(KbError, match="XML entities or a DTD"):
        DocxParser().parse_bytes(_docx(body), "entities.docx")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"PK\x03\x04 this is not really a zip archive", "not a valid .docx"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504), "the .docx is password protected"),
        (_docx("<not-closed>"), "not well-formed XML"),
        (_docx(f'<w:document xmlns:w="{W_NS}"><w:body/></w:document>'), "the .docx has no text"),
    ],
)
def test_bad_docx_files_raise_one_clear_line(data: bytes, message: str) -> None:
    with pytest.raises(KbError, match=message) as caught:
        DocxParser().parse_bytes(data, "bad.docx")
    assert "\n" not in str(caught.value)


def test_an_archive_without_a_word_document() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "hi")
    with pytest.raises(KbError, match="no word/document.xml"):
        DocxParser().parse_bytes(out.getvalue(), "not-word.docx")


def test_outline_levels_and_list_paragraphs() -> None:
    body = (
        f'<w:document xmlns:w="{W_NS}"><w:body>'
        '<w:p><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:r><w:t>Chapter</w:t></w:r></w:p>'
        "<w:p><w:pPr><w:numPr/></w:pPr><w:r><w:t>first</w:t></w:r><w:r><w:tab/><w:t>item</w:t></w:r></w:p>"
        "</w:body></w:document>"
    )
    doc = DocxParser().parse_bytes(_docx(body), "outline.docx")
    assert parsed_text(doc.blocks) == "Chapter\n- first item"
    assert doc.blocks[0].heading_path == ("Chapter",)
    assert doc.title == "Chapter"


def test_parts_in_other_encodings_go_through_defusedxml() -> None:
    body = (
        f'<?xml version="1.0" encoding="UTF-16"?><w:document xmlns:w="{W_NS}">'
        "<w:body><w:p><w:r><w:t>utf16 text</w:t></w:r></w:p></w:body></w:document>"
    )
    doc = DocxParser().parse_bytes(_docx(body.encode("utf-16")), "utf16.docx")
    assert parsed_text(doc.blocks) == "utf16 text"
    hostile = body.replace("?>", '?><!DOCTYPE d [<!ENTITY a "x">]>', 1).replace("utf16 text", "&a;")
    with pytest.raises(KbError, match="XML entities or a DTD"):
        DocxParser().parse_bytes(_docx(hostile.encode("utf-16")), "utf16.docx")
