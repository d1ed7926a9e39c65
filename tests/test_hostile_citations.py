"""Citations from anyone: every form kb prints is read back by the one parser (:meth:`kb_core.Citation.parse`,
used by ``kb inspect``, ``kb pages`` and ``kb serve``'s document routes), and anything else is one KbError
line, never another exception, and never work that grows with a number in the text (issue 42, part 5)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core import KbError, KnowledgeBase, ingest_paths, load_config
from kb_core.bounds import BOX, LINE, PAGE
from kb_core.cli.main import main
from kb_core.extend.registry import reset_registry
from kb_core.plugin import Block, ParsedDocument, RegisterParser, hookimpl
from kb_core.storage import regions
from kb_core.storage.cited import document_lines
from kb_core.storage.lines import MAX_LINES
from kb_core.storage.regions import chunk_ocr_lines, ocr_lines, page_count, region_of
from kb_core.storage.store import StoreOfRecord
from kb_core.testing import TestIndexesPlugin, load_registry
from kb_core.types import Chunk, Citation, Document, Region

#: A number as a hostile citation may write it: small, at and past each bound, signed, long, zero-padded.
NUMBERS = (
    st.integers(-3, 12).map(str)
    | st.sampled_from([LINE, PAGE, BOX]).flatmap(lambda b: st.integers(int(b.high) - 1, int(b.high) + 2).map(str))
    | st.integers(-(10**30), 10**30).map(str)
    | st.integers(1, 5000).map(lambda n: "9" * n)
    | st.integers(0, 30).map(lambda n: "0" * n + "7")
)
PATHS = st.sampled_from(["scan.pdf", "a#b.md", "notes/x.md", "", "#", "é.png"]) | st.text(max_size=12)


@st.composite
def citation_like(draw: st.DrawFn) -> str:
    """Text shaped like a citation, its parts kept, dropped, repeated or out of bounds."""
    number = lambda: draw(NUMBERS)  # noqa: E731
    parts = []
    if draw(st.booleans()):
        parts.append(f"page={number()}")
    if draw(st.booleans()):
        box = [number() for _ in range(draw(st.sampled_from([4, 4, 3, 5])))]
        parts.append(f"xywh={','.join(box)}")
    parts.append(draw(st.sampled_from(["L{}-L{}", "L{}-L{}", "L{}", "L{}-{}", "{}-{}", "L{}--L{}", "L{}-L{}&"])))
    fragment = "&".join(parts).format(number(), number())
    sign, after = draw(st.sampled_from(["#", "#", "", "##"])), draw(st.sampled_from(["", " ", "\n"]))
    return f"{draw(PATHS)}{sign}{fragment}{after}"


@given(st.text() | citation_like(), st.none() | st.integers(0, 4))
def test_any_text_is_a_citation_in_bounds_or_one_kb_error(text: str, pages: int | None) -> None:
    try:
        citation = Citation.parse(text, lambda _path: pages)
    except KbError as error:
        assert "\n" not in error.message and len(error.message) < 400
        return
    assert citation.path and 1 <= citation.start_line <= citation.end_line <= LINE.high
    assert text.startswith(f"{citation.path}#") and "#" not in text[len(citation.path) + 1 :]


@given(
    st.text(min_size=1, max_size=20),
    st.integers(1, int(LINE.high)),
    st.integers(0, 1000),
    st.integers(1, int(PAGE.high)),
    st.tuples(*[st.integers(0, int(BOX.high))] * 4),
)
def test_every_form_kb_prints_reads_back_to_its_lines(
    path: str, start: int, length: int, page: int, box: tuple[int, int, int, int]
) -> None:
    end = min(start + length, int(LINE.high))
    citation = Citation(path, start, end)
    region = Region(page, box, 0.9, False).fragment()
    for printed in (str(citation), f"{path}#page={page}&L{start}-L{end}", f"{path}#{region}&L{start}-L{end}"):
        assert Citation.parse(printed) == citation
        assert Citation.parse(printed, lambda _path: page) == citation  # the document has that page


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("scan.pdf#L1-L999999999999", "line = 999999999999 in 'scan.pdf#L1-L999999999999' is not a whole number"),
        ("scan.pdf#L1-L1000000001", "from 1 to 1,000,000,000"),
        ("scan.pdf#L-1-L2", "line = -1 in"),
        ("scan.pdf#L0-L2", "line = 0 in"),
        ("scan.pdf#L5-L3", "L5-L3 in 'scan.pdf#L5-L3' starts after it ends"),
        ("scan.pdf#page=0&L1-L3", "page = 0 in"),
        ("scan.pdf#page=1000001&L1-L3", "is not a whole number from 1 to 1,000,000"),
        (f"scan.pdf#L1-L{'9' * 4301}", "(4,301 digits)"),
        (f"scan.pdf#page={'1' * 5000}&L1-L3", "page = 11111111111111111111… (5,000 digits)"),
        ("scan.pdf#page=1&xywh=1,2,3,-4&L1-L3", "xywh = -4 in"),
        ("scan.pdf#L١-L٢", "not a citation"),  # (Arabic-Indic digits: int() reads them, a citation does not)
        ("scan.pdf#L1_000-L2_000", "not a citation"),
        ("#L1-L2", "not a citation"),
    ],
)
def test_a_citation_out_of_bounds_is_refused_in_one_line_naming_it(text: str, words: str) -> None:
    with pytest.raises(KbError) as refused:
        Citation.parse(text)
    assert words in refused.value.message and "\n" not in str(refused.value)


def test_a_page_the_document_does_not_have_is_refused_saying_how_many_it_has() -> None:
    one = lambda _path: 1  # noqa: E731
    with pytest.raises(KbError, match=r"page=100 is not a page of 'scan.pdf': it has 1 page \("):
        Citation.parse("scan.pdf#page=100&L1-L3", one)
    with pytest.raises(KbError, match="it has no pages"):
        Citation.parse("notes.md#page=1&L1-L3", lambda _path: 0)
    assert Citation.parse("scan.pdf#page=1&xywh=0,0,612,792&L1-L3", one) == Citation("scan.pdf", 1, 3)
    assert Citation.parse("gone.pdf#page=7&L1-L3", lambda _path: None) == Citation("gone.pdf", 1, 3)  # (unknown)


def _guarded_range(*args: int) -> range:
    """``range``, refusing to make one of more than a million numbers (a loop over a user's line span)."""
    made = range(*args)
    if len(made) > 1_000_000:
        raise AssertionError(f"a loop over {len(made):,} numbers")
    return made


def test_regions_work_from_the_lines_that_exist_not_the_span(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regions, "range", _guarded_range, raising=False)
    metadata = {"ocr": {"pages": [[1, 100, 100]], "lines": [[2, 1, 10, 10, 20, 5, 0.9], [7, 1, 10, 20, 30, 5, 0.8]]}}
    assert region_of(metadata, 1, 10**12) == Region(1, (10, 10, 30, 15), 0.85, False)
    chunk = Chunk("c", "d", 0, "x", "h", 1, 10**12)
    assert [item["line"] for item in chunk_ocr_lines(metadata, chunk, [chunk])] == [2, 7]


BOXES = st.tuples(*[st.integers(0, 2000)] * 4)


@given(st.lists(st.tuples(st.integers(1, 30), st.integers(1, 3), BOXES), max_size=12), st.integers(1, 30))
def test_a_region_never_leaves_its_page(rows: list[tuple[int, int, tuple[int, ...]]], end: int) -> None:
    sizes = {1: (612, 792), 2: (1000, 40), 3: (1, 1)}
    metadata = {
        "ocr": {
            "pages": [[page, w, h] for page, (w, h) in sizes.items()],
            "lines": [[line, page, *box, 0.9] for line, page, box in rows],
        }
    }
    for found in ocr_lines(metadata).values():
        width, height = sizes[found.page]
        x, y, w, h = found.box
        assert 0 <= x <= x + w <= width and 0 <= y <= y + h <= height
    region = region_of(metadata, 1, end)
    if region is not None:
        width, height = sizes[region.page]
        x, y, w, h = region.box
        assert 0 <= x <= x + w <= width and 0 <= y <= y + h <= height


def test_a_stored_box_past_its_page_is_cut_to_it() -> None:
    metadata = {"ocr": {"pages": [[1, 612, 792]], "lines": [[3, 1, 100, 700, 513, 93, 0.9]]}}  # 1 pt too wide
    assert region_of(metadata, 3, 3) == Region(1, (100, 700, 512, 92), 0.9, False)
    assert page_count(metadata) == 1 and page_count({"page_lines": [1, 9, 30]}) == 3 and page_count({}) == 0


class PagedPlugin:
    """A parser of ``.paged`` files: two pages (lines 1-3 and 4-5), lines 2-3 and 5 "read by OCR"."""

    @hookimpl
    def register_parsers(self, register: RegisterParser) -> None:
        register("paged", lambda ctx: self, extensions=(".paged",))

    def parse(self, text: str, path: str) -> ParsedDocument:
        ocr = {
            "engine": "scripted-ocr 1",
            "pages": [[1, 612, 792], [2, 612, 792]],
            "lines": [[2, 1, 72, 100, 300, 14, 0.9], [3, 1, 80, 120, 250, 14, 0.9], [5, 2, 72, 90, 90, 14, 0.9]],
        }
        lines = text.split("\n")
        blocks = (Block("\n".join(lines[:3]), 1, 3, ("Page 1",), verbatim=True), Block(lines[4], 5, 5, ("Page 2",)))
        return ParsedDocument(path, blocks, {"page_lines": [1, 4], "ocr": ocr})


@pytest.fixture
def paged_kb(tmp_path: Path) -> Iterator[list[str]]:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "scan.paged").write_text("Page 1\nInvoice 4711\nPaid\nPage 2\nThanks", encoding="utf-8")
    registry = load_registry(extra_plugins=[("test-indexes", TestIndexesPlugin()), ("paged", PagedPlugin())])
    config = load_config(kb_dir=tmp_path / "kb", overrides={"indexes.enabled": ["test-lexical"]}, environ={})
    with KnowledgeBase(config, registry) as kb:
        assert ingest_paths(kb, [notes]).failed == []
    reset_registry(registry)
    yield ["--kb", str(tmp_path / "kb")]
    reset_registry(None)


