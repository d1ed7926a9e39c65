"""Untrusted bytes as a deck, book, OpenDocument file or notebook: a document or one KbError line, nothing else."""

from __future__ import annotations

import io
import zipfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from part_formats import code_cell, epub, markdown_cell, notebook, odf, pptx, slide_xml, stream, xhtml, zipped

from kb_core import KbError
from kb_documents.binary import BinaryParser
from kb_documents.epub import EpubParser
from kb_documents.limits import Limits
from kb_documents.notebook import NotebookParser
from kb_documents.odf import OdfParser
from kb_documents.pptx import PptxParser

SMALL = Limits(max_pages=20, max_docx_inflated_bytes=2_000_000)
PARSERS: dict[str, BinaryParser] = {
    "pptx": PptxParser(SMALL),
    "odp": OdfParser(".odp", SMALL),
    "odt": OdfParser(".odt", SMALL),
    "ods": OdfParser(".ods", SMALL),
    "epub": EpubParser(SMALL),
    "ipynb": NotebookParser(SMALL),
}
SEEDS = {
    "pptx": pptx([(slide_xml("Title", [["a", "b"]], [["h1", "h2"], ["1", "2"]]), ["notes"])]),
    "odp": odf(
        "presentation",
        '<draw:page><draw:frame presentation:class="title"><draw:text-box><text:p>T'
        "</text:p></draw:text-box></draw:frame></draw:page>",
    ),
    "odt": odf("text", '<text:h text:outline-level="2">H</text:h><text:p>body <text:s/>text</text:p>'),
    "ods": odf(
        "spreadsheet",
        '<table:table table:name="S"><table:table-row table:number-rows-repeated="3">'
        '<table:table-cell table:number-columns-repeated="2"><text:p>x</text:p></table:table-cell>'
        "</table:table-row></table:table>",
    ),
    "epub": epub([("c.xhtml", xhtml("C", "<h1>C</h1><p>text</p><table><tr><td>1</td></tr></table>"))], title="B"),
    "ipynb": notebook([markdown_cell("# H\ntext"), code_cell("x = 1\n  y", stream("out"))]),
}
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KINDS = st.sampled_from(sorted(PARSERS))


def _only_kb_errors(kind: str, data: bytes) -> None:
    try:
        doc = PARSERS[kind].parse_bytes(data, f"x.{kind}")
    except KbError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    lines = 0
    for block in doc.blocks:
        assert block.start_line <= block.end_line and block.start_line > lines
        assert block.text.count("\n") == block.end_line - block.start_line
        lines = block.end_line
    page_lines = doc.metadata.get("page_lines", [])
    assert page_lines == sorted(set(page_lines))


@st.composite
def mutated(draw: st.DrawFn, kind: str) -> bytes:
    """A seed file with bytes flipped, cut, inserted or deleted."""
    data = bytearray(SEEDS[kind])
    for _ in range(draw(st.integers(1, 6))):
        action = draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if action == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif action == "cut":
            del data[at:]
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=32))
        elif data:
            del data[at : at + draw(st.integers(1, 64))]
    return bytes(data)


@st.composite
def rewritten(draw: st.DrawFn, kind: str) -> bytes:
    """A seed container with one member's (uncompressed) XML or JSON mutated: what a damaged file holds inside."""
    if kind == "ipynb":
        text = SEEDS[kind].decode()
        at = draw(st.integers(0, len(text)))
        return (text[:at] + draw(st.text(max_size=20)) + text[at + draw(st.integers(0, 20)) :]).encode()
    with zipfile.ZipFile(io.BytesIO(SEEDS[kind])) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    name = draw(st.sampled_from(sorted(members)))
    body = members[name]
    at = draw(st.integers(0, len(body)))
    members[name] = body[:at] + draw(st.binary(max_size=24)) + body[at + draw(st.integers(0, 24)) :]
    return zipped(members)


@FUZZ
@given(data=st.binary(max_size=4096), kind=KINDS)
def test_random_bytes(data: bytes, kind: str) -> None:
    _only_kb_errors(kind, data)


@FUZZ
@given(data=st.data(), kind=KINDS)
def test_mutated_files(data: st.DataObject, kind: str) -> None:
    _only_kb_errors(kind, data.draw(mutated(kind)))


@FUZZ
@given(data=st.data(), kind=KINDS)
def test_mutated_parts_inside_a_sound_container(data: st.DataObject, kind: str) -> None:
    _only_kb_errors(kind, data.draw(rewritten(kind)))


@FUZZ
@given(text=st.text(max_size=1024), kind=KINDS)
def test_random_text_through_the_text_contract(text: str, kind: str) -> None:
    try:
        PARSERS[kind].parse(text, f"x.{kind}")
    except KbError as exc:
        assert "\n" not in str(exc)
