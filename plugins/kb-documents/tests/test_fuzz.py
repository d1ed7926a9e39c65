"""Untrusted bytes: whatever the input, the parsers return a document or raise KbError, nothing else."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core import KbError
from kb_core.plugin import ParsedDocument
from kb_documents.binary import BinaryParser
from kb_documents.docx import DocxParser
from kb_documents.limits import Limits
from kb_documents.pdf import PdfParser

SMALL = Limits(max_pages=20, max_docx_inflated_bytes=2_000_000)
PARSERS: dict[str, BinaryParser] = {"pdf": PdfParser(SMALL), "docx": DocxParser(SMALL)}
SEEDS = {"pdf": ["report.pdf", "columns.pdf", "scanned.pdf", "encrypted.pdf"], "docx": ["handbook.docx"]}
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _only_kb_errors(parse: Callable[[], ParsedDocument]) -> None:
    try:
        doc = parse()
    except KbError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert isinstance(doc, ParsedDocument)
        for block in doc.blocks:
            assert block.start_line <= block.end_line
            assert block.text.count("\n") == block.end_line - block.start_line


@st.composite
def mutated(draw: st.DrawFn, fixture_bytes: Callable[[str], bytes], kind: str) -> bytes:
    data = bytearray(fixture_bytes(draw(st.sampled_from(SEEDS[kind]))))
    for _ in range(draw(st.integers(1, 8))):
        action = draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if action == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif action == "cut":
            del data[at:]
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
        elif data:
            del data[at : at + draw(st.integers(1, 256))]
    return bytes(data)


@FUZZ
@given(data=st.binary(max_size=4096), kind=st.sampled_from(["pdf", "docx"]))
def test_random_bytes(data: bytes, kind: str) -> None:
    _only_kb_errors(lambda: PARSERS[kind].parse_bytes(data, f"x.{kind}"))


@FUZZ
@given(data=st.data(), kind=st.sampled_from(["pdf", "docx"]))
def test_mutated_fixtures(fixture_bytes: Callable[[str], bytes], data: st.DataObject, kind: str) -> None:
    blob = data.draw(mutated(fixture_bytes, kind))
    _only_kb_errors(lambda: PARSERS[kind].parse_bytes(blob, f"x.{kind}"))


@FUZZ
@given(text=st.text(max_size=2048), kind=st.sampled_from(["pdf", "docx"]))
def test_random_text_through_the_text_contract(text: str, kind: str) -> None:
    _only_kb_errors(lambda: PARSERS[kind].parse("%PDF-1.4\n" + text if kind == "pdf" else text, f"x.{kind}"))