def test_inspect_takes_every_form_kb_prints(paged_kb: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    for printed in ("scan.paged#L1-L3", "scan.paged#page=1&L1-L3", "scan.paged#page=1&xywh=72,100,300,34&L1-L3"):
        assert main([*paged_kb, "inspect", printed, "--json"]) == 0, printed
        assert json.loads(capsys.readouterr().out)["citation"] == "scan.paged#L1-L3"


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("scan.paged#page=3&L1-L3", "page=3 is not a page of 'scan.paged': it has 2 pages"),
        ("scan.paged#L1-L999999999999", "line = 999999999999 in"),
        ("scan.paged#L-1-L2", "line = -1 in"),
    ],
)
def test_inspect_refuses_a_bad_citation_in_one_line(
    paged_kb: list[str], capsys: pytest.CaptureFixture[str], target: str, words: str
) -> None:
    assert main([*paged_kb, "inspect", target]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_lines_of_a_document_whose_parser_numbered_a_chunk_past_any_file_are_bounded(tmp_path: Path) -> None:
    store = StoreOfRecord(tmp_path / "kb")
    document = Document("huge.txt", "0" * 64, 10, "huge", "text", str(tmp_path))
    chunks = [Chunk("a", "huge.txt", 0, "one\ntwo", "h", 1, 2), Chunk("b", "huge.txt", 1, "far", "h", 10**12, 10**12)]
    store.replace_document(document, chunks)
    assert document_lines(store, "huge.txt") == ["one", "two"] + [None] * (MAX_LINES - 2)
    store.close()


def test_a_citation_out_of_bounds_is_not_reported_as_not_found(tmp_path: Path) -> None:
    """kb mcp's fetch and the library's inspect_target say what is wrong with a citation, not "no match"."""
    from kb_core.errors import NotFoundError
    from kb_core.maintenance import inspect_target

    kb = KnowledgeBase(load_config(kb_dir=tmp_path / "kb", environ={}))
    try:
        with pytest.raises(KbError, match="1,000,000,000") as caught:
            inspect_target(kb, "notes/a.md#L1-L999999999999")
        assert not isinstance(caught.value, NotFoundError)
        with pytest.raises(NotFoundError):
            inspect_target(kb, "notes/c#sharp.md")
    finally:
        kb.close()
