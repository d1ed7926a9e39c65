"""The OCR engine an ingest hands its parsers: chosen by ``[ingest] ocr``, made on first use, and
never asked twice about the same pixels (``kb_core.ingest.ocr``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_core import KbError, KnowledgeBase, ingest_paths, load_config
from kb_core.extend.registry import Registry
from kb_core.ingest.ocr import OCR_MISSING, OCR_OFF, CachedOcr, choose_ocr
from kb_core.maintenance import doctor_report
from kb_core.plugin import (
    Block,
    OcrImage,
    OcrLine,
    ParsedDocument,
    ParserContext,
    RegisterOcrEngine,
    RegisterParser,
    hookimpl,
)
from kb_core.testing import ScriptedOcr, TestIndexesPlugin, blank_image, load_registry

TEST_INDEXES = {"indexes.enabled": ["test-lexical", "test-vector"], "models.embedding.name": "minilm"}


def _reads_its_shade(image: OcrImage) -> list[OcrLine]:
    return [OcrLine(f"shade {image.pixels[0]}", (0, 0, image.width, image.height), 0.9)]


class ScanPlugin:
    """An OCR engine (``scripted``) and a parser of ``.scan`` files: each byte of the file is a page of that shade."""

    def __init__(self) -> None:
        self.engine = ScriptedOcr(lines_for=_reads_its_shade)
        self.contexts: list[ParserContext] = []

    @hookimpl
    def register_ocr_engines(self, register: RegisterOcrEngine) -> None:
        register("scripted", lambda ctx: self.engine, languages="English")

    @hookimpl
    def register_parsers(self, register: RegisterParser) -> None:
        register("scan", self._parser, extensions=(".scan",))

    def _parser(self, ctx: ParserContext) -> ScanParser:
        self.contexts.append(ctx)
        return ScanParser(ctx)


class ScanParser:
    def __init__(self, ctx: ParserContext) -> None:
        self.ctx = ctx

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        if self.ctx.ocr is None:
            raise KbError(f"no text layer; {self.ctx.ocr_missing}")
        pages = data.strip()
        lines = []
        for number, shade in enumerate(pages, start=1):
            if self.ctx.progress:
                self.ctx.progress("ocr " + path, number, len(pages))
            lines += [line.text for line in self.ctx.ocr.read(blank_image(40, 20, 150, shade))]
        return ParsedDocument(path, (Block("\n".join(lines), 1, len(lines), verbatim=False),))

    def parse(self, text: str, path: str) -> ParsedDocument:
        return self.parse_bytes(text.encode(), path)


@pytest.fixture
def scans(tmp_path: Path) -> ScanPlugin:
    return ScanPlugin()


def _kb(tmp_path: Path, plugin: ScanPlugin | None, **overrides: object) -> KnowledgeBase:
    extra = [("kb-test-indexes", TestIndexesPlugin())] + ([("scans", plugin)] if plugin else [])
    config = load_config(kb_dir=tmp_path / "kb", overrides=TEST_INDEXES | overrides, environ={})
    return KnowledgeBase(config, load_registry(extra_plugins=extra))


def test_without_an_engine_there_is_none_and_the_line_names_the_install_command(tmp_path: Path) -> None:
    kb = KnowledgeBase(load_config(kb_dir=tmp_path / "kb", environ={}), Registry())
    assert choose_ocr(kb) == (None, OCR_MISSING)
    assert "pip install kb-tesseract" in OCR_MISSING and "apt-get install" in OCR_MISSING


def test_off_is_off_even_with_an_engine(tmp_path: Path, scans: ScanPlugin) -> None:
    assert choose_ocr(_kb(tmp_path, scans, **{"ingest.ocr": "off"})) == (None, OCR_OFF)


def test_a_named_engine_that_is_not_installed_fails_only_the_scans(tmp_path: Path, scans: ScanPlugin) -> None:
    engine, missing = choose_ocr(_kb(tmp_path, scans, **{"ingest.ocr": "nonesuch"}))
    assert engine is None and "no OCR engine named 'nonesuch' is installed" in missing and "scripted" in missing
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.scan").write_bytes(b"\x05")
    (notes / "n.md").write_text("# A note\n\nplain text\n", encoding="utf-8")
    with _kb(tmp_path, scans, **{"ingest.ocr": "nonesuch"}) as kb:
        report = ingest_paths(kb, [notes])
    assert report.added == ["n.md"] and [f.path for f in report.failed] == ["a.scan"]


def test_the_engine_is_made_on_first_use_and_reads_each_image_once(tmp_path: Path, scans: ScanPlugin) -> None:
    made: list[int] = []

    def make() -> ScriptedOcr:
        made.append(1)
        return scans.engine

    ocr = CachedOcr(make, tmp_path / "cache")
    assert made == []
    first = ocr.read(blank_image(shade=7))
    assert first == ocr.read(blank_image(shade=7)) == [OcrLine("shade 7", (0, 0, 200, 100), 0.9)]
    assert (len(made), len(scans.engine.seen), ocr.read_count, ocr.cached_count) == (1, 1, 1, 1)
    ocr.read(blank_image(shade=8))
    ocr.read(blank_image(shade=7, dpi=300))  # another resolution is another read
    assert len(scans.engine.seen) == 3
    again = CachedOcr(make, tmp_path / "cache")  # the next process
    assert again.read(blank_image(shade=7)) == first and len(scans.engine.seen) == 3


def test_a_damaged_cache_entry_is_read_again(tmp_path: Path, scans: ScanPlugin) -> None:
    ocr = CachedOcr(lambda: scans.engine, tmp_path / "cache")
    ocr.read(blank_image(shade=3))
    for entry in (tmp_path / "cache").rglob("*.json"):
        entry.write_text("[[1, 2", encoding="utf-8")
    assert ocr.read(blank_image(shade=3)) == [OcrLine("shade 3", (0, 0, 200, 100), 0.9)]
    assert len(scans.engine.seen) == 2


def test_an_engine_with_another_identity_reads_again(tmp_path: Path) -> None:
    one, two = ScriptedOcr(lines_for=_reads_its_shade), ScriptedOcr(lines_for=_reads_its_shade, identity="v2")
    CachedOcr(lambda: one, tmp_path / "cache").read(blank_image())
    CachedOcr(lambda: two, tmp_path / "cache").read(blank_image())
    assert (len(one.seen), len(two.seen)) == (1, 1)


def test_ingest_hands_parsers_the_engine_and_progress_and_never_reads_a_page_twice(
    tmp_path: Path, scans: ScanPlugin
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.scan").write_bytes(bytes([40, 50, 60]))
    (notes / "b.scan").write_bytes(bytes([50]))
    seen: list[tuple[str, int, int]] = []
    with _kb(tmp_path, scans, **{"ingest.ocr": "scripted"}) as kb:
        report = ingest_paths(kb, [notes], progress=lambda stage, done, total: seen.append((stage, done, total)))
        assert report.failed == [] and sorted(report.added) == ["a.scan", "b.scan"]
        assert ("ocr a.scan", 3, 3) in seen and ("ocr b.scan", 1, 1) in seen
        assert len(scans.engine.seen) == 3  # b's page is a's second: read once
        assert "shade 60" in kb.store.chunks_of(["a.scan"])[0].text
        kb.store.delete_documents(["a.scan", "b.scan"])
        ingest_paths(kb, [notes])  # parsed again: every page from the cache
        assert len(scans.engine.seen) == 3
        assert {type(c) for c in scans.contexts} == {ParserContext}


def test_without_an_engine_a_scan_fails_alone_with_the_install_line(tmp_path: Path, scans: ScanPlugin) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.scan").write_bytes(b"\x05")
    (notes / "n.md").write_text("# A note\n\nplain text\n", encoding="utf-8")
    with _kb(tmp_path, scans, **{"ingest.ocr": "off"}) as kb:
        report = ingest_paths(kb, [notes])
    assert report.added == ["n.md"]
    assert [(f.path, f.reason) for f in report.failed] == [("a.scan", f"no text layer; {OCR_OFF}")]


def test_doctor_names_the_engine_and_its_languages_or_why_there_is_none(tmp_path: Path, scans: ScanPlugin) -> None:
    with _kb(tmp_path, scans, **{"ingest.ocr": "scripted"}) as kb:
        check = next(c for c in doctor_report(kb, generate=False).checks if c.component == "ocr")
    assert check.ok and "scripted-ocr 1" in check.detail and "English" in check.detail
    with _kb(tmp_path, scans, **{"ingest.ocr": "off"}) as kb:
        check = next(c for c in doctor_report(kb, generate=False).checks if c.component == "ocr")
    assert check.ok and check.detail == OCR_OFF
