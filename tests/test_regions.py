"""Text read by OCR keeps its page, box and confidence: in answers' citations, in a grounded answer
resting only on low-confidence text, and in ``kb inspect`` (``kb_core.storage.regions``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core import KnowledgeBase, ask, ingest_paths, load_config
from kb_core.cli.main import main
from kb_core.extend.registry import reset_registry
from kb_core.plugin import Block, ParsedDocument, RegisterParser, hookimpl
from kb_core.storage.regions import (
    LOW_CONFIDENCE_NOTE,
    chunk_ocr_lines,
    noted_low_confidence,
    ocr_lines,
    ocr_summary,
    region_of,
)
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, extractive, load_registry
from kb_core.types import AnswerCitation, Chunk, Citation, Region

LINES = ["Page 1", "Invoice 4711 total 93.20 euros", "Paid by transfer on 3 March", "Page 2", "Thank you"]


def _metadata(confidence: float) -> dict[str, Any]:
    """What a parser of scans stores: lines 2-3 on page 1, line 5 on page 2."""
    return {
        "ocr": {
            "engine": "scripted-ocr 1",
            "pages": [[1, 612, 792], [2, 612, 792]],
            "lines": [
                [2, 1, 72, 100, 300, 14, confidence],
                [3, 1, 80, 120, 250, 14, 0.95],
                [5, 2, 72, 90, 90, 14, 0.9],
            ],
        }
    }


class ScanPlugin:
    """A parser of ``.scan`` files (their text is what OCR "read"), storing :func:`_metadata` with the
    confidence of line 2 given in the file's name (``low.scan``: 0.1, and line 3's then 0.2)."""

    @hookimpl
    def register_parsers(self, register: RegisterParser) -> None:
        register("scan", lambda ctx: self, extensions=(".scan",))

    def parse(self, text: str, path: str) -> ParsedDocument:
        metadata = _metadata(0.1 if path.startswith("low") else 0.93)
        if path.startswith("low"):
            metadata["ocr"]["lines"][1][6] = 0.2
        blocks = (Block("\n".join(LINES[:3]), 1, 3, ("Page 1",), verbatim=True), Block(LINES[4], 5, 5, ("Page 2",)))
        return ParsedDocument(path, blocks, metadata)


def test_a_region_is_the_box_around_the_lines_on_their_first_page() -> None:
    region = region_of(_metadata(0.93), 1, 5)
    assert region == Region(1, (72, 100, 300, 34), round((0.93 + 0.95) / 2, 2), False)  # page 1's lines
    assert region.fragment() == "page=1&xywh=72,100,300,34"
    assert region_of(_metadata(0.93), 5, 5) == Region(2, (72, 90, 90, 14), 0.9, False)
    assert region_of(_metadata(0.93), 1, 1) is None  # "Page 1" is kb's line, not OCR's
    assert region_of({}, 1, 5) is None
    assert region_of(_metadata(0.1), 2, 2) == Region(1, (72, 100, 300, 14), 0.1, True)


def test_a_grounded_answer_is_noted_only_when_every_citation_is_low() -> None:
    def cited(region: Region | None) -> AnswerCitation:
        return AnswerCitation(1, "c", "a#L1-L2", Citation("a", 1, 2), 0.5, (), region)

    low, high = Region(1, (0, 0, 1, 1), 0.3, True), Region(1, (0, 0, 1, 1), 0.9, False)
    assert noted_low_confidence("", (cited(low),)) == LOW_CONFIDENCE_NOTE
    assert noted_low_confidence("dropped one", (cited(low), cited(low))) == f"dropped one; {LOW_CONFIDENCE_NOTE}"
    assert noted_low_confidence("", (cited(low), cited(high))) == ""
    assert noted_low_confidence("", (cited(low), cited(None))) == ""
    assert noted_low_confidence("", ()) == ""


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=40,
)


@given(st.dictionaries(st.sampled_from(["ocr", "lines", "x"]), JSON | st.fixed_dictionaries({"lines": JSON})))
def test_any_stored_metadata_is_read_without_error(metadata: dict[str, Any]) -> None:
    lines = ocr_lines(metadata)
    assert all(r.line >= 1 and r.page >= 1 and min(r.box) >= 0 and 0 <= r.confidence <= 1 for r in lines.values())
    region_of(metadata, 1, 10**6)
    ocr_summary(metadata)
    chunk = Chunk("c", "d", 0, "a\nb", "h", 1, 2)
    chunk_ocr_lines(metadata, chunk, [chunk])


@pytest.fixture
def scans_kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "high.scan").write_text("\n".join(LINES), encoding="utf-8")
    (notes / "low.scan").write_text("\n".join(LINES), encoding="utf-8")
    plugins = [("test-indexes", TestIndexesPlugin()), ("scans", ScanPlugin()), ("scripted", ScriptedPlugin(extractive))]
    overrides = {"indexes.enabled": ["test-lexical"], "models.llm.backend": "scripted", "rag.answer_check": 0}
    registry = load_registry(extra_plugins=plugins)
    with KnowledgeBase(load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={}), registry) as kb:
        assert ingest_paths(kb, [notes]).failed == []
        reset_registry(registry)
        yield kb
    reset_registry(None)


def test_an_answer_cites_the_page_and_region_and_says_when_it_rests_on_low_confidence(
    scans_kb: KnowledgeBase,
) -> None:
    answer = ask(scans_kb, "What was the invoice 4711 total?", save=False)
    assert answer.grounded, answer.note
    regions = {c.citation.path: c.region for c in answer.citations}
    assert set(regions) <= {"high.scan", "low.scan"} and regions
    for path, region in regions.items():
        assert region is not None and region.page == 1 and region.box == (72, 100, 300, 34)
        assert region.low == (path == "low.scan")
    assert (LOW_CONFIDENCE_NOTE in answer.note) == all(r is not None and r.low for r in regions.values())


def test_an_answer_resting_only_on_low_confidence_text_says_so(scans_kb: KnowledgeBase) -> None:
    answer = ask(scans_kb, "What was the invoice 4711 total?", save=False)
    if answer.citations[0].citation.path != "low.scan":  # make it the only one
        scans_kb.store.delete_documents(["high.scan"])
        scans_kb.close()
        answer = ask(scans_kb, "What was the invoice 4711 total?", save=False)
    assert answer.grounded and [c.citation.path for c in answer.citations] == ["low.scan"]
    assert LOW_CONFIDENCE_NOTE in answer.note


def test_inspect_shows_the_ocr_lines_with_their_confidence(
    scans_kb: KnowledgeBase, capsys: pytest.CaptureFixture[str]
) -> None:
    kb_dir = ["--kb", str(scans_kb.directory)]
    assert main([*kb_dir, "inspect", "low.scan#L1-L3", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["ocr_lines"] == [
        {"line": 2, "page": 1, "box": [72, 100, 300, 14], "confidence": 0.1, "low": True, "text": LINES[1]},
        {"line": 3, "page": 1, "box": [80, 120, 250, 14], "confidence": 0.2, "low": True, "text": LINES[2]},
    ]
    assert main([*kb_dir, "inspect", "high.scan#L1-L3"]) == 0
    out = capsys.readouterr().out
    assert (
        "L2  p1  0.93  Invoice 4711" in out
        and "L3  p1  0.95  Paid by" in out
        and "low" not in out.split("marked low):")[1]
    )
    assert main([*kb_dir, "inspect", "low.scan"]) == 0
    assert "ocr: scripted-ocr 1 read 3 lines on 2 page(s), 2 of low confidence" in capsys.readouterr().out


def test_inspect_gives_each_ocr_line_its_text_in_a_chunk_that_repeats_a_table_header() -> None:
    metadata = {"ocr": {"lines": [[4, 1, 0, 0, 9, 9, 0.9], [5, 1, 0, 10, 9, 9, 0.4]]}}
    first = Chunk("b", "d", 0, "Year | Sales\n2023 | 7", "h", 2, 3)
    continued = Chunk("c", "d", 1, "Year | Sales\n2024 | 9\n2025 | 11", "h", 4, 5)  # header outside its span
    assert [(r["line"], r["text"], r["low"]) for r in chunk_ocr_lines(metadata, continued, [first, continued])] == [
        (4, "2024 | 9", False),
        (5, "2025 | 11", True),
    ]
    joined = Chunk("c", "d", 1, "Total\n\n2025 | 11", "h", 4, 5)  # blocks joined by a blank line
    assert [r["text"] for r in chunk_ocr_lines(metadata, joined, [joined])] == ["Total", "2025 | 11"]
